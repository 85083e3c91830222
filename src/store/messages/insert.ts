import type { Knex } from 'knex';
import { capabilities, capabilitiesOf } from '../capabilities.js';
import { retryTransaction, withDbRetry } from '../retry.js';
import { runInOneTrip, runInTwoTrips, runStatement } from '../statement.js';
import { chunkRows, type MessageRow } from './rows.js';
import { groupsOfTopics, insertDeliveries } from '../deliveries/adopt.js';
import { expireStaleKeyHolder, pendingKeyHolder } from './key-holder.js';
import { BEHIND_HEAD, inLockOrder, joinLinesOf, joinTopicLinesAfter, lineHeadsStatement, type ReadHead } from '../ordering/lines.js';
import { HEADS_OF_NEW_ROWS, joinUnjoined, linesOf, marksUnjoined, storedUnjoined, WAIT_OF_NEW_ROW, type Unjoined } from '../ordering/unjoined.js';
import { lineOpeningsOf, OPENING_WAIT_OF_NEW_ROW, openLinesStatement } from '../ordering/lines-first.js';

export interface NewMessage {
  id: string;
  topic: string;
  key: string | null;
  payload: Buffer;
  metadata: string;
  maxRetries: number;
  expiresAt: number | null;
  createdAt: number;
  /** A delayed message: claimable from then on (epoch ms); 0 or absent: at once. */
  availableAt?: number;
  /** Delivered one at a time with the other messages of this key, in enqueue order (src/store/ordering/lines.ts). */
  orderingKey?: string | null;
  /**
   * Stored already claimed, processing until then, for a waiting subscriber (src/queue/subscriptions.ts).
   * Only unkeyed messages of topics without consumer groups; others are stored pending regardless.
   */
  claimedUntil?: number;
}

/**
 * `inserted`: a new row (`claimed`: stored processing, see NewMessage.claimedUntil); `upserted`: the pending
 * message holding the key was overwritten; `full`: max_depth reached.
 */
export type InsertOutcome = { id: string; outcome: 'inserted' | 'upserted'; claimed?: boolean } | { outcome: 'full' };

/**
 * The row a new message is stored as: `pending` stores it pending even where it names a subscriber's claim
 * (NewMessage.claimedUntil). A parameter, not a copy of the message without its claim: on Node 20, an object
 * spread that adds a property the source lacks (`{ ...m, claimedUntil: undefined }`) takes V8's slow path,
 * about 1 µs a message.
 */
export function newMessageRow(m: NewMessage, pending = false): MessageRow & { ordering_seq: string | null; deliver_after: number } {
  const ordered = m.orderingKey != null;
  const claimedUntil = pending ? undefined : m.claimedUntil;
  return {
    id: m.id,
    topic: m.topic,
    msg_key: m.key,
    payload: m.payload,
    metadata: m.metadata,
    status: claimedUntil === undefined ? 'pending' : 'processing',
    retry_count: 0,
    max_retries: m.maxRetries,
    last_error: '',
    // Pending rows ready at once keep 0: the claim walks messages_queue (topic, status, visible_at, id) in id
    // order among them. A delayed one waits past `visible_at <= now` until its time.
    // A message with an ordering key waits behind its key's head until joinLinesOf says otherwise.
    visible_at: ordered ? BEHIND_HEAD : (claimedUntil ?? m.availableAt ?? 0),
    expires_at: m.expiresAt,
    created_at: m.createdAt,
    original_topic: '',
    dlq_moved_at: null,
    ordering_key: m.orderingKey ?? null,
    ordering_seq: ordered ? m.id : null,
    deliver_after: ordered ? (m.availableAt ?? 0) : 0,
  };
}

/**
 * Upserts on the pending-key unique index: MySQL through the generated `pending_key` column,
 * SQLite through the partial unique index. Payload, metadata and the delay (visible_at) are overwritten: the
 * newest enqueue of a key says when it is due. A holder waiting behind the head of its ordering key keeps
 * waiting (only the delay it will have as the head changes), and it keeps its ordering key and its place.
 */
