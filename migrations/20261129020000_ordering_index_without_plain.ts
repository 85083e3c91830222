import type { Knex } from 'knex';

const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

/**
 * SQLite: `messages_ordering` holds only the messages that have an ordering key (a partial index), so a plain
 * message costs no entry in it: every seek into it names a key, which SQLite knows implies `IS NOT NULL`.
 * MySQL/MariaDB have no partial indexes: there a plain message's entry goes at the end of its topic's entries
 * without a key, in id order.
 */
export async function up(db: Knex): Promise<void> {
  if (isMysql(db)) return;
  await db.raw('DROP INDEX messages_ordering');
  await db.raw('CREATE INDEX messages_ordering ON messages (topic, ordering_key) WHERE ordering_key IS NOT NULL');
}

export async function down(db: Knex): Promise<void> {
  if (isMysql(db)) return;
  await db.raw('DROP INDEX messages_ordering');
  await db.raw('CREATE INDEX messages_ordering ON messages (topic, ordering_key)');
}
