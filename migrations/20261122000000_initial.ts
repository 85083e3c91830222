import type { Knex } from 'knex';

const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

/** ASCII, binary-collated columns for ids and topic names: compact keys, case-sensitive names. */
function ascii(db: Knex, t: Knex.CreateTableBuilder, name: string, length: number) {
  const column = t.string(name, length);
  if (isMysql(db)) column.collate('ascii_bin');
  return column;
}

export async function up(db: Knex): Promise<void> {
  const mysql = isMysql(db);

  await db.schema.createTable('messages', (t) => {
    if (mysql) t.charset('utf8mb4');
    // UUIDv7: time-ordered, so inserts append to the clustered index and ORDER BY id is oldest first.
    ascii(db, t, 'id', 36).primary();
    ascii(db, t, 'topic', 200).notNullable();
    const key = t.string('msg_key', 255).nullable();
    if (mysql) key.collate('utf8mb4_bin');
    if (mysql) t.specificType('payload', 'mediumblob').notNullable();
    else t.binary('payload').notNullable();
    t.text('metadata', 'mediumtext').notNullable();
    ascii(db, t, 'status', 16).notNullable();
    t.integer('retry_count').notNullable().defaultTo(0);
    t.integer('max_retries').notNullable();
    t.text('last_error').notNullable();
    // Epoch milliseconds: one representation on both engines, exact to the millisecond.
    t.bigInteger('visible_at').notNullable().defaultTo(0);
    t.bigInteger('expires_at').nullable();
    t.bigInteger('created_at').notNullable();
    ascii(db, t, 'original_topic', 200).notNullable().defaultTo('');
    t.bigInteger('dlq_moved_at').nullable();
    // The claim query walks this index in order: WHERE topic = ? AND status = 'pending' ORDER BY id.
    t.index(['topic', 'status', 'id'], 'messages_claim');
    // Visibility sweeps: WHERE topic = ? AND status = 'processing' AND visible_at <= now.
    t.index(['topic', 'status', 'visible_at'], 'messages_visibility');
    // Expiry reaper: WHERE status IN (...) AND expires_at <= now.
    t.index(['status', 'expires_at'], 'messages_expiry');
  });

  // At most one pending message per (topic, key). Dead letters (original_topic set) keep their key but do not
  // take part, so two dead letters of one key never collide.
  if (mysql) {
    await db.raw(
      "ALTER TABLE messages ADD COLUMN pending_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin " +
        "AS (IF(status = 'pending' AND original_topic = '', msg_key, NULL)) STORED, " +
        'ADD UNIQUE INDEX messages_pending_key (topic, pending_key)',
    );
  } else {
    await db.raw(
      "CREATE UNIQUE INDEX messages_pending_key ON messages (topic, msg_key) WHERE status = 'pending' AND original_topic = '' AND msg_key IS NOT NULL",
    );
  }

  await db.schema.createTable('topic_configs', (t) => {
    ascii(db, t, 'topic', 200).primary();
    t.integer('max_retries').nullable();
    t.bigInteger('message_ttl_seconds').nullable();
    t.bigInteger('max_depth').nullable();
    t.bigInteger('throughput_limit').nullable();
    t.boolean('replayable').notNullable().defaultTo(false);
    t.bigInteger('replay_window_seconds').nullable();
    // Set by the Kubernetes controller: the HTTP API refuses to change rows that a custom resource owns.
    t.string('managed_by', 255).notNullable().defaultTo('');
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
  });

  await db.schema.createTable('topic_schemas', (t) => {
    ascii(db, t, 'topic', 200).primary();
    t.text('schema_json', 'mediumtext').notNullable();
    t.integer('version').notNullable();
    t.string('managed_by', 255).notNullable().defaultTo('');
    t.bigInteger('updated_at').notNullable();
  });

  // Token buckets for throughput_limit, one row per limited topic, shared by every instance.
  await db.schema.createTable('topic_buckets', (t) => {
    ascii(db, t, 'topic', 200).primary();
    t.double('tokens').notNullable();
    t.bigInteger('refilled_at').notNullable();
  });

  // Small named values: the catalog revision that instances poll to refresh caches, the stored reaper schedule.
  await db.schema.createTable('settings', (t) => {
    ascii(db, t, 'name', 100).primary();
    t.text('value').notNullable();
    t.bigInteger('revision').notNullable().defaultTo(0);
  });
  await db('settings').insert({ name: 'catalog', value: '', revision: 0 });
}

export async function down(db: Knex): Promise<void> {
  for (const table of ['settings', 'topic_buckets', 'topic_schemas', 'topic_configs', 'messages']) {
    await db.schema.dropTableIfExists(table);
  }
}