async function upsertKeyed(trx: Knex.Transaction, message: NewMessage): Promise<{ id: string; inserted: boolean }> {
  await expireStaleKeyHolder(trx, message.topic, message.key!, message.createdAt);
  // A keyed message is always stored pending: a newer enqueue of its key may still overwrite it.
  const insert = trx('messages').insert(newMessageRow(message, true)).toSQL();
  const availableAt = message.availableAt ?? 0;
  const delay = [BEHIND_HEAD, availableAt, availableAt];
  if (capabilities(trx).upsert === 'onDuplicateKey') {
    await trx.raw(
      `${insert.sql} ON DUPLICATE KEY UPDATE payload = VALUES(payload), metadata = VALUES(metadata), visible_at = IF(visible_at = ?, visible_at, ?), deliver_after = ?`,
      [...insert.bindings, ...delay],
    );
    // Not affectedRows: mysql2 connects with CLIENT_FOUND_ROWS, under which an update to the values a row
    // already holds (a retried enqueue of the same payload) counts 1, as an insert does. The holder of the
    // key, new or collided with, is locked by this transaction now, so this read is stable.
    const holder = await trx('messages').where({ topic: message.topic, pending_key: message.key }).first('id');
    const id = String(holder.id);
    return { id, inserted: id === message.id };
  }
  const rows = (await trx.raw(
    `${insert.sql} ON CONFLICT (topic, msg_key) WHERE status = 'pending' AND original_topic = '' AND msg_key IS NOT NULL ` +
      'DO UPDATE SET payload = excluded.payload, metadata = excluded.metadata, visible_at = CASE WHEN visible_at = ? THEN visible_at ELSE ? END, deliver_after = ? RETURNING id',
    [...insert.bindings, ...delay],
  )) as Array<{ id: string }>;
  const id = String(rows[0].id);
  return { id, inserted: id === message.id };
}

async function hasPendingKey(trx: Knex.Transaction, topic: string, key: string): Promise<boolean> {
  return (await pendingKeyHolder(trx, topic, key).first('id')) !== undefined;
}

/**
 * Room left under max_depth. The topic_configs row is locked FOR UPDATE first, so concurrent enqueues to a
 * capped topic (on any instance) count and insert one after the other and the cap holds exactly.
 * SQLite transactions are already serial (BEGIN IMMEDIATE). On a fan-out topic a message is pending while
 * some group has it pending: the row's own status turns `processing` at the first group's claim, so the
 * deliveries are counted instead (the slowest group's backlog).
 */
async function roomUnderCap(trx: Knex.Transaction, topic: string, maxDepth: number, fanOut: boolean): Promise<number> {
  if (capabilities(trx).rowLocks) await trx('topic_configs').where({ topic }).forUpdate().first('topic');
  const row = fanOut
    ? await trx('deliveries').where({ topic, status: 'pending' }).countDistinct({ n: 'message_id' }).first()
    : await trx('messages').where({ topic, status: 'pending' }).count({ n: '*' }).first();
  return maxDepth - Number(row?.n ?? 0);
}

export interface InsertOptions {
  /** max_depth per topic; undefined or null means uncapped. */
  maxDepthOf: (topic: string) => number | null | undefined;
  /** When true, one `full` outcome rolls the whole call back (EnqueueBatch is all or nothing). */
  atomic?: boolean;
  /** A cached hint that a topic has consumer groups; the store checks the database either way. */
  mayHaveGroups?: (topic: string) => boolean;
}

export class BatchRejected extends Error {}

/**
 * Inserts a group-committed batch in one transaction: unkeyed rows as multi-row INSERTs, keyed rows as
 * upserts. Outcomes are in input order. A caller hears "stored" only after this commit returns.
 *
 * Retries (src/store/retry.ts) run the whole batch again, so a batch stays all or nothing. After a lost
 * connection the first attempt may have committed: message ids are made by the service before the insert
 * (src/queue/message-ids.ts), so a re-run first looks for its own ids, and those it finds were stored by that
 * attempt (the batch committed whole, so then all of its new rows were). They are answered `inserted` and not
 * written again; keyed messages that found a holder re-apply the same payload and metadata to it, which
 * changes nothing. The re-run goes the transactional way, where that look-up can be made.
 * What is not covered: a message stored, claimed and acked within the few milliseconds before the re-run is
 * stored again (at-least-once, as a redelivery would be).
 */
