import { useQuery } from '@tanstack/react-query';
import { ApiError, api, unwrap } from '../api/client';
import type { components } from '../api/openapi';

type Schemas = components['schemas'];

/** The Kubernetes resource that owns a catalog row (docs/kubernetes-operator.md, "Managed by Kubernetes"). */
export type ManagedBy = Schemas['ManagedBy'];
export type TopicConfig = Schemas['TopicConfig'];
/** The settable fields: a GET answer is not a PUT body (unknown fields such as `topic` are refused). */
export type TopicConfigBody = Required<Schemas['TopicConfigRequest']>;
export type TopicSchema = Schemas['TopicSchema'];
/** What an unset setting means on this service (`defaults` of GET /api/topic-configs). */
export type TopicConfigDefaults = Schemas['TopicConfigDefaults'];

/** Keys under the list's key (`['topic-configs']`), so invalidating the list refreshes the single rows too. */
export const topicKeys = {
  configs: ['topic-configs'] as const,
  config: (topic: string) => ['topic-configs', topic] as const,
  schemas: ['topic-schemas'] as const,
  schema: (topic: string) => ['topic-schemas', topic] as const,
};

/** A 404 means "none yet" (a topic without configuration or schema), not a failure. */
export async function orNull<T>(call: Promise<T>): Promise<T | null> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

export function useTopicConfig(topic: string) {
  return useQuery({
    queryKey: topicKeys.config(topic),
    queryFn: (): Promise<TopicConfig | null> => orNull(unwrap(api.GET('/api/topic-configs/{topic}', { params: { path: { topic } } }))),
    enabled: topic !== '',
  });
}

export function useTopicSchema(topic: string) {
  return useQuery({
    queryKey: topicKeys.schema(topic),
    queryFn: (): Promise<TopicSchema | null> => orNull(unwrap(api.GET('/api/topic-schemas/{topic}', { params: { path: { topic } } }))),
    enabled: topic !== '',
  });
}

export function useTopicConfigs() {
  return useQuery({ queryKey: topicKeys.configs, queryFn: (): Promise<Schemas['TopicConfigList']> => unwrap(api.GET('/api/topic-configs')) });
}

export function useTopicSchemas() {
  return useQuery({ queryKey: topicKeys.schemas, queryFn: (): Promise<Schemas['TopicSchemaList']> => unwrap(api.GET('/api/topic-schemas')) });
}

/** How people read a manager, as kubectl names a resource: `TopicConfig team-a/orders`. */
export const describeManager = (m: ManagedBy): string => `${m.kind} ${m.namespace}/${m.name}`;
