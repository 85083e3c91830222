import type { Knex } from 'knex';
import { takeTokens } from '../buckets.js';
import { capabilities, capabilitiesOf } from '../capabilities.js';
import { retryTransaction, withDbRetry } from '../retry.js';
import { ClaimLostRows, SIGNAL_LOST_ROWS } from '../messages/claim.js';
import { runInTwoTrips } from '../statement.js';
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

/** The claimed deliveries' messages, with the group's own attempts and claim in place of the message's. */
function claimedRows(db: Knex, group: string, ids: string[]): Knex.QueryBuilder {
  return db('messages as m')
    .join('deliveries as d', (j) => j.on('d.message_id', '=', 'm.id').andOn('d.consumer_group', '=', db.raw('?', [group])))
    .select([...MESSAGE_COLUMNS.filter((c) => !DELIVERY_OWN.includes(c)).map((c) => `m.${c}`), ...DELIVERY_OWN.map((c) => `d.${c}`)])
    .whereIn('m.id', ids)
    .orderBy('m.id');
}

/**
 * The first group to take a message ends its "fresh" state: a keyed enqueue now creates a new message instead
 * of overwriting one that some group has already seen, as for a plain message being processed.
 */
const MARK_MESSAGES_TAKEN = (ids: string[]) => ({
  sql: `UPDATE messages SET status = 'processing' WHERE id IN (${ids.map(() => '?').join(', ')}) AND status = 'pending'`,
  bindings: ids,
});

async function claimForGroup(trx: Knex.Transaction, req: GroupClaimRequest, limit: number): Promise<MessageRow[]> {
  const ids = await (capabilities(trx).skipLocked ? claimIdsMysql : claimIdsSqlite)(trx, req, limit);
  if (ids.length === 0) return [];
  const mark = MARK_MESSAGES_TAKEN(ids);
  await trx.raw(mark.sql, mark.bindings);
  return (await claimedRows(trx, req.group, ids)).map(normaliseRow);
}

/**
 * MySQL/MariaDB: the claim as a transaction of two round trips instead of six, as a topic's claim
 * (claimMysqlInTwoTrips): the SELECT goes with START TRANSACTION; the UPDATE of the deliveries, the mark of
 * their messages and the read of what was claimed go with COMMIT. MariaDB's UPDATE runs in a compound statement
 * that fails the transaction, before its COMMIT, when it took fewer rows than the SELECT locked (ClaimLostRows);
 * MySQL 8 commits, and the rows it did take come back when their visibility timeout passes.
 */
async function claimDeliveriesInTwoTrips(db: Knex, req: GroupClaimRequest): Promise<MessageRow[]> {
  const select = claimDeliveriesSelectMysql(db, req, req.limit).toSQL();
  const { compoundStatements } = await capabilitiesOf(db);
  let ids: string[] = [];
  const { then } = await runInTwoTrips(db, [{ sql: select.sql, bindings: select.bindings }], ([found]) => {
    ids = (found as Array<{ message_id: string }>).map((r) => String(r.message_id));
    if (ids.length === 0) return [];
    const take = {
      sql: `UPDATE deliveries SET status = 'processing', visible_at = ? WHERE consumer_group = ? AND message_id IN (${ids.map(() => '?').join(', ')}) AND status = 'pending' AND visible_at <= ?`,
      bindings: [req.visibleUntil, req.group, ...ids, req.now],
    };
    const rows = claimedRows(db, req.group, ids).toSQL();
    const guarded = compoundStatements ? { sql: `BEGIN NOT ATOMIC ${take.sql}; IF ROW_COUNT() < ${ids.length} THEN ${SIGNAL_LOST_ROWS}; END IF; END`, bindings: take.bindings } : take;
    return [guarded, MARK_MESSAGES_TAKEN(ids), { sql: rows.sql, bindings: rows.bindings }];
  });
  if (ids.length === 0) return [];
  if (!compoundStatements && (then[0] as { affectedRows: number }).affectedRows < ids.length) throw new ClaimLostRows();
  return (then[then.length - 1] as Array<Record<string, unknown>>).map(normaliseRow);
}

/**
 * Claims up to `limit` of a group's pending deliveries for one visibility period, oldest first. Retried whole;
 * a lost commit answer delays the deliveries it took until their visibility timeout (see claimMessages).
 */
export async function claimDeliveries(db: Knex, req: GroupClaimRequest): Promise<MessageRow[]> {
  if (capabilities(db).skipLocked && capabilities(db).driverQuery && !req.ratePerSecond) return withDbRetry(db, () => claimDeliveriesInTwoTrips(db, req));
  return retryTransaction(db, async (trx) => {
    if (!req.ratePerSecond) return claimForGroup(trx, req, req.limit);
    return takeTokens(trx, req.topic, req.ratePerSecond, req.now, req.limit, (granted) => claimForGroup(trx, req, granted));
  });
}
