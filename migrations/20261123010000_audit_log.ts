import type { Knex } from 'knex';

const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

function ascii(db: Knex, t: Knex.CreateTableBuilder, name: string, length: number) {
  const column = t.string(name, length);
  if (isMysql(db)) column.collate('ascii_bin');
  return column;
}

/**
 * The audit trail (src/queue/audit.ts): one row per administrative change or refused attempt. Rows are only
 * ever inserted, read newest first (by topic or by actor) and trimmed by age, so an auto-increment key keeps
 * inserts appending and breaks ties between rows of the same millisecond.
 */
export async function up(db: Knex): Promise<void> {
  const mysql = isMysql(db);
  await db.schema.createTable('audit_log', (t) => {
    if (mysql) t.charset('utf8mb4');
    t.bigIncrements('id');
    t.bigInteger('at').notNullable();
    // A user id (UUID); null for anonymous callers (auth off) and the controller.
    ascii(db, t, 'actor_id', 36).nullable();
    // The username at the time, `anonymous`, or the controller's resource (`TopicConfig team-a/orders`).
    const actor = t.string('actor', 512).notNullable();
    if (mysql) actor.collate('utf8mb4_bin');
    ascii(db, t, 'action', 64).notNullable();
    ascii(db, t, 'topic', 255).nullable();
    const target = t.string('target', 255).nullable();
    if (mysql) target.collate('utf8mb4_bin');
    ascii(db, t, 'result', 16).notNullable();
    t.integer('status').nullable();
    t.text('details').notNullable();
    // The reaper's trim (WHERE at < ?) and the unfiltered list (ORDER BY at DESC, id DESC).
    t.index(['at', 'id'], 'audit_log_at');
    t.index(['topic', 'at', 'id'], 'audit_log_topic');
    t.index(['actor', 'at', 'id'], 'audit_log_actor');
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('audit_log');
}
