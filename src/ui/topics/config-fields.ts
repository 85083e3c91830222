import { formatAge } from '../format';
import type { TopicConfig, TopicConfigBody, TopicConfigDefaults } from './api';

export type IntegerField =
  | 'max_retries'
  | 'message_ttl_seconds'
  | 'max_depth'
  | 'throughput_limit'
  | 'replay_window_seconds'
  | 'delivery_delay_seconds'
  | 'retry_backoff_seconds'
  | 'retry_backoff_max_seconds'
  | 'visibility_timeout_seconds'
  | 'receive_wait_seconds';

/** Seconds as the hints say them: "3600 (1.0 h)". */
const secondsText = (n: number) => (n < 60 ? `${n}` : `${n} (${formatAge(n)})`);

/**
 * What an empty field means: the service's own value (`defaults` of GET /api/topic-configs, its queue.*
 * settings) when it has one, named with the setting it comes from.
 */
export function emptyMeaning(name: IntegerField, defaults: TopicConfigDefaults | undefined): string | null {
  const setting = SERVER_DEFAULTS[name];
  if (!setting) return null;
  const value = defaults?.[setting.field];
  if (value === undefined) return `Empty: the server default (${setting.config}).`;
  const text = setting.field === 'max_retries' ? String(value) : value === 0 && setting.field === 'message_ttl_seconds' ? '0, never' : secondsText(value);
  return `Empty: the server default, ${text} (${setting.config}).`;
}

const SERVER_DEFAULTS: Partial<Record<IntegerField, { field: keyof TopicConfigDefaults; config: string }>> = {
  max_retries: { field: 'max_retries', config: 'queue.max_retries' },
  message_ttl_seconds: { field: 'message_ttl_seconds', config: 'queue.message_ttl' },
  retry_backoff_seconds: { field: 'retry_backoff_seconds', config: 'queue.retry_backoff_seconds' },
  retry_backoff_max_seconds: { field: 'retry_backoff_max_seconds', config: 'queue.retry_backoff_max_seconds' },
  visibility_timeout_seconds: { field: 'visibility_timeout_seconds', config: 'queue.visibility_timeout' },
};

/**
 * Every integer setting of PUT /api/topic-configs/:topic, named in the hint exactly as the API names it. The
 * settings with a server default say what it is in emptyMeaning; the others say here what empty means.
 */
export const INTEGER_FIELDS: ReadonlyArray<{ name: IntegerField; label: string; hint: string }> = [
  {
    name: 'max_retries',
    label: 'Max retries',
    hint: 'max_retries: delivery attempts before a message moves to the dead-letter topic <topic>.dlq; 0 turns retries and dead-lettering off.',
  },
  {
    name: 'message_ttl_seconds',
    label: 'Message TTL (seconds)',
    hint: 'message_ttl_seconds: how long a message may wait before it expires; 0: never.',
  },
  {
    name: 'max_depth',
    label: 'Max depth',
    hint: 'max_depth: the most pending messages the topic holds; enqueue beyond it answers 429. At least 1. Empty: no cap.',
  },
  {
    name: 'throughput_limit',
    label: 'Throughput limit (messages per second)',
    hint: 'throughput_limit: the most messages dequeued per second, shared by every consumer and instance. 0 or empty: unlimited.',
  },
  {
    name: 'replay_window_seconds',
    label: 'Replay window (seconds)',
    hint: 'replay_window_seconds: how far back a replay may start; the archive reaper deletes older log entries. Empty: no window, the whole log.',
  },
  {
    name: 'delivery_delay_seconds',
    label: 'Delivery delay (seconds)',
    hint: 'delivery_delay_seconds: seconds a new message waits before any consumer may get it, unless its enqueue names a delay; at most queue.max_delay_seconds. Empty: none.',
  },
  {
    name: 'retry_backoff_seconds',
    label: 'Retry backoff (seconds)',
    hint: 'retry_backoff_seconds: after the n-th failed attempt (a nack, or a lease that ran out) the retry waits this × 2^(n-1) seconds, ±10 %, up to the cap below; 0: retry at once.',
  },
  {
    name: 'retry_backoff_max_seconds',
    label: 'Retry backoff cap (seconds)',
    hint: 'retry_backoff_max_seconds: the longest a retry waits, however many attempts failed.',
  },
  {
    name: 'visibility_timeout_seconds',
    label: 'Visibility timeout (seconds)',
    hint: 'visibility_timeout_seconds: how long a dequeue that names no visibility timeout holds its messages before they come back; 1 to 43200.',
  },
  {
    name: 'receive_wait_seconds',
    label: 'SQS receive wait (seconds)',
    hint: 'receive_wait_seconds: how long an SQS ReceiveMessage that names no WaitTimeSeconds waits for a message; 0 to 20. Empty: 0, no wait.',
  },
];

/** The form's state: the inputs' text (empty = null, the server default) and the checkbox. */
// content_based_deduplication is kept as loaded (the SQS API sets it): a save must not reset it.
export type ConfigDraft = Record<IntegerField, string> & { replayable: boolean; content_based_deduplication: boolean | null };

export function draftOf(config: TopicConfig | null): ConfigDraft {
  const text = (n: number | null | undefined) => (n === null || n === undefined ? '' : String(n));
  return {
    max_retries: text(config?.max_retries),
    message_ttl_seconds: text(config?.message_ttl_seconds),
    max_depth: text(config?.max_depth),
    throughput_limit: text(config?.throughput_limit),
    replayable: config?.replayable ?? false,
    replay_window_seconds: text(config?.replay_window_seconds),
    delivery_delay_seconds: text(config?.delivery_delay_seconds),
    retry_backoff_seconds: text(config?.retry_backoff_seconds),
    retry_backoff_max_seconds: text(config?.retry_backoff_max_seconds),
    visibility_timeout_seconds: text(config?.visibility_timeout_seconds),
    receive_wait_seconds: text(config?.receive_wait_seconds),
    content_based_deduplication: config?.content_based_deduplication ?? null,
  };
}

/** Sent as typed: the service judges the values (negative, not an integer, ...) and its 400 is shown inline. */
export function bodyOf(draft: ConfigDraft): TopicConfigBody {
  const number = (text: string) => (text.trim() === '' ? null : Number(text));
  return {
    max_retries: number(draft.max_retries),
    message_ttl_seconds: number(draft.message_ttl_seconds),
    max_depth: number(draft.max_depth),
    throughput_limit: number(draft.throughput_limit),
    replayable: draft.replayable,
    replay_window_seconds: number(draft.replay_window_seconds),
    delivery_delay_seconds: number(draft.delivery_delay_seconds),
    retry_backoff_seconds: number(draft.retry_backoff_seconds),
    retry_backoff_max_seconds: number(draft.retry_backoff_max_seconds),
    visibility_timeout_seconds: number(draft.visibility_timeout_seconds),
    receive_wait_seconds: number(draft.receive_wait_seconds),
    content_based_deduplication: draft.content_based_deduplication,
  };
}

/**
 * The number fields holding text the browser cannot read as a number (`5e`, `1,000`): such an input's value
 * is "", which bodyOf would send as null, the server default, silently replacing the stored setting. Only
 * the element knows (validity.badInput), so the form is asked, by the inputs' names.
 */
export function unreadableFields(form: HTMLFormElement): Set<IntegerField> {
  const bad = new Set<IntegerField>();
  for (const { name } of INTEGER_FIELDS) {
    const input = form.elements.namedItem(name);
    if (input instanceof HTMLInputElement && input.validity.badInput) bad.add(name);
  }
  return bad;
}
