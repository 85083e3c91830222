import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from './client';
import type { components } from './openapi';

export type TopicSummary = components['schemas']['TopicSummary'];

/** The API's largest page: a service with more topics than this is read in several pages. */
const PAGE = 200;

/**
 * Every topic the caller may read (`GET /api/topics`, every page): those with messages, a configuration, a
 * schema or consumer groups, with depths, the oldest pending age, groups and managers, in name order.
 */
export async function fetchAllTopics(): Promise<TopicSummary[]> {
  const items: TopicSummary[] = [];
  for (;;) {
    const page = await unwrap(api.GET('/api/topics', { params: { query: { limit: PAGE, offset: items.length } } }));
    items.push(...page.items);
    if (page.items.length === 0 || items.length >= page.total) return items;
  }
}

export const topicsKey = ['topics'] as const;

/** Topic names the caller can see, for the topic pickers (a datalist: any name may still be typed). */
export function useTopicNames(): string[] {
  const topics = useQuery({ queryKey: topicsKey, queryFn: fetchAllTopics });
  return (topics.data ?? []).map((t) => t.topic);
}
