import type { AttemptOutcome, AttemptResult, AttemptRules } from '../store/messages/settle.js';
import { retryAt, type Backoff } from './backoff.js';
import type { MessageRow } from '../store/messages/rows.js';
import type { AttemptsObserver } from './attempts-observer.js';
import type { QueueMetrics } from './metrics-port.js';
import type { TopicSignals } from './topic-signals.js';
import { isDlqTopic } from './topic-names.js';

/** last_error of a delivery whose visibility timeout passed before its ack. */
export const VISIBILITY_EXPIRED = 'visibility timeout expired';

export interface AttemptPolicy {
  /** queue.dlq_threshold: delivery attempts before dead-lettering; 0 disables. */
  dlqThreshold: number;
  /** The topic's max_retries when configured. */
  topicMaxRetries: (topic: string) => number | null | undefined;
  /** The topic's retry backoff: its settings, else queue.retry_backoff_seconds and _max_seconds. */
  backoffOf: (topic: string) => Backoff;
}

/**
 * For a nack and for a visibility timeout alike (docs/http-api.md, Delivery): attempts = retry_count + 1;
 * 1) threshold > 0 and attempts >= threshold: dead-letter; 2) attempts < the message's max_retries: retry;
 * 3) otherwise failed. A dead-letter topic never dead-letters again.
 */
export function decideAttempt(policy: AttemptPolicy, row: MessageRow): AttemptOutcome {
  const attempts = row.retry_count + 1;
  if (!isDlqTopic(row.topic)) {
    const threshold = policy.topicMaxRetries(row.topic) ?? policy.dlqThreshold;
    if (threshold > 0 && attempts >= threshold) return 'dlq';
  }
  return attempts < row.max_retries ? 'retry' : 'failed';
}

/**
 * The rules of failed attempts at `now`: decideAttempt, and a retry claimable again after the topic's backoff
 * for its attempt count, or at `delayMs` after now when the caller chose the wait (a nack's delay_seconds).
 */
export function attemptRules(policy: AttemptPolicy, now: number, delayMs?: number): AttemptRules {
  return {
    decide: (row) => decideAttempt(policy, row),
    retryAt: (row) => (delayMs === undefined ? retryAt(policy.backoffOf(row.topic), row.retry_count + 1, now) : delayMs > 0 ? now + delayMs : 0),
  };
}

/**
 * What a failed attempt (a nack, or a visibility timeout noticed by a dequeue or the expiry reaper) tells the
 * rest of the instance: a message superseded by a newer one of its key is counted, and the consumers waiting on
 * the topic it went back to, or on its dead-letter topic, are woken (none in a one-shot `conveyor reap`).
 */
export function announceAttempt(result: AttemptResult, metrics: QueueMetrics, signals?: TopicSignals): void {
  if (result.outcome === 'superseded' || result.displaced) metrics.message('superseded', result.topic);
  // Any outcome may have given a new head to the message's ordering key: consumers of the topic look again.
  signals?.signal(result.topic);
  if (result.outcome === 'dlq') signals?.signal(`${result.topic}.dlq`);
}

/** A visibility timeout that passed: a redelivery, then whatever the attempt decided. */
export function announceRedelivery(result: AttemptResult, metrics: QueueMetrics, signals?: TopicSignals, observer?: AttemptsObserver): void {
  metrics.message('redelivered', result.topic);
  announceAttempt(result, metrics, signals);
  observer?.expired(result);
}

/** last_error keeps at most 64 KiB of UTF-8, the capacity of its MySQL TEXT column, on both engines alike. */
export const MAX_LAST_ERROR_BYTES = 65_535;

/** Cuts an over-long nack error at a character boundary: a nack must not fail because its text is long. */
export function boundedLastError(error: string): string {
  if (error.length * 3 <= MAX_LAST_ERROR_BYTES) return error;
  const bytes = Buffer.from(error, 'utf8');
  if (bytes.length <= MAX_LAST_ERROR_BYTES) return error;
  let end = MAX_LAST_ERROR_BYTES;
  // A UTF-8 continuation byte (10xxxxxx) at the cut means a character straddles it: cut before that character.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
