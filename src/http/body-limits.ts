import type { Config } from '../config/schema.js';

/** Bodies of up to 1,000 messages (EnqueueBatch) may be large; everything else stays near one payload. */
export const BATCH_BODY_LIMIT = 64 * 1024 * 1024;

/**
 * Routes that take no body fields accept only `{}` or nothing (bytes after decompression). A payload-sized
 * limit there would let anyone, without a token on the open routes (/healthz, /api/version, ...), have the
 * service decompress and parse megabytes (a few dozen bytes of brotli) for each request.
 */
export const NO_FIELDS_BODY_LIMIT = 1024;

/** What JSON escaping can make of one payload byte on the wire: a control character becomes `\u0001`. */
export const JSON_ESCAPE_FACTOR = 6;
/** Room for everything in a single-message body besides the payload: topic, key, metadata, whitespace. */
export const BODY_HEADROOM_BYTES = 64 * 1024;

/**
 * Request bodies other than batches (bytes on the wire, after decompression). A payload is counted in bytes
 * after JSON decoding (queue.max_payload_bytes, 413 beyond), while the body carries it JSON-escaped: a
 * quote or backslash takes 2 bytes, a 2-byte UTF-8 character written as `\u00e9` 3 per byte, an emoji as a
 * surrogate pair (`\ud83d\ude00`) 3 per byte, and a control character (`\u0001`) 6. So the limit is
 * 6 x max_payload_bytes + 64 KiB: any payload the payload check accepts fits, however it is escaped
 * (6,356,992 bytes with the default 1 MiB).
 */
export function singleBodyLimit(config: Pick<Config, 'queue'>): number {
  return config.queue.max_payload_bytes * JSON_ESCAPE_FACTOR + BODY_HEADROOM_BYTES;
}
