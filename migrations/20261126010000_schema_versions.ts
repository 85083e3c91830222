import type { Knex } from 'knex';

const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

/**
 * The last version of each topic's deleted schema, so a schema stored again after a DELETE continues from it
 * instead of starting over at 1: a consumer that cached "version 1" of a topic never meets a different schema
 * under that number. A primary key, as Galera replicates only such tables.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('topic_schema_versions', (t) => {
    const topic = t.string('topic', 200).primary();
    if (isMysql(db)) topic.collate('ascii_bin');
    t.integer('version').notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('topic_schema_versions');
}
