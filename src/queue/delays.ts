import { delayMessage } from './bounds.js';
import { invalid } from './errors.js';
import { parseRfc3339 } from './rfc3339.js';

/** What an enqueue asks for its message's availability: at most one of the two. */
export interface DelayRequest {
  delaySeconds?: unknown;
  /** RFC 3339 text (HTTP) or epoch ms (gRPC's Timestamp). */
  deliverAt?: string | number | null;
}

export interface DelayPolicy {
  /** queue.max_delay_seconds. */
  maxSeconds: number;
  /** The topic's delivery_delay_seconds, when it has one. */
  topicDelaySeconds: number | null | undefined;
}

/**
 * When a new message may first be claimed: epoch ms, or 0 for at once (stored as visible_at, which a pending
 * row's claim compares with the clock). An explicit request wins over the topic's default, `delay_seconds: 0`
 * included. A `deliver_at` in the past means at once. A delay that reaches the message's expiry would store
 * a message no consumer can ever get, so it is refused rather than kept to expire unseen.
 */
export function availableAtOf(request: DelayRequest, policy: DelayPolicy, now: number, expiresAt: number | null): number {
  const { delaySeconds, deliverAt } = request;
  if (delaySeconds != null && deliverAt != null) throw invalid('delay_seconds and deliver_at cannot be used together');
  let delayMs: number;
  if (delaySeconds != null) {
    if (typeof delaySeconds !== 'number' || !Number.isInteger(delaySeconds) || delaySeconds < 0 || delaySeconds > policy.maxSeconds) {
      throw invalid(delayMessage(policy.maxSeconds));
    }
    delayMs = delaySeconds * 1000;
  } else if (deliverAt != null) {
    const at = typeof deliverAt === 'number' ? deliverAt : parseRfc3339(deliverAt);
    if (at === null || !Number.isFinite(at)) throw invalid('deliver_at must be an RFC 3339 time with a time zone, such as 2026-01-02T15:04:05Z');
    delayMs = Math.max(0, at - now);
    if (delayMs > policy.maxSeconds * 1000) throw invalid(`deliver_at must be at most ${policy.maxSeconds} seconds ahead (queue.max_delay_seconds)`);
  } else {
    // A topic default set before queue.max_delay_seconds was lowered counts as the cap.
    delayMs = Math.min(policy.topicDelaySeconds ?? 0, policy.maxSeconds) * 1000;
  }
  if (delayMs === 0) return 0;
  if (expiresAt !== null && now + delayMs >= expiresAt) {
    throw invalid(`the delay (${delayMs / 1000} s) reaches the message's TTL (${(expiresAt - now) / 1000} s): it would expire before any consumer could get it`);
  }
  return now + delayMs;
}
