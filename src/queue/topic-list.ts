import type { Knex } from 'knex';
import { countDeliveriesByStatus, oldestPendingDeliveryCreatedAt } from '../store/deliveries/backlog.js';
import { countByStatus, oldestPendingAvailableSince } from '../store/messages/browse.js';
import { readTopicCatalog } from '../store/topic-catalog.js';
import { decodeManager, type ManagedBy } from './managed-by.js';
import { isDlqTopic } from './topic-names.js';

/** Messages of a topic by status; every status is present (0 when none). */
export interface TopicDepth {
  pending: number;
  processing: number;
  failed: number;
  expired: number;
}

/** Deliveries of a consumer group by status (acked ones are bookkeeping, not shown). */
export interface GroupDepth {
  pending: number;
  processing: number;
  failed: number;
}

export interface TopicGroupSummary {
  consumer_group: string;
  depth: GroupDepth;
  oldest_pending_age_seconds: number | null;
  managed_by: ManagedBy | null;
}

/** One entry of GET /api/topics. */
export interface TopicSummary {
  topic: string;
  dead_letter: boolean;
  depth: TopicDepth;
  oldest_pending_age_seconds: number | null;
  configured: boolean;
  schema_version: number | null;
  managed: boolean;
  managed_by: { config: ManagedBy | null; schema: ManagedBy | null };
  consumer_groups: TopicGroupSummary[];
}

/**
 * Every topic that has messages, a configuration, a schema or consumer groups, in name order, narrowed to
 * those `visible` keeps (the caller's read grants), one page of them. The counts are two index-only GROUP
 * BYs, as GET /api/stats reads; the oldest pending ages are one index seek per topic and group of the page
 * only, so a page costs the same however many topics there are beyond it.
 */
export async function listTopics(
  db: Knex,
  visible: (topics: string[]) => string[],
  limit: number,
  offset: number,
  now: number,
): Promise<{ items: TopicSummary[]; total: number }> {
  const [counts, deliveries, catalog] = await Promise.all([countByStatus(db), countDeliveriesByStatus(db), readTopicCatalog(db)]);
  const names = new Set<string>();
  for (const c of counts) names.add(c.topic);
  for (const d of deliveries) names.add(d.topic);
  for (const r of [...catalog.configs, ...catalog.schemas, ...catalog.groups]) names.add(r.topic);
  // Byte order, as the database orders topic names (ascii_bin), so pages are stable whatever the locale.
  const all = visible([...names]).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const page = all.slice(offset, offset + limit);
  const onPage = new Set(page);

  const depths = new Map<string, TopicDepth>(page.map((t) => [t, { pending: 0, processing: 0, failed: 0, expired: 0 }]));
  for (const c of counts) {
    const depth = depths.get(c.topic);
    if (depth && c.status in depth) depth[c.status as keyof TopicDepth] += c.count;
  }
  const groups = new Map<string, Map<string, TopicGroupSummary>>();
  const groupOf = (topic: string, group: string): TopicGroupSummary => {
    let ofTopic = groups.get(topic);
    if (!ofTopic) groups.set(topic, (ofTopic = new Map()));
    let summary = ofTopic.get(group);
    if (!summary) ofTopic.set(group, (summary = { consumer_group: group, depth: { pending: 0, processing: 0, failed: 0 }, oldest_pending_age_seconds: null, managed_by: null }));
    return summary;
  };
  for (const g of catalog.groups) if (onPage.has(g.topic)) groupOf(g.topic, g.consumer_group).managed_by = decodeManager(g.managed_by);
  // Deliveries of a group unregistered a moment ago are still counted, as /api/stats counts them.
  for (const d of deliveries) {
    if (!onPage.has(d.topic)) continue;
    const depth = groupOf(d.topic, d.consumer_group).depth;
    if (d.status in depth) depth[d.status as keyof GroupDepth] += d.count;
  }

  const pendingTopics = page.filter((t) => depths.get(t)!.pending > 0);
  const pendingGroups = [...groups].flatMap(([topic, ofTopic]) => [...ofTopic.values()].filter((g) => g.depth.pending > 0).map((g) => ({ topic, consumer_group: g.consumer_group })));
  const [oldest, oldestGroups] = await Promise.all([oldestPendingAvailableSince(db, pendingTopics, now), oldestPendingDeliveryCreatedAt(db, pendingGroups)]);
  const age = (since: number) => Math.max(0, (now - since) / 1000);
  for (const o of oldestGroups) groupOf(o.topic, o.consumer_group).oldest_pending_age_seconds = age(o.createdAt);

  const configs = new Map(catalog.configs.map((c) => [c.topic, c]));
  const schemas = new Map(catalog.schemas.map((s) => [s.topic, s]));
  const items = page.map((topic): TopicSummary => {
    const config = configs.get(topic);
    const schema = schemas.get(topic);
    const topicGroups = [...(groups.get(topic)?.values() ?? [])].sort((a, b) => (a.consumer_group < b.consumer_group ? -1 : 1));
    const managedBy = { config: decodeManager(config?.managed_by ?? ''), schema: decodeManager(schema?.managed_by ?? '') };
    const since = oldest.get(topic);
    return {
      topic,
      dead_letter: isDlqTopic(topic),
      depth: depths.get(topic)!,
      // null: nothing pending is available yet (none pending, or only delayed ones).
      oldest_pending_age_seconds: since === undefined ? null : age(since),
      configured: config !== undefined,
      schema_version: schema?.version ?? null,
      managed: managedBy.config !== null || managedBy.schema !== null || topicGroups.some((g) => g.managed_by !== null),
      managed_by: managedBy,
      consumer_groups: topicGroups,
    };
  });
  return { items, total: all.length };
}