export async function insertMessages(db: Knex, messages: NewMessage[], options: InsertOptions): Promise<InsertOutcome[]> {
  const kind = capabilities(db).inProcess ? undefined : ungroupedKind(messages, options);
  if (kind) {
    let uncertain = false;
    let unjoined: Unjoined[] = [];
    const stored = await withDbRetry(db, async (attempt) => {
      uncertain = attempt.uncertain;
      // A re-run after a lost answer leaves it to the transactional path, which checks for its own ids first.
      if (attempt.uncertain) return false;
      if (kind === 'plain') return insertUngrouped(db, messages);
      const result = await insertUngroupedInLines(db, messages);
      unjoined = result.unjoined;
      return result.stored;
    });
    if (stored) {
      await joinAfterCommit(db, unjoined, messages[0].createdAt);
      return messages.map((m) => ({ id: m.id, outcome: 'inserted', claimed: m.claimedUntil !== undefined }));
    }
    if (uncertain) {
      const outcomes = await insertTransaction(db, messages, options, true);
      // The lost attempt may have committed rows UNJOINED, which the transaction found stored and left as they were.
      if (kind === 'ordered' && marksUnjoined(await capabilitiesOf(db))) await joinAfterCommit(db, linesOf(messages), messages[0].createdAt);
      return outcomes;
    }
  }
  return insertTransaction(db, messages, options, false);
}

/**
 * Joins the lines an ordered flush stored UNJOINED, after its commit and before its callers hear "stored". A
 * join that fails (after its retries) is left to the expiry reaper's sweep (src/store/ordering/unjoined.ts):
 * the messages are stored, in their lines' order, and an error now would have the producers send them again.
 * The lines it opened tell the topics' tally which way their next flushes go (LineOpenings).
 */
async function joinAfterCommit(db: Knex, unjoined: Unjoined[], now: number): Promise<void> {
  if (unjoined.length === 0) return;
  try {
    const opened = await joinUnjoined(db, unjoined, now);
    lineOpeningsOf(db).record([...new Set(unjoined.map((u) => u.line.topic))], opened / unjoined.length);
  } catch {
    // The sweep joins them.
  }
}

function insertTransaction(db: Knex, messages: NewMessage[], options: InsertOptions, uncertain: boolean): Promise<InsertOutcome[]> {
  return retryTransaction(db, async (trx, attempt) => {
    const stored = attempt.uncertain || uncertain ? await alreadyStored(trx, messages) : new Map<string, StoredRow>();
    return insertInTransaction(trx, messages, options, stored);
  });
}

interface StoredRow {
  status: string;
  visible_at: number;
}

/** The batch's own ids that are in the table already: stored by an attempt whose commit answer was lost. */
async function alreadyStored(trx: Knex.Transaction, messages: NewMessage[]): Promise<Map<string, StoredRow>> {
  const found = new Map<string, StoredRow>();
  for (const chunk of chunkIds(messages.map((m) => m.id))) {
    const rows = await trx('messages').select('id', 'status', 'visible_at').whereIn('id', chunk);
    for (const row of rows as Array<{ id: string; status: string; visible_at: unknown }>) found.set(String(row.id), { status: String(row.status), visible_at: Number(row.visible_at) });
  }
  return found;
}

function chunkIds(ids: string[], size = 500): string[][] {
  const chunks: string[][] = [];
  for (let i = 0; i < ids.length; i += size) chunks.push(ids.slice(i, i + size));
  return chunks;
}

/**
 * A message of a committed earlier attempt: inserted, and handed to this instance's subscriber only if it is
 * still the processing row that attempt stored for it (same visibility deadline), not a later claim by another.
 */
function storedOutcome(message: NewMessage, row: StoredRow): InsertOutcome {
  const claimed = message.claimedUntil !== undefined && row.status === 'processing' && row.visible_at === message.claimedUntil;
  return { id: message.id, outcome: 'inserted', claimed };
}

