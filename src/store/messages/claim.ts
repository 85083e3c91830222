import type { Knex } from 'knex';
import { capabilities, capabilitiesOf } from '../capabilities.js';
import { retryTransaction, withDbRetry } from '../retry.js';
import { runInTwoTrips } from '../statement.js';
import { MESSAGE_COLUMNS, normaliseRow, type MessageRow } from './rows.js';
import { takeTokens } from '../buckets.js';

export interface ClaimRequest {
  topic: string;
  limit: number;
  now: number;
  visibleUntil: number;
  /** throughput_limit in messages per second; the claim takes at most the bucket's whole tokens. */
  ratePerSecond?: number | null;
  /** Dead-letter topics only: the dead letters of this consumer group. */
  consumerGroup?: string;
}

/**
 * MySQL/MariaDB: SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE by primary key, in one short READ COMMITTED
 * transaction. The ORDER BY is exactly the index order of `messages_queue (topic, status, visible_at, id)`
 * (pending rows keep visible_at = 0, so it is id order, oldest first), so InnoDB walks the index from the
 * oldest pending row and locks only the rows it returns. A pending row with another visible_at (written by a
 * version before the index, during a rolling upgrade) is still claimed, after the others. Ordering by anything else
 * (created_at, visible_at) makes a filesort that locks every pending row of the topic: with a 300k backlog
 * mariadbd ran out of lock memory (measured). FORCE INDEX because the optimizer otherwise picks PRIMARY
 * for LIMIT 1 on a large topic (walking every other topic's rows) or a filesort for a topic it estimates
 * empty (seen on MariaDB 10.11). test/claim-explain.test.ts pins the plan.
 * Rows whose TTL has passed are skipped even before the expiry reaper marks them.
 */
export function claimSelectMysql(db: Knex, req: ClaimRequest, limit: number): Knex.QueryBuilder {
  return db
    .from(db.raw('?? FORCE INDEX (??)', ['messages', 'messages_queue']))
    .select(MESSAGE_COLUMNS)
    .where({ topic: req.topic, status: 'pending' })
    .andWhere('visible_at', '<=', req.now)
    .andWhere((q) => q.whereNull('expires_at').orWhere('expires_at', '>', req.now))
    .modify((q) => void (req.consumerGroup !== undefined && q.andWhere({ consumer_group: req.consumerGroup })))
    .orderBy(['visible_at', 'id'])
    .limit(limit)
    .forUpdate()
    .skipLocked();
}

/**
 * The locked rows are read whole, so the claim is two round trips: the UPDATE changes only status and
 * visible_at, which are set on the returned rows here rather than read back.
 */
async function claimMysql(trx: Knex.Transaction, req: ClaimRequest, limit: number): Promise<MessageRow[]> {
  const rows = ((await claimSelectMysql(trx, req, limit)) as Array<Record<string, unknown>>).map(normaliseRow);
  if (rows.length === 0) return [];
  const taken = await trx('messages')
    .whereIn('id', rows.map((r) => r.id))
    .andWhere({ status: 'pending' })
    .andWhere('visible_at', '<=', req.now)
    .update({ status: 'processing', visible_at: req.visibleUntil });
  if (taken < rows.length) throw new ClaimLostRows();
  for (const row of rows) {
    row.status = 'processing';
    row.visible_at = req.visibleUntil;
  }
  return rows;
}

/**
 * SQLite: one UPDATE ... WHERE id IN (SELECT ... ORDER BY id LIMIT n) RETURNING inside BEGIN IMMEDIATE.
 * SQLite has one writer, so there is nothing to skip; the partial scan follows messages_queue in order.
 */
