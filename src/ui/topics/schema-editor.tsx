import type { UseMutationResult } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { ConfirmDialog } from '../components/confirm-dialog';
import { ApiError } from '../api/client';
import { ErrorMessage, errorText } from '../components/error-message';
import { Field } from '../components/field';
import { Timestamp } from '../components/timestamp';
import { topicKeys, useTopicSchema, type TopicSchema } from './api';
import { EditorActions } from './editor-actions';
import { ManagedNotice } from './managed';
import { useTopicRowEditor } from './row-editor';

const EXAMPLE = '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}';

/** The topic's Avro schema: every enqueued payload must match it while it exists. */
export function SchemaEditor(props: { topic: string }) {
  const { topic } = props;
  const headingId = useId();
  const schema = useTopicSchema(topic);
  const { save, remove, confirming, confirm, closeConfirm } = useTopicRowEditor({
    rowKey: topicKeys.schema(topic),
    listKey: topicKeys.schemas,
    put: (schemaJson: string): Promise<TopicSchema> => unwrap(api.PUT('/api/topic-schemas/{topic}', { params: { path: { topic } }, body: { schema_json: schemaJson } })),
    remove: () => unwrap(api.DELETE('/api/topic-schemas/{topic}', { params: { path: { topic } } })),
  });

  const stored = schema.data ?? null;
  return (
    <section className="topic-panel" aria-labelledby={headingId}>
      <h3 id={headingId}>Schema</h3>
      {schema.isPending ? (
        <p>Loading…</p>
      ) : (
        <>
          <ErrorMessage error={schema.error} />
          {stored ? (
            <p className="hint">
              Version {stored.version}, updated <Timestamp iso={stored.updated_at} />. Every payload enqueued to {topic} must be JSON that matches it.
            </p>
          ) : (
            schema.data === null && <p className="hint">No schema: payloads of {topic} are not validated.</p>
          )}
          <SchemaForm key={JSON.stringify(stored)} schema={stored} save={save} onDelete={confirm} />
        </>
      )}
      {confirming && (
        <ConfirmDialog
          title="Delete the schema"
          message={`Delete the schema of ${topic}? Later enqueues are no longer validated.`}
          actionLabel="Delete"
          pending={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate()}
          onClose={closeConfirm}
        />
      )}
    </section>
  );
}

function SchemaForm(props: { schema: TopicSchema | null; save: UseMutationResult<TopicSchema, Error, string>; onDelete: () => void }) {
  const { schema, save } = props;
  const [text, setText] = useState(() => (schema ? pretty(schema.schema_json) : ''));
  const managed = schema?.managed_by ?? null;
  // The service's 400 (not JSON, not valid Avro) is about the schema text: shown at it, not under the buttons.
  const schemaRefused = save.error instanceof ApiError && (save.error.status === 400 || save.error.status === 422);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate(text);
  };
  return (
    <form onSubmit={submit} noValidate>
      {managed && <ManagedNotice managedBy={managed} />}
      <Field label="Avro schema (JSON)" hint={`schema_json: an Avro schema as JSON, e.g. ${EXAMPLE}`} error={schemaRefused ? errorText(save.error) : null}>
        <textarea
          className="schema-text"
          value={text}
          readOnly={managed !== null}
          rows={12}
          spellCheck={false}
          autoCapitalize="off"
          autoComplete="off"
          onChange={(e) => {
            if (!save.isPending) save.reset();
            setText(e.target.value);
          }}
        />
      </Field>
      <EditorActions managed={managed !== null} exists={schema !== null} saving={save.isPending} saved={save.isSuccess ? `Saved as version ${save.data.version}.` : null} error={schemaRefused ? null : save.error} onDelete={props.onDelete} />
    </form>
  );
}

/** Stored schemas are shown indented; what the user saves is sent exactly as typed. */
function pretty(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}
