import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type FormEvent } from 'react';
import { api, ApiError, unwrap } from '../api/client';
import { ErrorMessage, errorText } from '../components/error-message';
import { Field } from '../components/field';
import { TopicInput } from '../components/topic-input';
import { parseMetadata } from '../messages/metadata';
import { SchemaPanel } from '../messages/schema-panel';
import { href, useRoute } from '../router';

/**
 * The service answers 413 both for a payload over queue.max_payload_bytes and for metadata over 64 KiB as
 * JSON; only its message tells them apart ("metadata exceeds 65536 bytes (as JSON)").
 */
const isMetadataError = (error: unknown) => error instanceof ApiError && error.status === 413 && error.message.startsWith('metadata');
/** The 422 of queue.require_topic_registration ("topic \"x\" is not registered ...") is about the topic. */
const isTopicError = (error: unknown) => error instanceof ApiError && error.status === 422 && /^topic ".*" is not registered/s.test(error.message);
/** Answers about the payload itself (schema violation, too large) belong next to the payload editor. */
const isPayloadError = (error: unknown) => error instanceof ApiError && (error.status === 422 || error.status === 413) && !isMetadataError(error) && !isTopicError(error);

/** As the service counts keys (src/queue/message-keys.ts): Unicode code points, so an emoji is one, not two. */
const MAX_KEY_CHARACTERS = 255;
function keyLengthError(key: string): string | null {
  const length = [...key].length;
  return length > MAX_KEY_CHARACTERS ? `The key is ${length} characters long; the service takes at most ${MAX_KEY_CHARACTERS}.` : null;
}

export function EnqueueScreen() {
  const { params } = useRoute();
  const routeTopic = params.get('topic') ?? '';
  const [topic, setTopic] = useState(routeTopic);
  useEffect(() => setTopic(routeTopic), [routeTopic]);
  const [key, setKey] = useState('');
  const [metadataText, setMetadataText] = useState('');
  const [payload, setPayload] = useState('');
  const [checked, setChecked] = useState(false);
  const queryClient = useQueryClient();

  const metadata = parseMetadata(metadataText);
  // Shown as soon as the key is too long, a pasted one included: nothing is cut off and sent under another key.
  const keyError = keyLengthError(key);
  const topicMissing = checked && topic.trim() === '' ? 'Enter the topic to enqueue to.' : null;
  const payloadMissing = checked && payload === '' ? 'Enter a payload: the service takes a non-empty text.' : null;

  const enqueue = useMutation({
    mutationFn: (body: { topic: string; payload: string; key?: string; metadata?: Record<string, string> }) => unwrap(api.POST('/api/messages', { body })),
    onSuccess: () => Promise.all([queryClient.invalidateQueries({ queryKey: ['messages'] }), queryClient.invalidateQueries({ queryKey: ['stats'] })]),
  });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setChecked(true);
    if (topic.trim() === '' || payload === '' || !metadata.ok || keyError !== null) return;
    enqueue.mutate({ topic: topic.trim(), payload, key: key === '' ? undefined : key, metadata: metadata.value });
  };

  const payloadError = payloadMissing ?? (isPayloadError(enqueue.error) ? errorText(enqueue.error) : null);
  const metadataError = metadata.ok ? (isMetadataError(enqueue.error) ? errorText(enqueue.error) : null) : metadata.error;
  const topicError = topicMissing ?? (isTopicError(enqueue.error) ? errorText(enqueue.error) : null);
  const otherError = enqueue.error && !isPayloadError(enqueue.error) && !isMetadataError(enqueue.error) && !isTopicError(enqueue.error) ? enqueue.error : null;
  const sentTopic = enqueue.variables?.topic ?? '';

  return (
    <section className="enqueue-screen">
      <h1>Enqueue</h1>
      <form onSubmit={submit} noValidate className="enqueue-form">
        <Field label="Topic" error={topicError}>
          <TopicInput value={topic} onChange={setTopic} required />
        </Field>
        {/* No maxLength: it counts UTF-16 units, not the service's characters, and silently cuts a pasted key. */}
        <Field label="Key (optional)" hint="A key makes the enqueue an upsert of the pending message holding it. At most 255 characters." error={keyError}>
          <input value={key} onChange={(e) => setKey(e.target.value)} autoComplete="off" spellCheck={false} />
        </Field>
        <Field label="Metadata (optional)" hint='A JSON object of text values, for example {"source": "shop"}.' error={metadataError}>
          <textarea className="metadata-editor" value={metadataText} onChange={(e) => setMetadataText(e.target.value)} spellCheck={false} rows={3} />
        </Field>
        <SchemaPanel topic={topic} onInsert={setPayload} />
        <Field label="Payload" error={payloadError}>
          <textarea className="payload-editor" value={payload} onChange={(e) => setPayload(e.target.value)} spellCheck={false} rows={12} />
        </Field>
        <ErrorMessage error={otherError} />
        <div className="form-actions">
          <button type="submit" className="primary" disabled={enqueue.isPending}>
            Enqueue
          </button>
        </div>
      </form>
      <div role="status" className="notice">
        {enqueue.data && (
          <p>
            Enqueued message <span className="mono">{enqueue.data.id}</span> to {sentTopic}.{' '}
            <a href={href('messages', { topic: sentTopic })}>Show the messages of {sentTopic}</a>
          </p>
        )}
      </div>
    </section>
  );
}
