import type { Knex } from 'knex';

/** A catalog row of one topic (a configuration, a schema or a consumer group) and who manages it ("" = nobody). */
export interface CatalogEntry {
  topic: string;
  managed_by: string;
}

export interface TopicCatalog {
  configs: CatalogEntry[];
  schemas: Array<CatalogEntry & { version: number }>;
  groups: Array<CatalogEntry & { consumer_group: string }>;
}

/**
 * Every topic's configuration, schema and consumer groups with their managers, read from the database rather
 * than an instance's cache: GET /api/topics shows what the controller wrote a moment ago. Three small
 * tables, one row per topic (or group): the catalog is tiny beside the messages.
 */
export async function readTopicCatalog(db: Knex): Promise<TopicCatalog> {
  const [configs, schemas, groups] = await Promise.all([
    db('topic_configs').select('topic', 'managed_by'),
    db('topic_schemas').select('topic', 'version', 'managed_by'),
    db('consumer_groups').select('topic', 'consumer_group', 'managed_by').orderBy(['topic', 'consumer_group']),
  ]);
  const entry = (r: Record<string, unknown>): CatalogEntry => ({ topic: String(r.topic), managed_by: String(r.managed_by ?? '') });
  return {
    configs: configs.map(entry),
    schemas: schemas.map((r: Record<string, unknown>) => ({ ...entry(r), version: Number(r.version) })),
    groups: groups.map((r: Record<string, unknown>) => ({ ...entry(r), consumer_group: String(r.consumer_group) })),
  };
}