async function insertInTransaction(trx: Knex.Transaction, messages: NewMessage[], options: InsertOptions, stored: Map<string, StoredRow>): Promise<InsertOutcome[]> {
  // Locks are taken in one order in every transaction, topics (their configuration rows) and then keys (their
  // pending-key index entries), so two batches holding the same keys in different orders wait for each other
  // instead of deadlocking: on MariaDB, concurrent batches of 30 shuffled keys failed 38 times in 60 (retried
  // out: 503). Outcomes stay in request order, and one key's messages keep theirs (the last payload wins).
  const topics = [...new Set(messages.map((m) => m.topic))].sort();
  const groups = await groupsOfTopics(trx, topics);
  const room = new Map<string, number>();
  for (const topic of topics) {
    const cap = options.maxDepthOf(topic);
    if (cap != null) room.set(topic, await roomUnderCap(trx, topic, cap, groups.has(topic)));
  }
  const fresh: NewMessage[] = [];
  const outcomes: InsertOutcome[] = new Array(messages.length);
  // Each with its sizes for chunkRows as it is made: a copy of every entry to add them (`{ ...p, payload, metadata }`)
  // took V8's slow path, about 7 µs of service CPU per message in SQLite's enqueue, measured.
  const plain: PlainRow[] = [];
  for (const i of lockOrder(messages)) {
    const message = messages[i];
    const earlier = stored.get(message.id);
    if (earlier) {
      // Counted under the cap already (it is in the table), and its deliveries were stored with it.
      outcomes[i] = storedOutcome(message, earlier);
      continue;
    }
    const left = room.get(message.topic);
    const capped = left !== undefined;
    if (capped && left <= 0 && !(message.key !== null && (await hasPendingKey(trx, message.topic, message.key)))) {
      if (options.atomic) throw new BatchRejected(message.topic);
      outcomes[i] = { outcome: 'full' };
      continue;
    }
    if (message.key === null) {
      if (capped) room.set(message.topic, left - 1);
      // Every group of a fan-out topic needs its own delivery, so none of them is handed over whole.
      plain.push({ index: i, message, payload: message.payload, metadata: message.metadata, pending: groups.has(message.topic) });
      continue;
    }
    const { id, inserted } = await upsertKeyed(trx, message);
    if (capped && inserted) room.set(message.topic, left - 1);
    if (inserted) fresh.push(message);
    // The groups' pending deliveries of the overwritten message take its new delay too.
    else if (groups.has(message.topic)) await trx('deliveries').where({ message_id: id, status: 'pending' }).whereNot({ visible_at: BEHIND_HEAD }).update({ visible_at: availableAtOf(message) });
    outcomes[i] = { id, outcome: inserted ? 'inserted' : 'upserted' };
  }
  for (const chunk of chunkRows(plain)) {
    await insertRows(trx, chunk);
    for (const p of chunk) outcomes[p.index] = { id: p.message.id, outcome: 'inserted', claimed: !p.pending && p.message.claimedUntil !== undefined };
  }
  // Fan-out topics: every registered group gets its own pending delivery of each new message.
  if (groups.size > 0) {
    const fanned = [...fresh, ...plain.map((p) => p.message)].filter((m) => groups.has(m.topic));
    await insertDeliveries(trx, fanned, (topic) => groups.get(topic));
  }
  await joinLines(trx, [...fresh, ...plain.map((p) => p.message)], groups);
  return outcomes;
}

const availableAtOf = (m: NewMessage) => m.availableAt ?? 0;

/** An unkeyed message of a transactional insert; `pending`: stored pending whatever its claim (a fan-out topic's). */
interface PlainRow {
  index: number;
  message: NewMessage;
  payload: Buffer;
  metadata: string;
  pending: boolean;
}

/**
 * New messages with an ordering key, stored waiting (BEHIND_HEAD), join their lines: on a fan-out topic one
 * line per group (their deliveries wait), else the topic's own. In one order (topic, group, key, then the
 * message's place), so two batches never take two lines' locks in opposite orders.
 */
