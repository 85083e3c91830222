import type { Knex } from 'knex';
import { nextDeliveryAt } from '../store/deliveries/next-available.js';
import { nextAvailableAt } from '../store/messages/next-available.js';
import type { Route } from './fan-out.js';

/**
 * A token bucket refills one whole token in 1000 / rate ms; a waiter looks again no sooner than this, so a
 * fast limit does not turn into a claim per millisecond.
 */
const MIN_REFILL_WAIT_MS = 50;

export interface NextClaimableRequest {
  topic: string;
  now: number;
  until: number;
  /** The topic's throughput_limit (messages per second), if it has one. */
  ratePerSecond?: number | null;
}

/**
 * When a claim along `route` may next find a message it could not find just now (src/queue/long-poll.ts): the
 * store's earliest moment for the topic's messages, or the group's deliveries. On a throughput-limited topic a
 * message that is due already may wait for the token bucket: then the moment is when the next token comes.
 */
export async function nextClaimableAt(db: Knex, route: Route, req: NextClaimableRequest): Promise<number | undefined> {
  const includeDue = Boolean(req.ratePerSecond);
  const at =
    route.kind === 'group'
      ? await nextDeliveryAt(db, { topic: req.topic, group: route.group, now: req.now, until: req.until, includeDue })
      : await nextAvailableAt(db, { topic: req.topic, consumerGroup: route.deadLetterGroup, now: req.now, until: req.until, includeDue });
  if (at === undefined || !req.ratePerSecond || at > req.now) return at;
  return req.now + Math.max(MIN_REFILL_WAIT_MS, Math.ceil(1000 / req.ratePerSecond));
}
