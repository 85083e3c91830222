import { useQueries, useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import type { components } from '../api/openapi';
import type { ManagedBy } from '../topics/api';

type Schemas = components['schemas'];

export const groupKeys = {
  list: (topic: string) => ['consumer-groups', topic] as const,
  one: (topic: string, group: string) => ['consumer-groups', topic, group] as const,
};

export function useGroups(topic: string) {
  return useQuery({
    queryKey: groupKeys.list(topic),
    queryFn: (): Promise<Schemas['ConsumerGroupList']> => unwrap(api.GET('/api/topics/{topic}/consumer-groups', { params: { path: { topic } } })),
    enabled: topic !== '',
  });
}

/** Who manages each group (the list holds names only; one GET per group says whether Kubernetes owns it). */
export function useGroupManagers(topic: string, groups: string[]): Map<string, ManagedBy | null> {
  const results = useQueries({
    queries: groups.map((group) => ({
      queryKey: groupKeys.one(topic, group),
      queryFn: (): Promise<Schemas['ConsumerGroup']> =>
        unwrap(api.GET('/api/topics/{topic}/consumer-groups/{group}', { params: { path: { topic, group } } })),
    })),
  });
  return new Map(groups.map((group, i) => [group, results[i]?.data?.managed_by ?? null]));
}

/** Delivery counts by group and status: the `/api/stats` `consumer_groups` entries of this topic. */
export function useGroupDepths(topic: string): { depths: Map<string, Map<string, number>>; error: unknown } {
  const stats = useQuery({ queryKey: ['stats'], queryFn: (): Promise<Schemas['Stats']> => unwrap(api.GET('/api/stats')), enabled: topic !== '' });
  const depths = new Map<string, Map<string, number>>();
  for (const row of stats.data?.consumer_groups ?? []) {
    if (row.topic !== topic) continue;
    const byStatus = depths.get(row.consumer_group) ?? new Map<string, number>();
    byStatus.set(row.status, (byStatus.get(row.status) ?? 0) + row.count);
    depths.set(row.consumer_group, byStatus);
  }
  return { depths, error: stats.error };
}
