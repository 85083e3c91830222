import { useQuery } from '@tanstack/react-query';
import { useMemo, useRef } from 'react';
import { api, ApiError, fetchText, unwrap } from '../api/client';
import { fetchAllTopics, topicsKey } from '../api/topics';
import { ratesBetween, snapshotFrom, type MetricsSnapshot, type TopicRates } from './metrics';
import { backlog, topicRows, type OrderingStatsRow, type TopicRow } from './topic-rows';

/**
 * Live numbers refresh this often without a reload. Depths, groups and the oldest pending age come from
 * /api/topics (exact), ordering keys from /api/stats, rates from the counters of /metrics.
 */
export const REFRESH_MS = 3_000;

/**
 * Polls every `ms`, but not with a token the service refused: a 401 opens the sign-in dialog, and someone who
 * closes it should not send a refused request every few seconds. Signing in again refetches, and polling
 * resumes with the first answer.
 */
const everyUnlessUnauthorized =
  (ms: number) =>
  (query: { state: { error: unknown } }): number | false =>
    query.state.error instanceof ApiError && query.state.error.status === 401 ? false : ms;

export interface Overview {
  rows: TopicRow[] | undefined;
  /** Whether any topic has ordering keys: the table has a column for them only then. */
  hasOrdering: boolean;
  /** The topic list's error (GET /api/topics). */
  statsError: unknown;
  metricsError: unknown;
  /** The ordering keys' error (GET /api/stats). */
  orderingError: unknown;
  /** When the topic list last arrived (ms), for the depth history. */
  statsAt: number;
  depths: Map<string, number> | undefined;
}

export function useOverview(): Overview {
  const topics = useQuery({
    queryKey: topicsKey,
    queryFn: fetchAllTopics,
    refetchInterval: everyUnlessUnauthorized(REFRESH_MS),
  });
  // Only for the ordering keys, which /api/topics does not count.
  const stats = useQuery({
    queryKey: ['stats'],
    queryFn: () => unwrap(api.GET('/api/stats')),
    refetchInterval: everyUnlessUnauthorized(REFRESH_MS),
  });
  // Each scrape keeps the previous one: rates are the counters' change between the two.
  const previous = useRef<{ current?: MetricsSnapshot; rates?: TopicRates }>({});
  const metrics = useQuery({
    queryKey: ['metrics-overview'],
    queryFn: async () => {
      const snapshot = snapshotFrom(await fetchText('/metrics'), Date.now());
      const rates = ratesBetween(previous.current.current, snapshot);
      previous.current = { current: snapshot, rates };
      return { snapshot, rates };
    },
    refetchInterval: everyUnlessUnauthorized(REFRESH_MS),
    staleTime: 0,
  });

  // A service from before ordering keys answers without the list: nothing is shown for them then.
  const ordering = useMemo(() => {
    const list = (stats.data as { ordering?: unknown } | undefined)?.ordering;
    return Array.isArray(list) ? (list as OrderingStatsRow[]) : [];
  }, [stats.data]);
  const rows = useMemo(() => (topics.data ? topicRows(topics.data, metrics.data?.rates, ordering) : undefined), [topics.data, metrics.data, ordering]);
  const depths = useMemo(() => (rows ? new Map(rows.map((r) => [r.topic, backlog(r)])) : undefined), [rows]);
  const hasOrdering = useMemo(() => rows?.some((r) => r.ordering !== undefined || r.groups.some((g) => g.ordering !== undefined)) ?? false, [rows]);
  return { rows, hasOrdering, statsError: topics.error, metricsError: metrics.error, orderingError: stats.error, statsAt: topics.dataUpdatedAt, depths };
}
