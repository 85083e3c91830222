import type { TopicSummary } from '../api/topics';
import type { TopicRates } from './metrics';

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
  /** A Kubernetes resource manages its configuration, schema or a group. */
  managed?: boolean;
}

export const STATUSES = ['pending', 'processing', 'failed', 'expired'] as const;
const DLQ = '.dlq';

/** Unfinished work: what the chart draws as a topic's depth. */
export function backlog(row: TopicRow): number {
  return (row.counts.pending ?? 0) + (row.counts.processing ?? 0);
}

/**
 * One row per topic of `GET /api/topics`, and the parent of every dead-letter topic (its dead letters are a
 * column of the parent, not a row of their own). Rates come from /metrics, ordering keys from /api/stats.
 */
export function topicRows(topics: readonly TopicSummary[], rates: TopicRates | undefined, ordering: readonly OrderingStatsRow[] = []): TopicRow[] {
  const rows = new Map<string, TopicRow>();
  const row = (topic: string): TopicRow => {
    let r = rows.get(topic);
    if (!r) {
      r = {
        topic,
        counts: {},
        deadLetters: 0,
        oldestPendingAge: undefined,
        enqueuedPerSecond: rates?.enqueuedPerSecond.get(topic) ?? (rates ? 0 : undefined),
        ackedPerSecond: rates?.ackedPerSecond.get(topic) ?? (rates ? 0 : undefined),
        groups: [],
      };
      rows.set(topic, r);
    }
    return r;
  };
  for (const t of topics) {
    if (t.topic.endsWith(DLQ)) {
      row(t.topic.slice(0, -DLQ.length)).deadLetters += Object.values(t.depth).reduce((a, b) => a + b, 0);
      continue;
    }
    const r = row(t.topic);
    r.counts = { ...t.depth };
    r.oldestPendingAge = t.oldest_pending_age_seconds ?? undefined;
    r.managed = t.managed;
    r.groups = t.consumer_groups.map((g) => ({ group: g.consumer_group, counts: { ...g.depth } }));
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
