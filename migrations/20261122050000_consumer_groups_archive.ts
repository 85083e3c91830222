import type { Knex } from 'knex';

const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

function ascii(db: Knex, t: Knex.CreateTableBuilder | Knex.AlterTableBuilder, name: string, length: number) {
  const column = t.string(name, length);
  if (isMysql(db)) column.collate('ascii_bin');
  return column;
}

export async function up(db: Knex): Promise<void> {
  const mysql = isMysql(db);

  await db.schema.createTable('consumer_groups', (t) => {
    ascii(db, t, 'topic', 200).notNullable();
    ascii(db, t, 'consumer_group', 200).notNullable();
    t.string('managed_by', 255).notNullable().defaultTo('');
    t.bigInteger('created_at').notNullable();
    t.primary(['topic', 'consumer_group']);
  });

  // One row per (message, group) on fan-out topics: each group's own status, attempts and visibility.
  // Statuses: pending, processing, acked, failed, expired. A dead-lettered delivery is removed (its copy lives
  // in <topic>.dlq); acked/failed/expired rows are kept until every group is done, then go with the message.
  await db.schema.createTable('deliveries', (t) => {
    ascii(db, t, 'message_id', 36).notNullable();
    ascii(db, t, 'topic', 200).notNullable();
    ascii(db, t, 'consumer_group', 200).notNullable();
    ascii(db, t, 'status', 16).notNullable();
    t.integer('retry_count').notNullable().defaultTo(0);
    t.text('last_error').notNullable();
    t.bigInteger('visible_at').notNullable().defaultTo(0);
    // A copy of the message's expires_at, so per-group TTL needs no join.
    t.bigInteger('expires_at').nullable();
    t.primary(['message_id', 'consumer_group']);
    // The group claim walks this index in order: WHERE topic = ? AND consumer_group = ? AND status = 'pending'
    // ORDER BY message_id (UUIDv7, so oldest first), exactly like messages_claim.
    t.index(['topic', 'consumer_group', 'status', 'message_id'], 'deliveries_claim');
    t.index(['topic', 'consumer_group', 'status', 'visible_at'], 'deliveries_visibility');
    t.index(['status', 'expires_at'], 'deliveries_expiry');
  });

  // Group dead letters carry their group in a column (and in metadata), so dequeue from <topic>.dlq with a
  // consumer_group can filter without parsing JSON.
  await db.schema.alterTable('messages', (t) => {
    ascii(db, t, 'consumer_group', 200).notNullable().defaultTo('');
  });

  await db.schema.createTable('message_log', (t) => {
    if (mysql) t.charset('utf8mb4');
    ascii(db, t, 'id', 36).primary();
    ascii(db, t, 'topic', 200).notNullable();
    const key = t.string('msg_key', 255).nullable();
    if (mysql) key.collate('utf8mb4_bin');
    if (mysql) t.specificType('payload', 'mediumblob').notNullable();
    else t.binary('payload').notNullable();
    t.text('metadata', 'mediumtext').notNullable();
    t.integer('retry_count').notNullable().defaultTo(0);
    ascii(db, t, 'original_topic', 200).notNullable().defaultTo('');
    t.bigInteger('created_at').notNullable();
    t.bigInteger('acked_at').notNullable();
    // Listing, DELETE ?before= and the archive reaper: WHERE topic = ? AND acked_at < ?.
    t.index(['topic', 'acked_at', 'id'], 'message_log_acked');
    // Replay's keyset paging: WHERE topic = ? AND (created_at, id) > (?, ?) ORDER BY created_at, id.
    t.index(['topic', 'created_at', 'id'], 'message_log_replay');
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('message_log');
  await db.schema.alterTable('messages', (t) => t.dropColumn('consumer_group'));
  await db.schema.dropTableIfExists('deliveries');
  await db.schema.dropTableIfExists('consumer_groups');
}
