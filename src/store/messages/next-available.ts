import type { Knex } from 'knex';
import { capabilities } from '../capabilities.js';
import { withDbRetry } from '../retry.js';

export interface NextAvailableRequest {
  topic: string;
  /** Dead-letter topics only: the dead letters of this consumer group, as their claim takes them. */
  consumerGroup?: string;
  now: number;
  /** Moments after this are of no use to the caller (its wait ends first). */
  until: number;
  /**
   * Pending messages already due count too (answered as `now` or earlier): on a throughput-limited topic a
   * claim can find nothing while such messages wait for the token bucket.
   */
  includeDue?: boolean;
}

/**
 * The earliest moment, up to `until`, at which a claim of the topic may find a message it could not find just
 * now: a pending message whose delay or retry backoff ends (pending rows with visible_at > now), or a processing
 * one whose visibility timeout ends (the claim's expiry probe then returns it). Undefined when nothing becomes
 * claimable by then. A message waiting behind the head of its ordering key has a visible_at past any `until`:
 * the ack that makes it the head wakes its topic instead.
 *
 * One statement, no lock: two scalar subqueries, each the first entry of a range of messages_queue (topic,
 * status, visible_at, id), so a long wait costs at most one such read per wake-up (src/queue/long-poll.ts).
 * Through knex (not runStatement): it is no hot path, and tests count it with knex's query event.
 */
export async function nextAvailableAt(db: Knex, req: NextAvailableRequest): Promise<number | undefined> {
  const from = capabilities(db).dialect === 'mysql' ? 'messages FORCE INDEX (messages_queue)' : 'messages INDEXED BY messages_queue';
  const group = req.consumerGroup === undefined ? '' : ' AND consumer_group = ?';
  const groupValue = req.consumerGroup === undefined ? [] : [req.consumerGroup];
  const sql =
    `SELECT (SELECT visible_at FROM ${from} WHERE topic = ? AND status = 'pending' AND visible_at > ? AND visible_at <= ?` +
    ` AND (expires_at IS NULL OR expires_at > ?)${group} ORDER BY visible_at LIMIT 1) AS pending_at,` +
    ` (SELECT visible_at FROM ${from} WHERE topic = ? AND status = 'processing' AND visible_at <= ?${group} ORDER BY visible_at LIMIT 1) AS processing_at`;
  const after = req.includeDue ? -1 : req.now;
  const values = [req.topic, after, req.until, req.now, ...groupValue, req.topic, req.until, ...groupValue];
  const result = await withDbRetry(db, () => db.raw(sql, values));
  return earliest(firstRow(db, result));
}

/** knex's raw result: the rows (SQLite), or [rows, fields] (mysql2). */
export function firstRow(db: Knex, result: unknown): Record<string, unknown> | undefined {
  const rows = capabilities(db).dialect === 'mysql' ? (result as [Array<Record<string, unknown>>])[0] : (result as Array<Record<string, unknown>>);
  return rows[0];
}

export function earliest(row: Record<string, unknown> | undefined): number | undefined {
  const moments = [row?.pending_at, row?.processing_at].filter((v) => v !== null && v !== undefined).map(Number);
  return moments.length === 0 ? undefined : Math.min(...moments);
}
