import type { Knex } from 'knex';

/**
 * Fewer secondary indexes touched per claim and per ack (measured: about a third less MariaDB CPU per
 * claimed and acked message; docs/benchmark.md).
 *
 * - `messages_queue (topic, status, visible_at, id)` replaces `messages_claim (topic, status, id)` and
 *   `messages_visibility (topic, status, visible_at)`. Pending rows keep visible_at = 0, so the claim walks
 *   (topic, 'pending', 0) in id order, and the visibility sweep ranges over (topic, 'processing', visible_at).
 *   A claim updates one secondary entry instead of two.
 * - `reap_at` names what a reaper wants of a row: the TTL deadline of a pending message, 0 for an expired one
 *   awaiting deletion, NULL otherwise. Its index replaces `messages_expiry (status, expires_at)`, which every
 *   claim changed; a claim of a message without TTL leaves reap_at NULL and its index untouched.
 */
const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

const REAP_AT = "CASE WHEN status = 'pending' THEN expires_at WHEN status = 'expired' THEN 0 END";

export async function up(db: Knex): Promise<void> {
  await db('messages').where({ status: 'pending' }).whereNot({ visible_at: 0 }).update({ visible_at: 0 });
  if (isMysql(db)) {
    await db.raw(
      `ALTER TABLE messages ADD COLUMN reap_at BIGINT AS (${REAP_AT}) STORED, ` +
        'ADD INDEX messages_queue (topic, status, visible_at, id), ADD INDEX messages_reap (reap_at), ' +
        'DROP INDEX messages_claim, DROP INDEX messages_visibility, DROP INDEX messages_expiry',
    );
    return;
  }
  // SQLite adds generated columns only as VIRTUAL; an index on one stores the value all the same.
  await db.raw(`ALTER TABLE messages ADD COLUMN reap_at INTEGER GENERATED ALWAYS AS (${REAP_AT}) VIRTUAL`);
  await db.raw('CREATE INDEX messages_queue ON messages (topic, status, visible_at, id)');
  await db.raw('CREATE INDEX messages_reap ON messages (reap_at)');
  await db.raw('DROP INDEX messages_claim');
  await db.raw('DROP INDEX messages_visibility');
  await db.raw('DROP INDEX messages_expiry');
}

export async function down(db: Knex): Promise<void> {
  if (isMysql(db)) {
    await db.raw(
      'ALTER TABLE messages ADD INDEX messages_claim (topic, status, id), ADD INDEX messages_visibility (topic, status, visible_at), ' +
        'ADD INDEX messages_expiry (status, expires_at), DROP INDEX messages_queue, DROP INDEX messages_reap, DROP COLUMN reap_at',
    );
  } else {
    await db.raw('CREATE INDEX messages_claim ON messages (topic, status, id)');
    await db.raw('CREATE INDEX messages_visibility ON messages (topic, status, visible_at)');
    await db.raw('CREATE INDEX messages_expiry ON messages (status, expires_at)');
    await db.raw('DROP INDEX messages_queue');
    await db.raw('DROP INDEX messages_reap');
    await db.raw('ALTER TABLE messages DROP COLUMN reap_at');
  }
  // Pending rows carried their enqueue (or retry) time before; the time of the rollback is the nearest.
  await db('messages').where({ status: 'pending', visible_at: 0 }).update({ visible_at: Date.now() });
}