async function joinLines(trx: Knex.Transaction, stored: NewMessage[], groups: Map<string, string[]>): Promise<void> {
  const joins: Array<{ line: { topic: string; group: string; key: string }; id: string; now: number; deliverAfter: number }> = [];
  for (const m of stored) {
    if (m.orderingKey == null) continue;
    for (const group of groups.get(m.topic) ?? ['']) joins.push({ line: { topic: m.topic, group, key: m.orderingKey }, id: m.id, now: m.createdAt, deliverAfter: availableAtOf(m) });
  }
  const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  joins.sort((a, b) => compare(a.line.topic, b.line.topic) || compare(a.line.group, b.line.group) || compare(a.line.key, b.line.key) || compare(a.id, b.id));
  await joinLinesOf(trx, joins);
}

/** The indexes of `messages` by (topic, key), unkeyed ones first, request order among equals. */
function lockOrder(messages: NewMessage[]): number[] {
  const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return messages
    .map((_, i) => i)
    .sort((a, b) => compare(messages[a].topic, messages[b].topic) || compare(messages[a].key ?? '', messages[b].key ?? '') || a - b);
}

/**
 * The longest binary value a row of insertUngrouped's UNION may carry. MariaDB 10.11 types a UNION's column of
 * binary strings by their longest length kept in 16 bits: a payload of 70,000 bytes among others came out of
 * the derived table as its first 4,464 (70,000 - 65,536), stored without an error. Text columns are not
 * affected, nor a single row (no UNION).
 */
const MAX_UNION_BINARY = 65_532;

/**
 * Unkeyed messages of uncapped topics that fit one statement: nothing to count, upsert or lock first (`plain`),
 * or only their ordering keys' lines to join (`ordered`). Undefined: the transactional path.
 */
function ungroupedKind(messages: NewMessage[], options: InsertOptions): 'plain' | 'ordered' | undefined {
  let ordered = false;
  for (const m of messages) {
    if (m.key !== null || options.maxDepthOf(m.topic) != null || options.mayHaveGroups?.(m.topic)) return undefined;
    if (messages.length > 1 && m.payload.length > MAX_UNION_BINARY) return undefined;
    if (m.orderingKey != null) ordered = true;
  }
  if (chunkRows(messages).length !== 1) return undefined;
  return ordered ? 'ordered' : 'plain';
}

const NEW_ROW_COLUMNS = Object.keys(newMessageRow({ id: '', topic: '', key: null, payload: Buffer.alloc(0), metadata: '', maxRetries: 0, expiresAt: null, createdAt: 0 }));
const ROW_PLACEHOLDERS = NEW_ROW_COLUMNS.map(() => '?').join(', ');
const FIRST_ROW = NEW_ROW_COLUMNS.map((c) => `? AS ${c}`).join(', ');

/**
 * The rows after the first: one table value constructor on MariaDB (one parse for the lot); MySQL 8 has none
 * without `ROW(...)`, and none at all before 8.0.19, so there each row is a SELECT of its own.
 */
function laterRows(count: number, tableValueConstructor: boolean): string {
  if (count === 0) return '';
  if (tableValueConstructor) return ` UNION ALL VALUES ${Array.from({ length: count }, () => `(${ROW_PLACEHOLDERS})`).join(', ')}`;
  return ` UNION ALL SELECT ${ROW_PLACEHOLDERS}`.repeat(count);
}

/**
 * insertUngrouped for a batch with ordering keys: the same guarded INSERT, each message stored waiting.
 *
 * MariaDB: one statement, committed on its own, which joins each row to its line's head row, read under a
 * shared lock, and stores the message UNJOINED where the line has none (src/store/ordering/unjoined.ts); its
 * answer's insert id says whether it did, and then the caller joins the flush's lines after the commit
 * (joinAfterCommit). For topics whose recent flushes opened many lines, one transaction in one round trip
 * that makes the missing head rows first (storeLinesFirst).
 *
 * MySQL 8: one transaction of two round trips (src/store/statement.ts,
 * runInTwoTrips). The first stores the rows and reads each line's head, share-locked, in a statement of its own
 * (src/store/ordering/lines.ts, lineHeadsStatement). The second is COMMIT alone when every line has a head,
 * else it opens the lines that have none first.
 */
