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
const isMetadataError = (error: unknown) => error instanceof ApiError && (error.status === 413 || error.status === 400) && error.message.startsWith('metadata');
/**
 * Answers about the topic: the 422 of queue.require_topic_registration ("topic \"x\" is not registered ..."),
 * a name the service refuses (400 "topic ..."), a full topic (429, max_depth) and a missing write grant (403).
 */
const isTopicError = (error: unknown) =>
  error instanceof ApiError &&
  ((error.status === 422 && /^topic ".*" is not registered/s.test(error.message)) || (error.status === 400 && error.message.startsWith('topic ')) || error.status === 429 || error.status === 403);
/** The 400s about the key ("key must be ..."). */
const isKeyError = (error: unknown) => error instanceof ApiError && error.status === 400 && error.message.startsWith('key ');
/** Answers about the payload itself (schema violation, too large) belong next to the payload editor. */
const isPayloadError = (error: unknown) =>
  error instanceof ApiError && ((error.status === 422 || error.status === 413) || (error.status === 400 && error.message.startsWith('payload'))) && !isMetadataError(error) && !isTopicError(error);
/**
 * The 400s about the delay: out of range or over queue.max_delay_seconds ("delay_seconds must be ..."), and
 * a delay reaching the message's TTL ("the delay (60 s) reaches the message's TTL ...").
 */
const isDelayError = (error: unknown) => error instanceof ApiError && error.status === 400 && /^(delay_seconds |the delay )/.test(error.message);
/**
 * The 400s about the ordering key ("ordering_key must be 1-255 bytes of UTF-8"). Its length is left to the
 * service, which counts bytes, not characters: the one rule, stated once, for whatever is typed or pasted.
 */
const isOrderingKeyError = (error: unknown) => error instanceof ApiError && error.status === 400 && error.message.startsWith('ordering_key ');
/** Text a number input holds but cannot read ("5e"): its value is "", which would enqueue without the delay. */
const UNREADABLE_DELAY = 'Not a number: enter a whole number of seconds, or leave the field empty.';

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
  const [orderingKey, setOrderingKey] = useState('');
  const [metadataText, setMetadataText] = useState('');
  const [payload, setPayload] = useState('');
  const [delay, setDelay] = useState('');
  const [delayUnreadable, setDelayUnreadable] = useState(false);
  const [checked, setChecked] = useState(false);
  const queryClient = useQueryClient();

  const metadata = parseMetadata(metadataText);
  // Shown as soon as the key is too long, a pasted one included: nothing is cut off and sent under another key.
  const keyError = keyLengthError(key);
  const topicMissing = checked && topic.trim() === '' ? 'Enter the topic to enqueue to.' : null;
  const payloadMissing = checked && payload === '' ? 'Enter a payload: the service takes a non-empty text.' : null;

  const enqueue = useMutation({
    mutationFn: (body: { topic: string; payload: string; key?: string; ordering_key?: string; metadata?: Record<string, string>; delay_seconds?: number }) => unwrap(api.POST('/api/messages', { body })),
    onSuccess: () => Promise.all([queryClient.invalidateQueries({ queryKey: ['messages'] }), queryClient.invalidateQueries({ queryKey: ['stats'] }), queryClient.invalidateQueries({ queryKey: ['topics'] })]),
  });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setChecked(true);
    const delayInput = (event.currentTarget as HTMLFormElement).elements.namedItem('delay_seconds');
    const unreadable = delayInput instanceof HTMLInputElement && delayInput.validity.badInput;
    setDelayUnreadable(unreadable);
    if (topic.trim() === '' || payload === '' || !metadata.ok || keyError !== null || unreadable) return;
    // Sent as typed (1.5, -1 included): the service judges it, and its 400 is shown at the field.
    const delaySeconds = delay.trim() === '' ? undefined : Number(delay);
    enqueue.mutate({
      topic: topic.trim(),
      payload,
      key: key === '' ? undefined : key,
      // Not trimmed: " a" and "a" are two keys to the service, and the form sends what it shows.
      ordering_key: orderingKey === '' ? undefined : orderingKey,
      metadata: metadata.value,
      delay_seconds: delaySeconds,
    });
  };

  const payloadError = payloadMissing ?? (isPayloadError(enqueue.error) ? errorText(enqueue.error) : null);
  const metadataError = metadata.ok ? (isMetadataError(enqueue.error) ? errorText(enqueue.error) : null) : metadata.error;
  const topicError = topicMissing ?? (isTopicError(enqueue.error) ? errorText(enqueue.error) : null);
  const delayError = delayUnreadable ? UNREADABLE_DELAY : isDelayError(enqueue.error) ? errorText(enqueue.error) : null;
  const orderingKeyError = isOrderingKeyError(enqueue.error) ? errorText(enqueue.error) : null;
  const keyFieldError = keyError ?? (isKeyError(enqueue.error) ? errorText(enqueue.error) : null);
  const fieldErrors = [isPayloadError, isMetadataError, isTopicError, isDelayError, isOrderingKeyError, isKeyError];
  const otherError = enqueue.error && !fieldErrors.some((isFieldError) => isFieldError(enqueue.error)) ? enqueue.error : null;
  const sentTopic = enqueue.variables?.topic ?? '';
  const sentDelay = enqueue.variables?.delay_seconds ?? 0;

  return (
    <section className="enqueue-screen">
      <h1>Enqueue</h1>
      <form onSubmit={submit} noValidate className="enqueue-form">
        <Field label="Topic" error={topicError}>
          <TopicInput value={topic} onChange={setTopic} required />
        </Field>
        {/* No maxLength: it counts UTF-16 units, not the service's characters, and silently cuts a pasted key. */}
        <Field label="Key (optional)" hint="A key makes the enqueue an upsert of the pending message holding it. At most 255 characters." error={keyFieldError}>
          <input value={key} onChange={(e) => setKey(e.target.value)} autoComplete="off" spellCheck={false} />
        </Field>
        <Field
          label="Ordering key (optional)"
          hint="Messages with the same ordering key are delivered one at a time, in the order they were enqueued: each waits until the one before it is acked, dead-lettered, failed or expired. 1-255 bytes of UTF-8."
          error={orderingKeyError}
        >
          <input value={orderingKey} onChange={(e) => setOrderingKey(e.target.value)} autoComplete="off" spellCheck={false} />
        </Field>
        <Field label="Metadata (optional)" hint='A JSON object of text values, for example {"source": "shop"}.' error={metadataError}>
          <textarea className="metadata-editor" value={metadataText} onChange={(e) => setMetadataText(e.target.value)} spellCheck={false} rows={3} />
        </Field>
        <Field
          label="Delay (seconds, optional)"
          hint="The message is stored at once, but no consumer gets it before this many seconds have passed. Empty: the topic's delivery_delay_seconds, if it has one; 0: at once."
          error={delayError}
        >
          <input
            type="number"
            inputMode="numeric"
            name="delay_seconds"
            min={0}
            max={604800}
            step={1}
            value={delay}
            onChange={(e) => setDelay(e.target.value)}
            // onInput, not onChange: from "5e" to "5e+" the value stays "" and React fires no onChange.
            onInput={() => setDelayUnreadable(false)}
          />
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
            Enqueued message <span className="mono">{enqueue.data.id}</span> to {sentTopic}
            {sentDelay > 0 ? `; no consumer gets it for ${sentDelay} s.` : '.'}{' '}
            <a href={href('messages', { topic: sentTopic })}>Show the messages of {sentTopic}</a>
          </p>
        )}
      </div>
    </section>
  );
}
