import { useQuery } from '@tanstack/react-query';
import { useMemo, useRef } from 'react';
import { api, ApiError, fetchText, unwrap } from '../api/client';
import { ratesBetween, snapshotFrom, type MetricsSnapshot, type TopicRates } from './metrics';
import { backlog, topicRows, type OrderingStatsRow, type StatsRow, type TopicRow } from './topic-rows';

/**
 * Live numbers refresh this often without a reload. Depths come from /api/stats (exact); the oldest pending
 * age from a /metrics gauge the service recomputes at most every 10 s, so it may lag by that much.
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
  statsError: unknown;
  metricsError: unknown;
  configsError: unknown;
  /** When the stats last arrived (ms), for the depth history. */
  statsAt: number;
  depths: Map<string, number> | undefined;
}

export function useOverview(): Overview {
  const stats = useQuery({
    queryKey: ['stats'],
    queryFn: () => unwrap(api.GET('/api/stats')),
    refetchInterval: everyUnlessUnauthorized(REFRESH_MS),
  });
  const configs = useQuery({
    queryKey: ['topic-configs'],
    queryFn: () => unwrap(api.GET('/api/topic-configs')),
    refetchInterval: everyUnlessUnauthorized(REFRESH_MS * 5),
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

  const statsRows = useMemo(() => {
    const data = stats.data as { topics?: StatsRow[]; consumer_groups?: StatsRow[] } | undefined;
    return data?.topics ? [...data.topics, ...(data.consumer_groups ?? [])] : undefined;
  }, [stats.data]);
  // A service from before ordering keys answers without the list: nothing is shown for them then.
  const ordering = useMemo(() => {
    const list = (stats.data as { ordering?: unknown } | undefined)?.ordering;
    return Array.isArray(list) ? (list as OrderingStatsRow[]) : [];
  }, [stats.data]);
  const configured = useMemo(() => ((configs.data as { items?: Array<{ topic: string }> } | undefined)?.items ?? []).map((c) => c.topic), [configs.data]);
  const rows = useMemo(
    () => (statsRows ? topicRows(statsRows, configured, metrics.data?.snapshot, metrics.data?.rates, ordering) : undefined),
    [statsRows, configured, metrics.data, ordering],
  );
  const depths = useMemo(() => (rows ? new Map(rows.map((r) => [r.topic, backlog(r)])) : undefined), [rows]);
  const hasOrdering = useMemo(() => rows?.some((r) => r.ordering !== undefined || r.groups.some((g) => g.ordering !== undefined)) ?? false, [rows]);
  return { rows, hasOrdering, statsError: stats.error, metricsError: metrics.error, configsError: configs.error, statsAt: stats.dataUpdatedAt, depths };
}
