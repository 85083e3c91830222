import type { Knex } from 'knex';
import { noPadCollation } from './20261122060000_engine_parity.js';

const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

/** visible_at of a message (or a group's delivery) waiting in its line: this or more (BEHIND_HEAD, and the mark one below it). */
const WAITING = Number.MAX_SAFE_INTEGER - 1;

async function setKeyCollation(db: Knex, collation: string): Promise<void> {
  const column = `VARCHAR(255) CHARACTER SET utf8mb4 COLLATE ${collation}`;
  await db.raw(`ALTER TABLE ordering_heads MODIFY ordering_key ${column} NOT NULL`);
  await db.raw(`ALTER TABLE messages MODIFY ordering_key ${column} NULL`);
  await db.raw(`ALTER TABLE message_log MODIFY ordering_key ${column} NULL`);
}

/** Each head row spelt as the key of the message it names (now that spellings differ). */
async function respellHeads(db: Knex): Promise<void> {
  await db.raw('UPDATE ordering_heads h JOIN messages m ON m.id = h.message_id AND m.topic = h.topic SET h.ordering_key = m.ordering_key WHERE h.ordering_key <> m.ordering_key');
}

/** Heads for the lines that have waiting messages and no head row, opened. */
async function headLinesWithout(db: Knex): Promise<void> {
  await db.raw(
    'INSERT IGNORE INTO ordering_heads (topic, consumer_group, ordering_key, message_id) ' +
      "SELECT w.topic, '', w.ordering_key, (SELECT n.id FROM messages n WHERE n.topic = w.topic AND n.ordering_key = w.ordering_key AND n.status = 'pending' ORDER BY n.ordering_seq LIMIT 1) " +
      "FROM (SELECT DISTINCT m.topic, m.ordering_key FROM messages m WHERE m.ordering_key IS NOT NULL AND m.status = 'pending' AND m.visible_at >= ? " +
      "AND NOT EXISTS (SELECT 1 FROM ordering_heads h WHERE h.topic = m.topic AND h.consumer_group = '' AND h.ordering_key = m.ordering_key) " +
      'AND NOT EXISTS (SELECT 1 FROM consumer_groups g WHERE g.topic = m.topic)) w',
    [WAITING],
  );
  await db.raw(
    "UPDATE messages m JOIN ordering_heads h ON h.message_id = m.id AND h.topic = m.topic AND h.consumer_group = '' " +
      "SET m.visible_at = m.deliver_after WHERE m.status = 'pending' AND m.visible_at >= ?",
    [WAITING],
  );
  await db.raw(
    'INSERT IGNORE INTO ordering_heads (topic, consumer_group, ordering_key, message_id) ' +
      'SELECT w.topic, w.consumer_group, w.ordering_key, (SELECT n.id FROM messages n JOIN deliveries e ON e.message_id = n.id AND e.consumer_group = w.consumer_group ' +
      "WHERE n.topic = w.topic AND n.ordering_key = w.ordering_key AND e.status = 'pending' ORDER BY n.ordering_seq LIMIT 1) " +
      'FROM (SELECT DISTINCT m.topic, d.consumer_group, m.ordering_key FROM deliveries d JOIN messages m ON m.id = d.message_id ' +
      "WHERE m.ordering_key IS NOT NULL AND d.status = 'pending' AND d.visible_at >= ? " +
      'AND NOT EXISTS (SELECT 1 FROM ordering_heads h WHERE h.topic = m.topic AND h.consumer_group = d.consumer_group AND h.ordering_key = m.ordering_key)) w',
    [WAITING],
  );
  await db.raw(
    'UPDATE deliveries d JOIN ordering_heads h ON h.message_id = d.message_id AND h.consumer_group = d.consumer_group JOIN messages m ON m.id = d.message_id ' +
      "SET d.visible_at = m.deliver_after WHERE d.status = 'pending' AND d.visible_at >= ?",
    [WAITING],
  );
}

/**
 * Ordering keys compare byte for byte, as message keys do since 20261122060000_engine_parity: utf8mb4_bin is
 * a PAD SPACE collation, so on MySQL/MariaDB "k" and "k " were one line (one head row, one seek) but two on
 * SQLite. The NO PAD binary collation is utf8mb4_nopad_bin on MariaDB and utf8mb4_0900_bin on MySQL 8.
 * SQLite needs nothing.
 *
 * A line that held messages of both spellings splits in two here. Its head row (one per line and consumer
 * group, so the spellings never had a row each) takes the spelling of the message it names, which may be
 * processing: that line keeps its head. The other spelling's messages are all waiting (a merged line had one
 * head), in a line without a head row: each such line is given one, its first waiting message in line order,
 * made claimable from its delay on (its deliver_after), for the topic's own lines and for each consumer
 * group's. A line an enqueue is joining at the same moment (MariaDB's one-statement enqueue stores its
 * messages waiting, then makes the head) gets the same head either way: the same first message, and whichever
 * head row is written first stays.
 */
export async function up(db: Knex): Promise<void> {
  if (!isMysql(db)) return;
  await setKeyCollation(db, await noPadCollation(db));
  await respellHeads(db);
  await headLinesWithout(db);
}

export async function down(db: Knex): Promise<void> {
  if (!isMysql(db)) return;
  await setKeyCollation(db, 'utf8mb4_bin');
}
