import type { Knex } from 'knex';

const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

/** Users and their per-topic grants (docs/auth.md, Users and Grants). */
export async function up(db: Knex): Promise<void> {
  const mysql = isMysql(db);
  await db.schema.createTable('users', (t) => {
    if (mysql) t.charset('utf8mb4');
    const id = t.string('id', 36).primary();
    // Binary collation: usernames are unique exactly as typed, as on SQLite.
    const username = t.string('username', 255).notNullable();
    if (mysql) {
      id.collate('ascii_bin');
      username.collate('utf8mb4_bin');
    }
    t.string('password_hash', 255).notNullable();
    t.boolean('is_admin').notNullable().defaultTo(false);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.unique(['username'], { indexName: 'users_username' });
  });

  await db.schema.createTable('grants', (t) => {
    if (mysql) t.charset('utf8mb4');
    const columns = [t.string('id', 36).primary(), t.string('user_id', 36).notNullable(), t.string('action', 16).notNullable(), t.string('topic_pattern', 210).notNullable()];
    const group = t.string('consumer_group', 255).notNullable().defaultTo('');
    if (mysql) {
      for (const column of columns) column.collate('ascii_bin');
      group.collate('utf8mb4_bin');
    }
    t.bigInteger('created_at').notNullable();
    // The same user, action, pattern and group twice is a 409 (docs/auth.md, Grants); its prefix serves "grants of a user".
    t.unique(['user_id', 'action', 'topic_pattern', 'consumer_group'], { indexName: 'grants_identity' });
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('grants');
  await db.schema.dropTableIfExists('users');
}
