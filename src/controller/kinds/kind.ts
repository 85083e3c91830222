import type { Knex } from 'knex';
import type { AccessGrantService } from '../../auth/access-grants.js';
import type { GrantSpec } from '../../auth/users.js';
import type { AuditAction, AuditLog } from '../../queue/audit.js';
import type { ConsumerGroupService } from '../../queue/consumer-groups.js';
import type { DeletionPolicy, ManagedBy } from '../../queue/managed-by.js';
import type { TopicService } from '../../queue/topics.js';
import type { KubeObject } from '../kube.js';

/** What the reconcilers call: the same domain services as the HTTP API. */
export interface ControllerDomain {
  /** Read directly where the controller must see the database as it is now, not an instance's cache. */
  db: Knex;
  topics: TopicService;
  consumerGroups: ConsumerGroupService;
  /** The grants of service accounts' principals (ConveyorAccess). */
  access: AccessGrantService;
  /** Where the controller's writes are recorded, with the resource as the actor. */
  audit: AuditLog;
}

export type KindName = 'TopicConfig' | 'TopicSchema' | 'ConsumerGroup' | 'ConveyorAccess';

/** The catalog row a resource claims. Two resources with one key conflict: the oldest wins. */
export interface Target {
  key: string;
  topic: string;
  group?: string;
  /** For messages: `topic "orders"`, `consumer group "billing" on topic "orders"`. */
  describe: string;
  /**
   * Kinds that reach many topics through grant patterns (ConveyorAccess) rather than one `topic`: the patterns
   * controller.topic_ownership checks, and what their audit records name (`topic` is "" then).
   */
  topicPatterns?: string[];
  auditTarget?: string;
  /** ConveyorAccess: the spec's grants, validated as the HTTP API validates them. */
  grants?: GrantSpec[];
}

export interface Applied {
  changed: boolean;
  message: string;
  /** Fields of `status` besides conditions (e.g. the stored schema's version). */
  status: Record<string, unknown>;
  /** The audit record's details of a write (changed settings, schema version, group). */
  details?: Record<string, unknown>;
}

/** The row a target names as it stands: whether it exists, and which resource manages it (null: the HTTP API, or nobody). */
export interface Holder {
  exists: boolean;
  manager: ManagedBy | null;
}

/** One kind: how to name its row, how to apply a spec to it and how to let go of it. */
export interface KindHandler {
  kind: KindName;
  plural: string;
  /** The audit actions of a write, of a removal (deletionPolicy Delete) and of a hand-over (Retain). */
  audit: { apply: AuditAction; delete: AuditAction; release: AuditAction };
  /** Throws a DomainError (invalid_argument) when the spec names no valid row. */
  target(obj: KubeObject): Target;
  /**
   * The row a resource being deleted may hold when `target` refuses its spec: a kind whose spec can turn invalid
   * after it was applied (a ConveyorAccess's grants are mutable) still lets go of what it wrote.
   */
  releaseTarget?(obj: KubeObject): Target;
  holder(domain: ControllerDomain, target: Target): Promise<Holder>;
  apply(domain: ControllerDomain, obj: KubeObject, target: Target, manager: ManagedBy): Promise<Applied>;
  release(domain: ControllerDomain, target: Target, manager: ManagedBy, policy: DeletionPolicy): Promise<void>;
}

export const deletionPolicy = (obj: KubeObject): DeletionPolicy => (obj.spec?.deletionPolicy === 'Retain' ? 'Retain' : 'Delete');
