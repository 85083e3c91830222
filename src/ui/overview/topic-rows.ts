import type { MetricsSnapshot, TopicRates } from './metrics';

export interface StatsRow {
  topic: string;
  status: string;
  count: number;
  consumer_group?: string | null;
}

export interface GroupDepth {
  group: string;
  counts: Record<string, number>;
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
export function topicRows(stats: StatsRow[], configured: string[], metrics: MetricsSnapshot | undefined, rates: TopicRates | undefined): TopicRow[] {
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
  for (const r of rows.values()) r.groups.sort((a, b) => a.group.localeCompare(b.group));
  return [...rows.values()].sort((a, b) => a.topic.localeCompare(b.topic));
}
