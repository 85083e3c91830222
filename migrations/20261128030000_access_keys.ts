import type { Knex } from 'knex';

const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

/**
 * Credentials for programs (docs/auth.md): a user row may be a Kubernetes service account's principal (made on
 * its first request; it has no password, so its hash is ""), and a user may hold access keys. A key's secret
 * is stored encrypted, not hashed, because request signing (AWS SigV4) needs the secret itself; `key_id` names
 * the credentials key that encrypted it, so a rotation can tell old rows from new (src/auth/credentials-cipher.ts).
 */
export async function up(db: Knex): Promise<void> {
  const mysql = isMysql(db);
  await db.schema.alterTable('users', (t) => {
    t.boolean('service_account').notNullable().defaultTo(false);
  });
  await db.schema.createTable('access_keys', (t) => {
    if (mysql) t.charset('utf8mb4');
    const columns = [
      t.string('id', 32).primary(),
      t.string('user_id', 36).notNullable(),
      t.string('secret_ciphertext', 255).notNullable(),
      t.string('key_id', 32).notNullable(),
    ];
    if (mysql) for (const column of columns) column.collate('ascii_bin');
    t.bigInteger('created_at').notNullable();
    t.bigInteger('last_used_at').nullable();
    // "The keys of a user": the list, the per-user limit, and deleting them with the user.
    t.index(['user_id'], 'access_keys_user');
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('access_keys');
  await db.schema.alterTable('users', (t) => t.dropColumn('service_account'));
}
