import type { Knex } from 'knex';

/**
 * MySQL/MariaDB column definitions that made the engines disagree. SQLite needs nothing: it compares bytes and
 * does not enforce VARCHAR lengths.
 */
const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

/**
 * Message keys compare byte for byte. utf8mb4_bin is a PAD SPACE collation, so "k" and "k " were one key on
 * MySQL (one pending_key slot: an enqueue of "k " upserted the message of "k"; one delete-by-key) but two on
 * SQLite. The NO PAD binary collation is utf8mb4_nopad_bin on MariaDB and utf8mb4_0900_bin on MySQL 8.
 */
export async function noPadCollation(db: Knex): Promise<string> {
  const [rows] = (await db.raw("SHOW COLLATION WHERE Collation IN ('utf8mb4_nopad_bin', 'utf8mb4_0900_bin')")) as [Array<{ Collation: string }>];
  const names = rows.map((r) => r.Collation);
  const found = ['utf8mb4_nopad_bin', 'utf8mb4_0900_bin'].find((name) => names.includes(name));
  if (!found) throw new Error('the database offers no NO PAD binary utf8mb4 collation (utf8mb4_nopad_bin or utf8mb4_0900_bin)');
  return found;
}

/**
 * pending_key's rule, as the initial migration created it. Written out rather than read back from
 * information_schema: MySQL 8 returns GENERATION_EXPRESSION with its quotes escaped (\'pending\'), which pasted
 * into ADD COLUMN is a syntax error after the DROP COLUMN has already committed.
 */
const PENDING_KEY_RULE = "IF(status = 'pending' AND original_topic = '', msg_key, NULL)";

async function setKeyCollation(db: Knex, collation: string): Promise<void> {
  const column = `VARCHAR(255) CHARACTER SET utf8mb4 COLLATE ${collation}`;
  // pending_key is generated from msg_key, so it goes while msg_key changes and comes back with the same rule.
  await db.raw('ALTER TABLE messages DROP INDEX messages_pending_key, DROP COLUMN pending_key');
  await db.raw(`ALTER TABLE messages MODIFY msg_key ${column} NULL`);
  await db.raw(`ALTER TABLE messages ADD COLUMN pending_key ${column} AS (${PENDING_KEY_RULE}) STORED, ADD UNIQUE INDEX messages_pending_key (topic, pending_key)`);
  if (await db.schema.hasTable('message_log')) await db.raw(`ALTER TABLE message_log MODIFY msg_key ${column} NULL`);
}

/**
 * A topic name has up to 200 characters, and its dead letters live in `<topic>.dlq`: up to 204. With
 * VARCHAR(200) dead-lettering a message of a 197-200 character topic failed on MySQL (data too long).
 */
async function setTopicLength(db: Knex, length: number): Promise<void> {
  await db.raw(`ALTER TABLE messages MODIFY topic VARCHAR(${length}) CHARACTER SET ascii COLLATE ascii_bin NOT NULL`);
}

export async function up(db: Knex): Promise<void> {
  if (!isMysql(db)) return;
  await setKeyCollation(db, await noPadCollation(db));
  await setTopicLength(db, 204);
}

export async function down(db: Knex): Promise<void> {
  if (!isMysql(db)) return;
  await setTopicLength(db, 200);
  await setKeyCollation(db, 'utf8mb4_bin');
}
