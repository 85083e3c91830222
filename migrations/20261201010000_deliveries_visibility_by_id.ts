import type { Knex } from 'knex';

const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

/**
 * A group claims as a topic does (messages_queue): it walks `deliveries_visibility (topic, consumer_group,
 * status, visible_at)` over its pending deliveries due now, in (visible_at, message_id) order, and stops
 * there. Walking `deliveries_claim` in message_id order, it read every pending delivery not yet due on the way
 * (a group's deliveries waiting behind their ordering key's head, delayed ones, backed-off retries): 100,000
 * deliveries waiting behind one key's head cost MariaDB 0.3 s per empty dequeue.
 *
 * InnoDB ends every secondary index entry with the primary key (message_id first), so there the index already
 * gives that order. SQLite ends its entries with the rowid: there message_id becomes the index's last column.
 * The index keeps its name, and only gains a column, so the release before this one runs on it unchanged.
 */
export async function up(db: Knex): Promise<void> {
  if (isMysql(db)) return;
  await db.raw('DROP INDEX deliveries_visibility');
  await db.raw('CREATE INDEX deliveries_visibility ON deliveries (topic, consumer_group, status, visible_at, message_id)');
}

export async function down(db: Knex): Promise<void> {
  if (isMysql(db)) return;
  await db.raw('DROP INDEX deliveries_visibility');
  await db.raw('CREATE INDEX deliveries_visibility ON deliveries (topic, consumer_group, status, visible_at)');
}
