import type { Knex } from 'knex';
import { capabilities } from '../capabilities.js';
import { withDbRetry } from '../retry.js';
import { earliest, firstRow } from '../messages/next-available.js';

export interface NextDeliveryRequest {
  topic: string;
  group: string;
  now: number;
  until: number;
  /** As for nextAvailableAt: due pending deliveries count too (a throughput-limited topic). */
  includeDue?: boolean;
}

/**
 * nextAvailableAt for a consumer group's deliveries: the earliest moment, up to `until`, at which a pending
 * delivery's delay or backoff ends or a processing one's visibility timeout does. Two first entries of
 * deliveries_visibility (topic, consumer_group, status, visible_at), in one statement without a lock.
 */
export async function nextDeliveryAt(db: Knex, req: NextDeliveryRequest): Promise<number | undefined> {
  const from = capabilities(db).dialect === 'mysql' ? 'deliveries FORCE INDEX (deliveries_visibility)' : 'deliveries INDEXED BY deliveries_visibility';
  const sql =
    `SELECT (SELECT visible_at FROM ${from} WHERE topic = ? AND consumer_group = ? AND status = 'pending' AND visible_at > ? AND visible_at <= ?` +
    ` AND (expires_at IS NULL OR expires_at > ?) ORDER BY visible_at LIMIT 1) AS pending_at,` +
    ` (SELECT visible_at FROM ${from} WHERE topic = ? AND consumer_group = ? AND status = 'processing' AND visible_at <= ? ORDER BY visible_at LIMIT 1) AS processing_at`;
  const after = req.includeDue ? -1 : req.now;
  const values = [req.topic, req.group, after, req.until, req.now, req.topic, req.group, req.until];
  const result = await withDbRetry(db, () => db.raw(sql, values));
  return earliest(firstRow(db, result));
}
