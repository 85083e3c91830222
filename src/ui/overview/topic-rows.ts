import type { MetricsSnapshot, TopicRates } from './metrics';

export interface StatsRow {
  topic: string;
  status: string;
  count: number;
  consumer_group?: string | null;
}

/** An entry of the `/api/stats` `ordering` list: the ordering keys of a topic, or of one consumer group of it. */
export interface OrderingStatsRow {
  topic: string;
  /** "" for the topic's own keys. */
  consumer_group: string;
  /** Keys with a live message. */
  keys: number;
  /** Of those, keys whose first message a consumer holds while later ones wait behind it. */
  waiting_keys: number;
}

export interface OrderingKeys {
  keys: number;
  waiting: number;
}

export interface GroupDepth {
  group: string;
  counts: Record<string, number>;
  ordering?: OrderingKeys;
}

export interface TopicRow {
  topic: string;
  counts: Record<string, number>;
  /** Messages in `<topic>.dlq`, whatever their status there. */
  deadLetters: number;
  oldestPendingAge: number | undefined;
  enqueuedPerSecond: number | undefined;
  ackedPerSecond: number | undefined;
  groups: GroupDepth[];
  /** Absent when the topic has no ordering keys, or the service does not count them. */
  ordering?: OrderingKeys;
}

export const STATUSES = ['pending', 'processing', 'failed', 'expired'] as const;
const DLQ = '.dlq';

/** Unfinished work: what the chart draws as a topic's depth. */
export function backlog(row: TopicRow): number {
  return (row.counts.pending ?? 0) + (row.counts.processing ?? 0);
}

/**
 * One row per topic: every topic with messages, every configured topic, and the parent of every dead-letter
 * topic (its dead letters are a column of the parent, not a row of their own).
 */
export function topicRows(
  stats: StatsRow[],
  configured: string[],
  metrics: MetricsSnapshot | undefined,
  rates: TopicRates | undefined,
  ordering: readonly OrderingStatsRow[] = [],
): TopicRow[] {
  const rows = new Map<string, TopicRow>();
  const row = (topic: string): TopicRow => {
    let r = rows.get(topic);
    if (!r) {
      r = {
        topic,
        counts: {},
        deadLetters: 0,
        oldestPendingAge: metrics?.oldestPendingAge.get(topic),
        enqueuedPerSecond: rates?.enqueuedPerSecond.get(topic) ?? (rates ? 0 : undefined),
        ackedPerSecond: rates?.ackedPerSecond.get(topic) ?? (rates ? 0 : undefined),
        groups: [],
      };
      rows.set(topic, r);
    }
    return r;
  };
  for (const topic of configured) row(topic);
  for (const s of stats) {
    if (s.topic.endsWith(DLQ)) {
      if (!s.consumer_group) row(s.topic.slice(0, -DLQ.length)).deadLetters += s.count;
      continue;
    }
    const r = row(s.topic);
    if (s.consumer_group) {
      let g = r.groups.find((x) => x.group === s.consumer_group);
      if (!g) r.groups.push((g = { group: s.consumer_group, counts: {} }));
      g.counts[s.status] = (g.counts[s.status] ?? 0) + s.count;
    } else {
      r.counts[s.status] = (r.counts[s.status] ?? 0) + s.count;
    }
  }
  // Dead letters keep their ordering key but nothing orders them: a .dlq line would be no one's to wait on.
  for (const o of ordering) {
    if (o.topic.endsWith(DLQ) || o.keys === 0) continue;
    const r = row(o.topic);
    const keys = { keys: o.keys, waiting: o.waiting_keys };
    if (o.consumer_group) {
      let g = r.groups.find((x) => x.group === o.consumer_group);
      if (!g) r.groups.push((g = { group: o.consumer_group, counts: {} }));
      g.ordering = keys;
    } else {
      r.ordering = keys;
    }
  }
  for (const r of rows.values()) r.groups.sort((a, b) => a.group.localeCompare(b.group));
  return [...rows.values()].sort((a, b) => a.topic.localeCompare(b.topic));
}
