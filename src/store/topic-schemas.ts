import type { Knex } from 'knex';
import { retryTransaction } from './retry.js';
import { capabilities } from './capabilities.js';
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

/** The version of the topic's last deleted schema, 0 when it never had one. */
async function deletedVersion(trx: Knex.Transaction, topic: string): Promise<number> {
  const row = await trx('topic_schema_versions').where({ topic }).first('version');
  return row ? Number(row.version) : 0;
}

/**
 * Stores a schema; each PUT raises the version by one, also across a DELETE (the row lock serialises
 * concurrent PUTs). Retried whole. A re-run after a lost commit answer that finds exactly the row the lost
 * attempt wrote (its version, schema and time) answers it rather than raising the version a second time for
 * one PUT.
 */
export async function putTopicSchema(db: Knex, topic: string, schemaJson: string, now: number, managedBy: string, guard: ManagerGuard): Promise<TopicSchemaRow> {
  let written: TopicSchemaRow | undefined;
  return retryTransaction(db, async (trx, attempt) => {
    const query = trx('topic_schemas').where({ topic });
    const current = await (capabilities(trx).rowLocks ? query.forUpdate() : query).first('version', 'managed_by', 'schema_json', 'updated_at');
    if (attempt.uncertain && written && current && isRow(current, written)) return written;
    guard(current ? String(current.managed_by ?? '') : undefined);
    const row = { topic, schema_json: schemaJson, version: (current ? Number(current.version) : await deletedVersion(trx, topic)) + 1, managed_by: managedBy, updated_at: now };
    if (current) await trx('topic_schemas').where({ topic }).update(row);
    else await trx('topic_schemas').insert(row);
    await bumpCatalogRevision(trx);
    written = row;
    return row;
  });
}

function isRow(current: Record<string, unknown>, row: TopicSchemaRow): boolean {
  return Number(current.version) === row.version && String(current.schema_json) === row.schema_json && Number(current.updated_at) === row.updated_at;
}

/**
 * Keeps the deleted schema's version for the next PUT. Retried whole; a re-run after a lost commit answer that
 * finds the row gone answers what the lost attempt did.
 */
export async function deleteTopicSchema(db: Knex, topic: string, guard: ManagerGuard): Promise<boolean> {
  let deletedEarlier = false;
  return retryTransaction(db, async (trx, attempt) => {
    const manager = await lockedManager(trx, 'topic_schemas', { topic });
    if (manager === undefined && attempt.uncertain && deletedEarlier) return true;
    guard(manager);
    const version = await trx('topic_schemas').where({ topic }).first('version');
    if (version) await trx('topic_schema_versions').insert({ topic, version: Number(version.version) }).onConflict('topic').merge(['version']);
    const deleted = await trx('topic_schemas').where({ topic }).delete();
    if (deleted > 0) await bumpCatalogRevision(trx);
    deletedEarlier = deleted > 0;
    return deleted > 0;
  });
}
