import type { Knex } from 'knex';
import { engineOf } from './dialect.js';
import { lockedManager, type ManagerGuard } from './managed-rows.js';
import { bumpCatalogRevision } from './settings.js';

export interface TopicSchemaRow {
  topic: string;
  schema_json: string;
  version: number;
  managed_by: string;
  updated_at: number;
}

function normalise(raw: Record<string, unknown>): TopicSchemaRow {
  return {
    topic: String(raw.topic),
    schema_json: String(raw.schema_json),
    version: Number(raw.version),
    managed_by: String(raw.managed_by ?? ''),
    updated_at: Number(raw.updated_at),
  };
}

export async function listTopicSchemas(db: Knex): Promise<TopicSchemaRow[]> {
  return (await db('topic_schemas').select('*').orderBy('topic')).map(normalise);
}

export async function getTopicSchema(db: Knex, topic: string): Promise<TopicSchemaRow | null> {
  const row = await db('topic_schemas').where({ topic }).first();
  return row ? normalise(row) : null;
}

/** Stores a schema; each PUT raises the version by one (the row lock serialises concurrent PUTs). */
export async function putTopicSchema(db: Knex, topic: string, schemaJson: string, now: number, managedBy: string, guard: ManagerGuard): Promise<TopicSchemaRow> {
  return db.transaction(async (trx) => {
    const query = trx('topic_schemas').where({ topic });
    const current = await (engineOf(trx) === 'mysql' ? query.forUpdate() : query).first('version', 'managed_by');
    guard(current ? String(current.managed_by ?? '') : undefined);
    const row = { topic, schema_json: schemaJson, version: current ? Number(current.version) + 1 : 1, managed_by: managedBy, updated_at: now };
    if (current) await trx('topic_schemas').where({ topic }).update(row);
    else await trx('topic_schemas').insert(row);
    await bumpCatalogRevision(trx);
    return row;
  });
}

export async function deleteTopicSchema(db: Knex, topic: string, guard: ManagerGuard): Promise<boolean> {
  return db.transaction(async (trx) => {
    guard(await lockedManager(trx, 'topic_schemas', { topic }));
    const deleted = await trx('topic_schemas').where({ topic }).delete();
    if (deleted > 0) await bumpCatalogRevision(trx);
    return deleted > 0;
  });
}
