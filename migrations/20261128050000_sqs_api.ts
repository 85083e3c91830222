import type { Knex } from 'knex';

const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

/**
 * The SQS-compatible API (docs/sqs.md):
 * - `sqs_deduplication`: FIFO queues deduplicate sends for 5 minutes: a row per (topic, deduplication id)
 *   names the message the first send stored, until `expires_at`. Both columns of the key are ASCII (topic
 *   names and SQS deduplication ids are), so the key stays short on MySQL.
 * - `sqs_receives`: the receives of a message through ReceiveMessage: the token of the latest (its receipt
 *   handle names it, so an earlier handle is stale), how many, and when the first was.
 */
export async function up(db: Knex): Promise<void> {
  const mysql = isMysql(db);
  await db.schema.createTable('sqs_deduplication', (t) => {
    if (mysql) t.charset('utf8mb4');
    const columns = [t.string('topic', 204).notNullable(), t.string('dedup_id', 128).notNullable(), t.string('message_id', 36).notNullable()];
    if (mysql) for (const column of columns) column.collate('ascii_bin');
    t.bigInteger('expires_at').notNullable();
    t.primary(['topic', 'dedup_id']);
    // The sweep of expired rows.
    t.index(['expires_at'], 'sqs_deduplication_expiry');
  });
  await db.schema.createTable('sqs_receives', (t) => {
    if (mysql) t.charset('utf8mb4');
    const columns = [t.string('message_id', 36).primary(), t.string('token', 32).notNullable()];
    if (mysql) for (const column of columns) column.collate('ascii_bin');
    t.integer('receive_count').notNullable();
    t.bigInteger('first_received_at').notNullable();
    t.bigInteger('received_at').notNullable();
    // The sweep of rows no receipt can use any more.
    t.index(['received_at'], 'sqs_receives_age');
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('sqs_receives');
  await db.schema.dropTableIfExists('sqs_deduplication');
}