async function claimSqlite(trx: Knex.Transaction, req: ClaimRequest, limit: number): Promise<MessageRow[]> {
  const rows = (await trx.raw(
    `UPDATE messages SET status = 'processing', visible_at = ?
     WHERE id IN (
       SELECT id FROM messages INDEXED BY messages_queue
       WHERE topic = ? AND status = 'pending' AND visible_at <= ? AND (expires_at IS NULL OR expires_at > ?)${req.consumerGroup !== undefined ? ' AND consumer_group = ?' : ''}
       ORDER BY visible_at, id LIMIT ?)
     RETURNING ${MESSAGE_COLUMNS.join(', ')}`,
    [req.visibleUntil, req.topic, req.now, req.now, ...(req.consumerGroup !== undefined ? [req.consumerGroup] : []), limit],
  )) as Array<Record<string, unknown>>;
  return rows.map(normaliseRow).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * claimMysql as a transaction of two round trips (src/store/statement.ts, runInTwoTrips) instead of four
 * (BEGIN, the SELECT, the UPDATE, COMMIT): the SELECT goes with START TRANSACTION, the UPDATE with COMMIT.
 * Where messages arrive one at a time (long polling at a steady rate) a claim takes a few rows, and its round
 * trips were a third of the statements the database served per message (docs/performance.md). On a Galera node
 * the COMMIT goes on its own, a third trip (runInTwoTrips).
 */
async function claimMysqlInTwoTrips(db: Knex, req: ClaimRequest): Promise<MessageRow[]> {
  const select = claimSelectMysql(db, req, req.limit).toSQL();
  const { compoundStatements } = await capabilitiesOf(db);
  let rows: MessageRow[] = [];
  const { then } = await runInTwoTrips(db, [{ sql: select.sql, bindings: select.bindings }], ([found]) => {
    rows = (found as Array<Record<string, unknown>>).map(normaliseRow);
    if (rows.length === 0) return [];
    const update = `UPDATE messages SET status = 'processing', visible_at = ? WHERE id IN (${rows.map(() => '?').join(', ')}) AND status = 'pending' AND visible_at <= ?`;
    const bindings = [req.visibleUntil, ...rows.map((r) => r.id), req.now];
    // MariaDB: a short UPDATE fails before the COMMIT that follows it in the same text, which then never runs.
    if (compoundStatements) return [{ sql: `BEGIN NOT ATOMIC ${update}; IF ROW_COUNT() < ${rows.length} THEN ${SIGNAL_LOST_ROWS}; END IF; END`, bindings }];
    return [{ sql: update, bindings }];
  });
  // MySQL 8: the COMMIT ran; the rows this claim did take come back when their visibility timeout passes.
  if (!compoundStatements && rows.length > 0 && (then[0] as { affectedRows: number }).affectedRows < rows.length) throw new ClaimLostRows();
  for (const row of rows) {
    row.status = 'processing';
    row.visible_at = req.visibleUntil;
  }
  return rows;
}

/**
 * A claim whose UPDATE found fewer of its locked rows still claimable than it locked: retried as a deadlock
 * victim is (errno 1213), never answered. Each claim's UPDATE takes a row only while it is pending and visible.
 *
 * Why: on a Galera cluster a claim's row locks are its node's own. A claim on another node can take the same
 * rows; certification, or the abort of the local transaction when the other node's commit is applied here,
 * fails one of the two. The guard makes the loser fail at its UPDATE where the winner's commit was applied
 * first, before its COMMIT is sent. (The batches once seen delivered through both nodes had another cause: a
 * claim aborted between the statements of one text answered as committed; src/store/statement.ts, sharesText.)
 */
export class ClaimLostRows extends Error {
  readonly errno = 1213;
  readonly code = 'ER_LOCK_DEADLOCK';
  constructor() {
    super('rows locked by a claim changed before its update: claim retried');
  }
}

/** ClaimLostRows raised inside a MariaDB compound statement, so that the COMMIT after it never runs. */
export const SIGNAL_LOST_ROWS = "SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = 'rows locked by a claim changed before its update: claim retried'";

/**
 * Claims up to `limit` pending messages of a topic for one visibility period, oldest first.
 * Retried whole (src/store/retry.ts). A claim whose commit answer was lost may have taken rows nobody will
 * be told about: the re-run claims others (or none), and those rows come back when their visibility timeout
 * passes, as for a consumer that died. Taking them back here is not safe: rows with the same deadline may be
 * another instance's claim. So a lost answer delays messages; it never loses or doubles one.
 */
export async function claimMessages(db: Knex, req: ClaimRequest): Promise<MessageRow[]> {
  if (capabilities(db).skipLocked && capabilities(db).driverQuery && !req.ratePerSecond) return withDbRetry(db, () => claimMysqlInTwoTrips(db, req));
  const claim = capabilities(db).skipLocked ? claimMysql : claimSqlite;
  return retryTransaction(db, async (trx) => {
    if (!req.ratePerSecond) return claim(trx, req, req.limit);
    // The bucket row is locked for the whole claim, so instances sharing the database share the limit;
    // only the tokens for rows actually claimed are spent.
    return takeTokens(trx, req.topic, req.ratePerSecond, req.now, req.limit, (granted) => claim(trx, req, granted));
  });
}
