import type { Knex } from 'knex';

/**
 * The audit log's actor filter also matches a user id (`actor = ? OR actor_id = ?` for a value shaped like
 * one): with this index beside `audit_log_actor` both sides of the OR are index lookups (an index merge on
 * MySQL/MariaDB, OR-by-union on SQLite) instead of a scan of every record the retention keeps.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('audit_log', (t) => {
    t.index(['actor_id', 'at', 'id'], 'audit_log_actor_id');
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('audit_log', (t) => t.dropIndex(['actor_id', 'at', 'id'], 'audit_log_actor_id'));
}
