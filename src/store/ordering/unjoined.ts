import type { Knex } from 'knex';
import { capabilitiesOf, type Capabilities } from '../capabilities.js';
import { withDbRetry } from '../retry.js';
import { runInOneTrip, runStatement, type Statement } from '../statement.js';
import { BEHIND_HEAD, inLockOrder, UNJOINED, type Line } from './lines.js';

/**
 * MariaDB's ordered enqueue in one statement (src/store/messages/insert.ts, insertUngroupedInLines): the
 * `INSERT … SELECT` that stores a flush decides each row's wait itself. It joins each row to its line's head
 * row (HEADS_OF_NEW_ROWS) and reads it under a shared lock (`LOCK IN SHARE MODE`), held to the statement's
 * commit, as lineHeadsStatement's read is held to its transaction's (the reasoning there holds for one
 * statement as for a transaction). Where the line has a head row the message waits behind it (BEHIND_HEAD),
 * and nothing more is needed: whoever hands the line over finds it. Where it has none (a new key, or a line
 * its last hand-over closed) it is stored UNJOINED, and its line is joined right after the commit
 * (joinUnjoinedStatements). So a flush whose every line has a head costs one round trip, where a transaction
 * that read the heads and then committed cost two.
 *
 * A join, not a subquery per row: MariaDB runs a subquery of the select list as a query of its own for every
 * row, which cost the database 2-4 µs per message more (docs/performance.md).
 */
export const HEADS_OF_NEW_ROWS = " LEFT JOIN ordering_heads h ON h.topic = new_rows.topic AND h.consumer_group = '' AND h.ordering_key = new_rows.ordering_key";

/**
 * A stored row's wait, from its head row joined by HEADS_OF_NEW_ROWS. An UNJOINED row also sets the
 * statement's insert id (`LAST_INSERT_ID(expr)` returns expr and makes it the id the statement's answer
 * carries; the table has no auto-increment column, so the id is 0 otherwise): storedUnjoined reads it. It
 * replaced a `RETURNING` clause that answered a row per message, for a flush of which nearly every one names
 * no line to join (docs/performance.md).
 */
export const WAIT_OF_NEW_ROW = `IF(new_rows.ordering_key IS NOT NULL AND h.message_id IS NULL, LAST_INSERT_ID(${UNJOINED}), new_rows.visible_at)`;

/** Whether the one-statement ordered INSERT (its answer's header) stored a row UNJOINED: see WAIT_OF_NEW_ROW. */
export const storedUnjoined = (result: { insertId?: number | string }): boolean => Number(result.insertId ?? 0) !== 0;

/** A line to join, and its messages (ids, in line order) that may be stored UNJOINED. */
export interface Unjoined {
  line: Line;
  ids: string[];
}

/** The lines of `messages` (the topics' own; those without an ordering key have none), with their messages, in the lines' lock order. */
export function linesOf(messages: Array<{ id: string; topic: string; orderingKey?: string | null }>): Unjoined[] {
  const lines = new Map<string, Unjoined>();
  for (const m of messages) {
    if (m.orderingKey == null) continue;
    const at = `${m.topic}\u0000${m.orderingKey}`;
    const line = lines.get(at);
    if (line) line.ids.push(m.id);
    else lines.set(at, { line: { topic: m.topic, group: '', key: m.orderingKey }, ids: [m.id] });
  }
  return inLockOrder([...lines.values()], (u) => u.line);
}

/**
 * Joins lines whose messages were stored UNJOINED, in one transaction of one round trip (it needs no answer
 * between its statements), idempotent. Lines that have a head row, or messages no longer UNJOINED, are passed
 * over at the cost of a primary-key read each: a flush that stored any message UNJOINED names all its lines.
 * 1. a line without a head row, read from its first message if that is still UNJOINED (by primary key), gets
 *    one: its first waiting message in line order, a seek into messages_ordering (another enqueue's UNJOINED
 *    message may come before this one's); a line that has one meanwhile (another enqueue's join, or a hand-over
 *    that found these messages) keeps it, and its row is locked (an update of the row to itself);
 * 2. each line's head is opened (claimable from its delay on) if it still waits: a head row read by its
 *    primary key, per topic, and its message by id;
 * 3. the messages named that are still UNJOINED wait behind their heads (BEHIND_HEAD), by id. Another
 *    enqueue's UNJOINED messages of the line are its own join's, or the sweep's; they wait meanwhile as well.
 * The seek finds the message itself at least, unless its TTL has passed: then that message is the head, and the
 * expiry reaper hands the line over as for any head past its TTL. A message no longer pending makes no head.
 */
