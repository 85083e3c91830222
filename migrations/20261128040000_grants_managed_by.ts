import type { Knex } from 'knex';

/**
 * Grants a Kubernetes resource owns (a ConveyorAccess: docs/auth.md, "Access granted in Git"): `managed_by` as on
 * the catalog tables, `Kind/namespace/name` or "" for a grant made through the HTTP API, which alone may change it.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('grants', (t) => {
    t.string('managed_by', 255).notNullable().defaultTo('');
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('grants', (t) => t.dropColumn('managed_by'));
}
