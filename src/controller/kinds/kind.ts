import type { ConsumerGroupService } from '../../queue/consumer-groups.js';
import type { DeletionPolicy, ManagedBy } from '../../queue/managed-by.js';
import type { TopicService } from '../../queue/topics.js';
import type { KubeObject } from '../kube.js';

/** What the reconcilers call: the same domain services as the HTTP API. */
export interface ControllerDomain {
  topics: TopicService;
  consumerGroups: ConsumerGroupService;
}

export type KindName = 'TopicConfig' | 'TopicSchema' | 'ConsumerGroup';

/** The catalog row a resource claims. Two resources with one key conflict: the oldest wins. */
export interface Target {
  key: string;
  topic: string;
  group?: string;
  /** For messages: `topic "orders"`, `consumer group "billing" on topic "orders"`. */
  describe: string;
}

export interface Applied {
  changed: boolean;
  message: string;
  /** Fields of `status` besides conditions (e.g. the stored schema's version). */
  status: Record<string, unknown>;
}

/** One kind: how to name its row, how to apply a spec to it and how to let go of it. */
export interface KindHandler {
  kind: KindName;
  plural: string;
  /** Throws a DomainError (invalid_argument) when the spec names no valid row. */
  target(obj: KubeObject): Target;
  manager(domain: ControllerDomain, target: Target): Promise<ManagedBy | null>;
  apply(domain: ControllerDomain, obj: KubeObject, target: Target, manager: ManagedBy): Promise<Applied>;
  release(domain: ControllerDomain, target: Target, manager: ManagedBy, policy: DeletionPolicy): Promise<void>;
}

export const deletionPolicy = (obj: KubeObject): DeletionPolicy => (obj.spec?.deletionPolicy === 'Retain' ? 'Retain' : 'Delete');
