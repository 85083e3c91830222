import type { Message } from './types';

/**
 * What a message's available_at means for its status: a pending message waits for it (a delay or a retry
 * backoff) or is available already; a processing one is leased until then; failed and expired ones have none.
 * A pending message without one waits behind an earlier message of its ordering key (docs/http-api.md,
 * Ordering keys): it has no time of its own until that message is done.
 */
export type Availability = 'delayed' | 'available' | 'waiting' | 'leased' | 'lease-ended' | 'none';

/** `now` is the browser's clock: the list says "delayed" only while the time is still ahead of the reader. */
export function availabilityOf(message: Pick<Message, 'status' | 'available_at'>, now: number): Availability {
  if (!message.available_at) return message.status === 'pending' ? 'waiting' : 'none';
  const ahead = Date.parse(message.available_at) > now;
  if (message.status === 'pending') return ahead ? 'delayed' : 'available';
  if (message.status === 'processing') return ahead ? 'leased' : 'lease-ended';
  return 'none';
}
