import type { Knex } from 'knex';

const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

/**
 * Ordering keys (docs/design.md, "Ordering keys").
 *
 * - `messages.ordering_key`: the line a message waits in; `ordering_seq` its place in that line (its id at the
 *   enqueue, a new UUIDv7 when a requeue puts it at the back); `deliver_after` when it may be claimed once it
 *   is the head (its delay), kept while it waits behind the head.
 * - `ordering_heads`: one row per live line, naming its head: the one message of the key (per consumer group,
 *   '' for the topic itself) that a claim may take. Every other message of the key waits with visible_at at
 *   BEHIND_HEAD, past any claim's `visible_at <= now`, so the claim stays the same index walk and never reads
 *   a waiting row. The row is also the lock that orders enqueues and hand-overs of one key.
 * - `message_log.ordering_key`: replay re-enqueues a message with its key.
 */
export async function up(db: Knex): Promise<void> {
  const mysql = isMysql(db);
  await db.schema.alterTable('messages', (t) => {
    const key = t.string('ordering_key', 255).nullable();
    if (mysql) key.collate('utf8mb4_bin');
    const seq = t.string('ordering_seq', 64).nullable();
    if (mysql) seq.collate('ascii_bin');
    t.bigInteger('deliver_after').notNullable().defaultTo(0);
    // The next message of a line: WHERE topic = ? AND ordering_key = ? ORDER BY ordering_seq.
    t.index(['topic', 'ordering_key', 'ordering_seq'], 'messages_ordering');
  });
  await db.schema.alterTable('message_log', (t) => {
    const key = t.string('ordering_key', 255).nullable();
    if (mysql) key.collate('utf8mb4_bin');
  });
  await db.schema.createTable('ordering_heads', (t) => {
    if (mysql) t.charset('utf8mb4');
    const ascii = (name: string, length: number) => {
      const column = t.string(name, length).notNullable();
      if (mysql) column.collate('ascii_bin');
      return column;
    };
    ascii('topic', 200);
    ascii('consumer_group', 200).defaultTo('');
    const key = t.string('ordering_key', 255).notNullable();
    if (mysql) key.collate('utf8mb4_bin');
    ascii('message_id', 36);
    t.primary(['topic', 'consumer_group', 'ordering_key']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('ordering_heads');
  await db.schema.alterTable('message_log', (t) => t.dropColumn('ordering_key'));
  await db.schema.alterTable('messages', (t) => {
    t.dropIndex(['topic', 'ordering_key', 'ordering_seq'], 'messages_ordering');
    t.dropColumn('ordering_key');
    t.dropColumn('ordering_seq');
    t.dropColumn('deliver_after');
  });
}