async function insertUngroupedInLines(db: Knex, batch: NewMessage[]): Promise<{ stored: boolean; unjoined: Unjoined[] }> {
  // Rows in the lines' lock order: each row's read share-locks its head row as the row is stored.
  const messages = inLockOrder(batch, (m) => (m.orderingKey == null ? null : { topic: m.topic, group: '', key: m.orderingKey }));
  const topics = [...new Set(messages.map((m) => m.topic))];
  const bindings: Knex.RawBinding[] = [];
  for (const m of messages) bindings.push(...Object.values(newMessageRow(m)));
  const can = await capabilitiesOf(db);
  const storedAll = (stored: number) => {
    if (stored !== 0 && stored !== messages.length) throw new Error(`stored ${stored} of ${messages.length} messages in one statement`);
    return stored === messages.length;
  };
  if (marksUnjoined(can)) {
    const openings = lineOpeningsOf(db);
    if (openings.linesFirst(topics)) return storeLinesFirst(db, messages, topics, bindings, can.tableValueConstructor);
    const result = (await runStatement(db, waitingInsertSql(messages.length, topics.length, can.tableValueConstructor), [...bindings, ...topics])) as { affectedRows: number; insertId: number };
    const stored = storedAll(result.affectedRows);
    const unjoined = stored && storedUnjoined(result) ? linesOf(messages) : [];
    // With lines to join, joinAfterCommit counts what they opened.
    if (stored && unjoined.length === 0) openings.record(topics, 0);
    return { stored, unjoined };
  }
  const joins = messages.flatMap((m) => (m.orderingKey == null ? [] : [{ line: { topic: m.topic, group: '', key: m.orderingKey }, id: m.id }]));
  const first = [{ sql: ungroupedInsertSql(messages.length, topics.length, can.tableValueConstructor), bindings: [...bindings, ...topics] }, lineHeadsStatement(joins)];
  const storedOf = (results: unknown[]) => (results[0] as { affectedRows: number }).affectedRows;
  // Nothing stored (a topic has groups now): nothing to join.
  const result = await runInTwoTrips(db, first, (results) => (storedOf(results) === 0 ? [] : joinTopicLinesAfter(joins, results[1] as ReadHead[])));
  return { stored: storedAll(storedOf(result.first)), unjoined: [] };
}

/** The stored row's columns, its wait decided by its line's head row, joined (src/store/ordering/unjoined.ts). */
const WAITING_ROW = NEW_ROW_COLUMNS.map((c) => (c === 'visible_at' ? `${WAIT_OF_NEW_ROW} AS visible_at` : `new_rows.${c}`)).join(', ');

/** The same, after the flush made its lines' head rows: the message a head row names is open (src/store/ordering/lines-first.ts). */
const OPENING_ROW = NEW_ROW_COLUMNS.map((c) => (c === 'visible_at' ? `${OPENING_WAIT_OF_NEW_ROW} AS visible_at` : `new_rows.${c}`)).join(', ');

/** MariaDB's ordered INSERT after the flush's head rows were made (storeLinesFirst), for `rows` rows and `topics` topics. */
export function openingInsertSql(rows: number, topics: number, tableValueConstructor: boolean): string {
  return ungroupedInsertSql(rows, topics, tableValueConstructor, { select: OPENING_ROW, join: HEADS_OF_NEW_ROWS }) + ' LOCK IN SHARE MODE';
}

/**
 * insertUngroupedInLines on MariaDB for topics that keep opening lines (src/store/ordering/lines-first.ts):
 * the flush's missing head rows, then its rows, in one transaction of one round trip. `messages` are in the
 * lines' lock order and `bindings` are their rows'. What it opened goes to the topics' tally.
 */
