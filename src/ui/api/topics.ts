import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from './client';

/** Topic names the caller can see: those with messages (stats) and those with a configuration. */
export function useTopicNames(): string[] {
  const stats = useQuery({ queryKey: ['stats'], queryFn: () => unwrap(api.GET('/api/stats')) });
  const configs = useQuery({ queryKey: ['topic-configs'], queryFn: () => unwrap(api.GET('/api/topic-configs')) });
  const names = new Set<string>();
  for (const row of ((stats.data as { topics?: Array<{ topic: string }> } | undefined)?.topics ?? [])) names.add(row.topic);
  for (const row of ((configs.data as { items?: Array<{ topic: string }> } | undefined)?.items ?? [])) names.add(row.topic);
  return [...names].sort();
}
