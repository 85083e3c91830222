import type { Knex } from 'knex';
import { takeTokens } from '../buckets.js';
import { capabilities } from '../capabilities.js';
import { retryTransaction } from '../retry.js';
import { ClaimLostRows } from '../messages/claim.js';
import { MESSAGE_COLUMNS, normaliseRow, type MessageRow } from '../messages/rows.js';

export interface GroupClaimRequest {
  topic: string;
  group: string;
  limit: number;
  now: number;
  visibleUntil: number;
  ratePerSecond?: number | null;
}

/**
 * MySQL/MariaDB: SELECT ... FOR UPDATE SKIP LOCKED on deliveries, ORDER BY exactly the index order of
 * `deliveries_visibility (topic, consumer_group, status, visible_at)`, whose entries end with the primary key
 * (message_id, consumer_group), so InnoDB walks the group's pending deliveries due now, from the first, and
 * locks only those it returns (the same reasoning as the topic's claim through messages_queue). Deliveries not
 * due (waiting behind their ordering key's head at BEHIND_HEAD, delayed, backed off) sort after `now` and are
 * never read: the walk stops before them. Ready deliveries keep visible_at = 0, so among them the order is
 * message_id, oldest first.
 */
export function claimDeliveriesSelectMysql(db: Knex, req: GroupClaimRequest, limit: number): Knex.QueryBuilder {
  // FORCE INDEX for the reason messages_queue needs it: MariaDB otherwise picks PRIMARY for small LIMITs.
  return db
    .from(db.raw('?? FORCE INDEX (??)', ['deliveries', 'deliveries_visibility']))
    .select('message_id')
    .where({ topic: req.topic, consumer_group: req.group, status: 'pending' })
    .andWhere('visible_at', '<=', req.now)
    .andWhere((q) => q.whereNull('expires_at').orWhere('expires_at', '>', req.now))
    .orderBy(['visible_at', 'message_id'])
    .limit(limit)
    .forUpdate()
    .skipLocked();
}

async function claimIdsMysql(trx: Knex.Transaction, req: GroupClaimRequest, limit: number): Promise<string[]> {
  const ids = (await claimDeliveriesSelectMysql(trx, req, limit)).map((r: { message_id: string }) => String(r.message_id));
  if (ids.length > 0) {
    const taken = await trx('deliveries')
      .where({ consumer_group: req.group, status: 'pending' })
      .whereIn('message_id', ids)
      .andWhere('visible_at', '<=', req.now)
      .update({ status: 'processing', visible_at: req.visibleUntil });
    if (taken < ids.length) throw new ClaimLostRows();
  }
  return ids;
}

/**
 * SQLite: one UPDATE ... WHERE message_id IN (SELECT ... ORDER BY visible_at, message_id LIMIT n) RETURNING, under
 * BEGIN IMMEDIATE; there `deliveries_visibility` ends with message_id as a column of its own.
 */
export function claimDeliveriesSqlite(req: GroupClaimRequest, limit: number): { sql: string; bindings: Array<string | number> } {
  return {
    sql: `UPDATE deliveries SET status = 'processing', visible_at = ?
     WHERE consumer_group = ? AND message_id IN (
       SELECT message_id FROM deliveries INDEXED BY deliveries_visibility
       WHERE topic = ? AND consumer_group = ? AND status = 'pending' AND visible_at <= ? AND (expires_at IS NULL OR expires_at > ?)
       ORDER BY visible_at, message_id LIMIT ?)
     RETURNING message_id`,
    bindings: [req.visibleUntil, req.group, req.topic, req.group, req.now, req.now, limit],
  };
}

async function claimIdsSqlite(trx: Knex.Transaction, req: GroupClaimRequest, limit: number): Promise<string[]> {
  const claim = claimDeliveriesSqlite(req, limit);
  const rows = (await trx.raw(claim.sql, claim.bindings)) as Array<{ message_id: string }>;
  return rows.map((r) => String(r.message_id));
}

/** What a group's delivery has of its own: its attempts, and the end of its claim (the message's is not the group's). */
const DELIVERY_OWN: readonly string[] = ['retry_count', 'last_error', 'visible_at'];

async function claimForGroup(trx: Knex.Transaction, req: GroupClaimRequest, limit: number): Promise<MessageRow[]> {
  const ids = await (capabilities(trx).skipLocked ? claimIdsMysql : claimIdsSqlite)(trx, req, limit);
  if (ids.length === 0) return [];
  // The first group to take a message ends its "fresh" state: a keyed enqueue now creates a new message
  // instead of overwriting one that some group has already seen, as for a plain message being processed.
  await trx('messages').whereIn('id', ids).andWhere({ status: 'pending' }).update({ status: 'processing' });
  const rows = await trx('messages as m')
    .join('deliveries as d', (j) => j.on('d.message_id', '=', 'm.id').andOn('d.consumer_group', '=', trx.raw('?', [req.group])))
    .select([...MESSAGE_COLUMNS.filter((c) => !DELIVERY_OWN.includes(c)).map((c) => `m.${c}`), ...DELIVERY_OWN.map((c) => `d.${c}`)])
    .whereIn('m.id', ids)
    .orderBy('m.id');
  return rows.map(normaliseRow);
}

/**
 * Claims up to `limit` of a group's pending deliveries for one visibility period, oldest first. Retried whole;
 * a lost commit answer delays the deliveries it took until their visibility timeout (see claimMessages).
 */
export async function claimDeliveries(db: Knex, req: GroupClaimRequest): Promise<MessageRow[]> {
  return retryTransaction(db, async (trx) => {
    if (!req.ratePerSecond) return claimForGroup(trx, req, req.limit);
    return takeTokens(trx, req.topic, req.ratePerSecond, req.now, req.limit, (granted) => claimForGroup(trx, req, granted));
  });
}
