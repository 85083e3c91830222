import type { Knex } from 'knex';

/**
 * When a user's password last changed (ms since the epoch; 0: never since the user was created). Tokens issued
 * before that second stop working (src/auth/authorizer.ts): a password change is how a user or an admin ends
 * the sessions of a leaked password, not only its future logins.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('users', (t) => {
    t.bigInteger('password_changed_at').notNullable().defaultTo(0);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('users', (t) => t.dropColumn('password_changed_at'));
}