async function storeLinesFirst(db: Knex, messages: NewMessage[], topics: string[], bindings: Knex.RawBinding[], tableValueConstructor: boolean): Promise<{ stored: boolean; unjoined: Unjoined[] }> {
  const lines = linesOf(messages);
  const insert = { sql: openingInsertSql(messages.length, topics.length, tableValueConstructor), bindings: [...bindings, ...topics] };
  const [opened, stored] = (await runInOneTrip(db, [openLinesStatement(lines, topics, messages[0].createdAt), insert])) as Array<{ affectedRows: number; insertId: number }>;
  // A topic has consumer groups now: nothing was stored, and the caller takes the transactional path.
  if (stored.affectedRows === 0) return { stored: false, unjoined: [] };
  if (stored.affectedRows !== messages.length) throw new Error(`stored ${stored.affectedRows} of ${messages.length} messages in one statement`);
  lineOpeningsOf(db).record(topics, Math.min(1, opened.affectedRows / lines.length));
  return { stored: true, unjoined: storedUnjoined(stored) ? lines : [] };
}

/** MariaDB's one-statement ordered INSERT (insertUngroupedInLines) for `rows` rows and `topics` topics. */
export function waitingInsertSql(rows: number, topics: number, tableValueConstructor: boolean): string {
  return ungroupedInsertSql(rows, topics, tableValueConstructor, { select: WAITING_ROW, join: HEADS_OF_NEW_ROWS }) + ' LOCK IN SHARE MODE';
}

/** New rows in one multi-row INSERT, written out (the query builder's insert of many rows costs far more CPU). */
async function insertRows(trx: Knex.Transaction, plain: PlainRow[]): Promise<void> {
  const bindings: Knex.RawBinding[] = [];
  for (const p of plain) bindings.push(...Object.values(newMessageRow(p.message, p.pending)));
  const rows = Array.from({ length: plain.length }, () => `(${ROW_PLACEHOLDERS})`).join(', ');
  await runStatement(trx, `INSERT INTO messages (${NEW_ROW_COLUMNS.join(', ')}) VALUES ${rows}`, bindings);
}

/**
 * insertUngrouped's statement for `rows` rows (bound column by column, newMessageRow's order) and `topics`
 * topics; `select`: the stored columns, of the bound rows (`new_rows`), and `join`, tables joined to them.
 */
export function ungroupedInsertSql(rows: number, topics: number, tableValueConstructor: boolean, { select = '*', join = '' } = {}): string {
  return (
    `INSERT INTO messages (${NEW_ROW_COLUMNS.join(', ')}) SELECT ${select} FROM (SELECT ${FIRST_ROW}${laterRows(rows - 1, tableValueConstructor)}) AS new_rows${join} ` +
    `WHERE NOT EXISTS (SELECT 1 FROM consumer_groups WHERE topic IN (${Array.from({ length: topics }, () => '?').join(', ')}))`
  );
}

/**
 * MySQL/MariaDB: one autocommit INSERT ... SELECT that stores the rows only while none of their topics has a
 * consumer group, in one round trip instead of four (BEGIN, the group read, INSERT, COMMIT); under load each
 * round trip waits for a busy event loop, which was most of a single Enqueue's latency. The group check
 * reads what the transactional path's read would. False (nothing stored) when a topic has groups: the caller
 * takes the transactional path, which gives every group its delivery. The first row carries the column
 * names (a table value constructor alone names its columns after the first row's values).
 */
async function insertUngrouped(db: Knex, messages: NewMessage[]): Promise<boolean> {
  const topics = [...new Set(messages.map((m) => m.topic))];
  const bindings: Knex.RawBinding[] = [];
  for (const m of messages) bindings.push(...Object.values(newMessageRow(m)));
  const sql = ungroupedInsertSql(messages.length, topics.length, (await capabilitiesOf(db)).tableValueConstructor);
  const result = (await runStatement(db, sql, [...bindings, ...topics])) as { affectedRows: number };
  if (result.affectedRows !== 0 && result.affectedRows !== messages.length) {
    throw new Error(`stored ${result.affectedRows} of ${messages.length} messages in one statement`);
  }
  return result.affectedRows === messages.length;
}
