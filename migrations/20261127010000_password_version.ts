import type { Knex } from 'knex';

/**
 * A counter that every password change raises. Tokens carry the version they were issued under (claim `pwv`)
 * and stop working once it moves on (src/auth/authorizer.ts): a password change is how a user or an admin
 * ends the sessions of a leaked password, not only its future logins. A counter, not a time: it needs no
 * agreement between the instances' clocks, and a token refreshed from a cache that had not seen the change
 * still carries the old version.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('users', (t) => {
    t.integer('password_version').notNullable().defaultTo(0);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('users', (t) => t.dropColumn('password_version'));
}
