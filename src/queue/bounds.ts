/**
 * The largest values a setting or a request may take because of where it is stored or what it computes, shared
 * by the domain, the HTTP API, gRPC, the controller's resources and the configuration file; with the texts that
 * refuse a request outside them, so that every transport answers alike.
 */

/** MySQL's signed INT: the column of a message's and a topic's max_retries. */
export const MAX_INT32 = 2_147_483_647;

/**
 * Durations that date messages (a TTL, a replay window) stop at 100 years: now plus or minus one stays far
 * inside what a JavaScript date can hold (about 275,000 years either side of 1970), so every stored time can
 * be shown.
 */
export const MAX_DATA_SECONDS = 36_500 * 86_400;

/**
 * The largest payload, in bytes, on every engine: MySQL's MEDIUMBLOB column holds 16 MiB - 1 (and MariaDB
 * stored a longer one cut to its length modulo 2^24, without an error). SQLite could hold more; one limit for
 * all keeps a laptop from accepting what the production database cannot store.
 */
export const MAX_PAYLOAD_COLUMN = 16_777_215;

/** The most messages one dequeue claims, and the most ids one batch ack settles. */
export const MAX_DEQUEUE_COUNT = 1000;

/** The longest visibility timeout, in seconds (12 h): a dequeue's, a Subscribe stream's and queue.visibility_timeout. */
export const MAX_VISIBILITY_SECONDS = 43_200;

/** The refusal of a dequeue's count outside 1 to MAX_DEQUEUE_COUNT. */
export const DEQUEUE_COUNT_MESSAGE = `count must be an integer from 1 to ${MAX_DEQUEUE_COUNT}`;
/** The refusal of a visibility_timeout_seconds outside 1 to MAX_VISIBILITY_SECONDS. */
export const VISIBILITY_TIMEOUT_MESSAGE = `visibility_timeout_seconds must be an integer from 1 to ${MAX_VISIBILITY_SECONDS}`;
/** The refusal of a batch ack of more than MAX_DEQUEUE_COUNT ids. */
export const ACK_BATCH_IDS_MESSAGE = `ids must hold at most ${MAX_DEQUEUE_COUNT} ids`;
/**
 * The longest a message can be kept from consumers by a delay (7 days): an enqueue's `delay_seconds` and
 * `deliver_at`, a nack's `delay_seconds`, a topic's delivery delay and retry backoff. queue.max_delay_seconds
 * may set a lower cap.
 */
export const MAX_DELAY_SECONDS = 604_800;
/** The refusal of a delay outside 0 to the cap (queue.max_delay_seconds, at most MAX_DELAY_SECONDS). */
export const delayMessage = (cap: number) => `delay_seconds must be an integer from 0 to ${cap}`;
/** The refusal of a delay outside 0 to MAX_DELAY_SECONDS, whatever the configured cap: what the HTTP schemas say. */
export const DELAY_SECONDS_MESSAGE = delayMessage(MAX_DELAY_SECONDS);

/** The refusal of a visibility change outside 0 to MAX_VISIBILITY_SECONDS (0 gives the message back at once). */
export const VISIBILITY_CHANGE_MESSAGE = `visibility_timeout_seconds must be an integer from 0 to ${MAX_VISIBILITY_SECONDS}`;

/** The longest a dequeue may wait for a message (long polling), in seconds: as SQS's ReceiveMessage. */
export const MAX_WAIT_SECONDS = 20;
/** The refusal of a dequeue's wait_seconds outside 0 to MAX_WAIT_SECONDS. */
export const WAIT_SECONDS_MESSAGE = `wait_seconds must be an integer from 0 to ${MAX_WAIT_SECONDS}`;
