import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { api, ApiError, unwrap } from '../api/client';
import type { components } from '../api/openapi';
import { avroExample, type AvroExample } from '../avro-example';
import { errorText } from '../components/error-message';

type TopicSchema = components['schemas']['TopicSchema'];

const TOPIC_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** The value once it has stopped changing for `ms`: no schema lookup per keystroke of a topic name. */
function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

function prettySchema(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** The topic's Avro schema (`GET /api/topic-schemas/:topic`, 404 = none) and a generated valid example. */
export function SchemaPanel(props: { topic: string; onInsert: (payload: string) => void }) {
  const topic = useSettled(props.topic.trim(), 300);
  const valid = TOPIC_NAME.test(topic) && !topic.endsWith('.dlq');
  const schema = useQuery({
    queryKey: ['enqueue-schema', topic],
    enabled: valid,
    queryFn: async (): Promise<TopicSchema | null> => {
      try {
        return await unwrap(api.GET('/api/topic-schemas/{topic}', { params: { path: { topic } } }));
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) return null;
        throw err;
      }
    },
  });
  const [example, setExample] = useState<{ result?: AvroExample; error?: string } | null>(null);
  useEffect(() => setExample(null), [topic]);

  if (!valid || schema.isPending) return null;
  if (schema.error) {
    // A producer without an admin grant on the topic may not read its schema; enqueueing still works.
    return <p className="hint">The topic&apos;s schema could not be read ({errorText(schema.error)}); the service still checks payloads against it.</p>;
  }
  if (!schema.data) return <p className="hint">No Avro schema on this topic: any payload is accepted.</p>;

  const insert = () => {
    try {
      const result = avroExample(schema.data!.schema_json);
      setExample({ result });
      props.onInsert(result.json);
    } catch (err) {
      setExample({ error: `No example could be made: ${(err as Error).message}` });
    }
  };
  return (
    <section className="schema-panel" aria-labelledby="schema-panel-title">
      <div className="schema-heading">
        <h2 id="schema-panel-title">
          Avro schema <span className="hint">(version {schema.data.version})</span>
        </h2>
        <button type="button" onClick={insert}>
          Insert example
        </button>
      </div>
      <p className="hint">Payloads must be JSON that this schema accepts; the service refuses anything else with 422.</p>
      {/* Closed: opened, a schema of any size pushes the payload and the result below the fold. */}
      <details>
        <summary>Show the schema</summary>
        <pre className="schema" tabIndex={0}>
          {prettySchema(schema.data.schema_json)}
        </pre>
      </details>
      {example?.error && (
        <p className="error" role="alert">
          {example.error}
        </p>
      )}
      {example?.result?.notes.map((note) => (
        <p key={note} className="warning">
          {note}
        </p>
      ))}
    </section>
  );
}
