import type { Knex } from 'knex';
import { UNJOINED } from './lines.js';
import type { Statement } from '../statement.js';
import type { Unjoined } from './unjoined.js';

/**
 * MariaDB's ordered enqueue for a topic whose flushes keep opening lines (src/store/messages/insert.ts,
 * insertUngroupedInLines): one transaction in one round trip that makes the head rows first, then stores the
 * messages. Where a key's line is empty when its message comes (a consumer that keeps up empties it after
 * every message), the one-statement enqueue (src/store/ordering/unjoined.ts) stores the message UNJOINED and
 * joins its line in a second transaction, a second round trip and commit before the enqueue answers: at light
 * load such an enqueue took 1.8-1.9 times a plain one's median time, against 1.25-1.35 this way
 * (docs/performance.md).
 * In a backlog, where every line has its head, the one statement costs the database less, so each topic goes
 * the way its recent flushes call for (LineOpenings).
 *
 * 1. openLinesStatement: each line of the flush that is empty, with no head row (read by primary key) and no
 *    message waiting (a probe of messages_ordering), gets a head row naming the flush's first message of the
 *    line, which the next statement stores. A line whose row exists keeps it: the INSERT's read of it takes a
 *    shared lock to the commit, as the one statement's does. Two flushes opening one line meet on its row (the
 *    second keeps the first's, locked). A line with messages waiting and no head row (another enqueue's UNJOINED
 *    messages, which that enqueue joins a moment later, or an interrupted enqueue's) is left to the join, as in
 *    the one statement: its first waiting message must become the head, and be opened. Not where the topics
 *    have consumer groups (their lines are each group's).
 * 2. the same guarded INSERT as the one statement, whose select list now also opens the message its head row
 *    names (from its delay on); the others wait behind their heads. A line with no head row here (one step 1
 *    left to the join) marks its message UNJOINED as the one statement does, and the caller joins it after the
 *    commit.
 * A topic that gained a consumer group between the two statements stores nothing in step 2, and the flush goes
 * the transactional way; head rows step 1 made then name messages that were never stored, in lines the topic's
 * groups do not use: heads that are gone, which the expiry reaper's sweep (repairLines, src/store/ordering/
 * lines.ts) closes at its next run, as it does any head that is gone.
 */
export function openLinesStatement(lines: Unjoined[], topics: string[], now: number): Statement {
  const bindings: unknown[] = [];
  for (const { line, ids } of lines) bindings.push(line.topic, line.key, ids[0]);
  bindings.push(now, ...topics);
  const rows = lines.map((_, i) => (i === 0 ? 'SELECT ? AS topic, ? AS ordering_key, ? AS id' : 'SELECT ?, ?, ?')).join(' UNION ALL ');
  return {
    sql:
      `INSERT INTO ordering_heads (topic, consumer_group, ordering_key, message_id) SELECT v.topic, '', v.ordering_key, v.id FROM (${rows}) AS v ` +
      "WHERE NOT EXISTS (SELECT 1 FROM ordering_heads h FORCE INDEX (PRIMARY) WHERE h.topic = v.topic AND h.consumer_group = '' AND h.ordering_key = v.ordering_key) " +
      "AND NOT EXISTS (SELECT 1 FROM messages n FORCE INDEX (messages_ordering) WHERE n.topic = v.topic AND n.ordering_key = v.ordering_key AND n.status = 'pending' AND (n.expires_at IS NULL OR n.expires_at > ?)) " +
      `AND NOT EXISTS (SELECT 1 FROM consumer_groups WHERE topic IN (${topics.map(() => '?').join(', ')})) ORDER BY v.topic, v.ordering_key ` +
      'LOCK IN SHARE MODE ON DUPLICATE KEY UPDATE message_id = ordering_heads.message_id',
    bindings,
  };
}

/**
 * Step 2's wait of a stored row (see WAIT_OF_NEW_ROW, src/store/ordering/unjoined.ts): the message its head row
 * names is claimable from its delay on, one whose line has no head row is UNJOINED (and sets the insert id),
 * the others wait behind their heads.
 */
export const OPENING_WAIT_OF_NEW_ROW =
  `IF(new_rows.ordering_key IS NOT NULL AND h.message_id IS NULL, LAST_INSERT_ID(${UNJOINED}), ` + 'IF(h.message_id = new_rows.id, new_rows.deliver_after, new_rows.visible_at))';

/** Above this share of a topic's lines opened by its recent flushes, they go the lines-first way. */
const LINES_FIRST_ABOVE = 0.25;

/** How much a flush's share counts against the topic's history: a topic turns within a few flushes. */
const WEIGHT = 0.3;

/** Topics tallied before the tally starts over: a topic is a few bytes, and one forgotten starts lines-first. */
const MAX_TOPICS = 10_000;

/**
 * Per topic, the share of its ordered flushes' lines that had no head row, a moving average over its recent
 * flushes. A topic not seen yet is taken to open lines (its keys are new). A guess only: each way stores the
 * same messages in the same places, and only the cost differs.
 */
export class LineOpenings {
  private readonly shares = new Map<string, number>();

  /** Whether a flush to these topics should make its head rows first. */
  linesFirst(topics: string[]): boolean {
    return topics.some((topic) => (this.shares.get(topic) ?? 1) > LINES_FIRST_ABOVE);
  }

  /** A flush to these topics opened this share of its lines (0 to 1). */
  record(topics: string[], share: number): void {
    if (this.shares.size >= MAX_TOPICS) this.shares.clear();
    for (const topic of topics) this.shares.set(topic, (1 - WEIGHT) * (this.shares.get(topic) ?? 1) + WEIGHT * share);
  }
}

const tallies = new WeakMap<Knex, LineOpenings>();

/** The tally of a database's topics, one per pool (the service's own; a test's server has its own). */
export function lineOpeningsOf(db: Knex): LineOpenings {
  let tally = tallies.get(db);
  if (!tally) tallies.set(db, (tally = new LineOpenings()));
  return tally;
}