export function joinUnjoinedStatements(unjoined: Unjoined[], now: number): Statement[] {
  const firsts = unjoined.map((u) => u.ids[0]);
  const ids = unjoined.flatMap((u) => u.ids);
  const parts: string[] = [];
  const lineBindings: string[] = [];
  for (const [topic, keys] of keysByTopic(unjoined)) {
    parts.push(`(h.topic = ? AND h.consumer_group = '' AND h.ordering_key IN (${placeholders(keys.length)}))`);
    lineBindings.push(topic, ...keys);
  }
  return [
    {
      sql:
        "INSERT INTO ordering_heads (topic, consumer_group, ordering_key, message_id) SELECT c.topic, '', c.ordering_key, COALESCE((SELECT n.id FROM messages n FORCE INDEX (messages_ordering) " +
        "WHERE n.topic = c.topic AND n.ordering_key = c.ordering_key AND n.status = 'pending' AND (n.expires_at IS NULL OR n.expires_at > ?) ORDER BY n.ordering_seq LIMIT 1), c.id) " +
        `FROM messages c FORCE INDEX (PRIMARY) WHERE c.id IN (${placeholders(firsts.length)}) AND c.status = 'pending' AND c.visible_at = ? ORDER BY c.topic, c.ordering_key ` +
        'ON DUPLICATE KEY UPDATE message_id = ordering_heads.message_id',
      bindings: [now, ...firsts, UNJOINED],
    },
    {
      sql:
        'UPDATE ordering_heads h FORCE INDEX (PRIMARY) STRAIGHT_JOIN messages m FORCE INDEX (PRIMARY) ON m.id = h.message_id SET m.visible_at = m.deliver_after ' +
        `WHERE ${parts.length === 1 ? parts[0] : `(${parts.join(' OR ')})`} AND m.status = 'pending' AND m.visible_at >= ?`,
      bindings: [...lineBindings, UNJOINED],
    },
    {
      sql: `UPDATE messages FORCE INDEX (PRIMARY) SET visible_at = ? WHERE id IN (${placeholders(ids.length)}) AND status = 'pending' AND visible_at = ?`,
      bindings: [BEHIND_HEAD, ...ids, UNJOINED],
    },
  ];
}

/** The lines' keys by topic, in their order. */
function keysByTopic(unjoined: Unjoined[]): Map<string, string[]> {
  const topics = new Map<string, string[]>();
  for (const { line } of unjoined) {
    const keys = topics.get(line.topic);
    if (keys) keys.push(line.key);
    else topics.set(line.topic, [line.key]);
  }
  return topics;
}

const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** Lines per transaction: a few statements of a seek each. */
const LINES_PER_JOIN = 100;

/**
 * Joins lines (joinUnjoinedStatements), a transaction per LINES_PER_JOIN of them, each retried as any statement.
 * Resolves to the number of lines it found without a head row (its first statement's rows).
 */
export async function joinUnjoined(db: Knex, unjoined: Unjoined[], now: number): Promise<number> {
  let opened = 0;
  for (let i = 0; i < unjoined.length; i += LINES_PER_JOIN) {
    const chunk = unjoined.slice(i, i + LINES_PER_JOIN);
    const [heads] = (await withDbRetry(db, () => runInOneTrip(db, joinUnjoinedStatements(chunk, now)))) as Array<{ affectedRows: number }>;
    opened += heads.affectedRows;
  }
  return opened;
}

/**
 * Only MariaDB's one-statement enqueue stores messages UNJOINED (SQLite and MySQL 8 join in the enqueue's
 * transaction). MariaDB is told from MySQL 8 by INSERT … RETURNING, which the statement no longer uses: it was
 * built and is tested on MariaDB alone.
 */
export const marksUnjoined = (can: Capabilities) => can.dialect === 'mysql' && can.insertReturning;

/**
 * How old an UNJOINED message must be before the sweep joins its line: an enqueue joins its own lines
 * milliseconds after its commit, and the sweep is for those it never joined.
 */
export const UNJOINED_GRACE_MS = 10_000;

/**
 * The expiry reaper's sweep for lines an enqueue stored UNJOINED and did not join (its instance died between
 * the commit and the join, or the join failed), of messages stored UNJOINED_GRACE_MS before `now` or earlier.
 * The topics come from one loose index scan of messages_queue (topic, status, visible_at, id), and each
 * topic's lines from its range of it. Resolves to the topics whose lines were joined.
 */
export async function joinUnjoinedLines(db: Knex, now: number): Promise<Set<string>> {
  const joined = new Set<string>();
  if (!marksUnjoined(await capabilitiesOf(db))) return joined;
  const topics = (await withDbRetry(db, () => runStatement(db, UNJOINED_TOPICS.sql, UNJOINED_TOPICS.bindings))) as Array<{ topic: string }>;
  for (const { topic } of topics) {
    const lines = unjoinedLinesStatement(topic, now - UNJOINED_GRACE_MS);
    const rows = (await withDbRetry(db, () => runStatement(db, lines.sql, lines.bindings))) as Array<{ ordering_key: string | null; id: string }>;
    const unjoined = linesOf(rows.map((r) => ({ id: String(r.id), topic, orderingKey: r.ordering_key == null ? null : String(r.ordering_key) })));
    if (unjoined.length === 0) continue;
    await joinUnjoined(db, unjoined, now);
    joined.add(topic);
  }
  return joined;
}

/** The topics with UNJOINED messages: a loose index scan of messages_queue, one dive per topic, whatever the backlogs. */
export const UNJOINED_TOPICS: Statement = {
  sql: "SELECT topic FROM messages FORCE INDEX (messages_queue) WHERE status = 'pending' AND visible_at = ? GROUP BY topic",
  bindings: [UNJOINED],
};

/** A topic's messages stored UNJOINED before `storedBefore`, with their lines, in id order: its range of messages_queue. */
export function unjoinedLinesStatement(topic: string, storedBefore: number): Statement {
  return {
    sql: "SELECT ordering_key, id FROM messages FORCE INDEX (messages_queue) WHERE topic = ? AND status = 'pending' AND visible_at = ? AND created_at < ?",
    bindings: [topic, UNJOINED, storedBefore],
  };
}
