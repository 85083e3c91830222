import type { Logger } from '../log/logger.js';
import { managerActor } from '../queue/audit.js';
import { DomainError } from '../queue/errors.js';
import { encodeManager, type ManagedBy } from '../queue/managed-by.js';
import { DatabaseBusy, DatabaseUnavailable } from '../store/errors.js';
import type { EventRecorder } from './events.js';
import type { InstanceScope } from './instance.js';
import { deletionPolicy, type ControllerDomain, type KindHandler, type Target } from './kinds/kind.js';
import { creationTime, describeKubeError, GROUP, isNotFound, mergePatch, VERSION, type Condition, type KubeClients, type KubeObject } from './kube.js';
import { ownershipRefusal, patternsRefusal, type TopicOwnership } from './topic-ownership.js';

export type ReconcileResult = 'success' | 'invalid' | 'conflict' | 'refused' | 'error';

/** Reasons of the Ready condition; docs/kubernetes-operator.md explains each to users. */
export type ReadyReason = 'Applied' | 'Invalid' | 'Conflict' | 'TopicNotAllowed' | 'TopicExists' | 'DatabaseError' | 'Error';

export interface Outcome {
  result: ReconcileResult;
  /** Try again with backoff (a transient failure); otherwise the next change or resync brings it back. */
  retry: boolean;
  ready?: boolean;
}

export interface ReconcilerDeps {
  clients: KubeClients;
  events: EventRecorder;
  logger: Logger;
  /** Undefined while the database has not been reached yet. */
  domain(): ControllerDomain | undefined;
  /** Every cached resource of this kind, across the watched namespaces. */
  objects(): Iterable<KubeObject>;
  /** The finalizer this controller holds (controller.instance). */
  scope: Pick<InstanceScope, 'finalizer' | 'legacyFinalizer'>;
  ownership: TopicOwnership;
  /** controller.adopt_existing: whether a resource takes over a row the HTTP API made. */
  adoptExisting: boolean;
}

interface Ready {
  status: 'True' | 'False';
  reason: ReadyReason;
  message: string;
}

const managerOf = (kind: string, obj: KubeObject): ManagedBy => ({ kind, namespace: obj.metadata.namespace ?? '', name: obj.metadata.name });
const describeObject = (kind: string, obj: KubeObject) => `${kind} ${obj.metadata.namespace}/${obj.metadata.name}`;

/**
 * The one reconciler all kinds share (the RabbitMQ topology operator's shape): finalizer, oldest-wins
 * ownership, apply through the domain, honest status, deduplicated events. A kind only says how to name,
 * apply and release its row (kinds/*.ts).
 */
export class Reconciler {
  constructor(
    readonly kind: KindHandler,
    private readonly deps: ReconcilerDeps,
  ) {}

  async reconcile(obj: KubeObject): Promise<Outcome> {
    if (obj.metadata.deletionTimestamp) return this.finalize(obj);
    let target: Target;
    try {
      target = this.kind.target(obj);
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      await this.report(obj, { status: 'False', reason: 'Invalid', message: err.message }, {}, false);
      return { result: 'invalid', retry: false, ready: false };
    }
    // Before anything is written, the finalizer included: a refused resource never held the row.
    const refusal = this.ownershipRefusal(obj, target);
    if (refusal) {
      await this.report(obj, { status: 'False', reason: 'TopicNotAllowed', message: refusal }, {}, false);
      return { result: 'refused', retry: false, ready: false };
    }
    const domain = this.deps.domain();
    if (!domain) return this.databaseDown(obj);
    obj = await this.ensureFinalizer(obj);

    const winner = this.winnerFor(target.key);
    if (winner && winner.metadata.uid !== obj.metadata.uid) {
      const message = `${target.describe} is already managed by ${describeObject(this.kind.kind, winner)}, the oldest ${this.kind.kind} for it; delete one of the two`;
      await this.report(obj, { status: 'False', reason: 'Conflict', message }, {}, false);
      return { result: 'conflict', retry: false, ready: false };
    }

    const manager = managerOf(this.kind.kind, obj);
    try {
      const { exists, manager: current } = await this.kind.holder(domain, target);
      if (exists && !current && !this.deps.adoptExisting) {
        const message = `${target.describe} already has settings made through the HTTP API, and controller.adopt_existing is false; delete them through the API (or set adopt_existing) for this resource to take over`;
        await this.report(obj, { status: 'False', reason: 'TopicExists', message }, {}, false);
        return { result: 'refused', retry: false, ready: false };
      }
      // This resource is the oldest for the row: a previous manager is gone (or younger), so release it first.
      if (current && encodeManager(current) !== encodeManager(manager)) await this.kind.release(domain, target, current, 'Retain');
      const applied = await this.kind.apply(domain, obj, target, manager);
      // Only writes are recorded: a resync that finds the row as the spec says changes nothing.
      if (applied.changed) {
        await domain.audit.record({ actor: managerActor(manager), action: this.kind.audit.apply, ...auditWhere(target), ok: true, details: applied.details });
      }
      await this.report(obj, { status: 'True', reason: 'Applied', message: applied.message }, applied.status, applied.changed);
      return { result: 'success', retry: false, ready: true };
    } catch (err) {
      return this.failed(obj, err);
    }
  }

  private async finalize(obj: KubeObject): Promise<Outcome> {
    const own = this.ownFinalizers(obj);
    if (own.length === 0) return { result: 'success', retry: false };
    let target: Target | undefined;
    try {
      target = this.kind.target(obj);
    } catch {
      // A spec that names no valid row never wrote one, unless the kind can still name what it wrote.
      try {
        target = this.kind.releaseTarget?.(obj);
      } catch {
        target = undefined;
      }
    }
    if (target) {
      const domain = this.deps.domain();
      if (!domain) return this.databaseDown(obj);
      try {
        await this.letGo(domain, obj, target);
      } catch (err) {
        return this.failed(obj, err);
      }
    }
    await this.writeFinalizers(obj, (obj.metadata.finalizers ?? []).filter((f) => !own.includes(f)));
    return { result: 'success', retry: false };
  }

  /**
   * Releases the row of a deleted resource that manages it. While another live resource claims the row, the
   * row is handed over (kept, its manager cleared) whatever the deletionPolicy: deleting it first would drop a
   * consumer group's deliveries or restart a schema's versions before the successor, queued by the same
   * change, applies its own spec onto it.
   */
  private async letGo(domain: ControllerDomain, obj: KubeObject, target: Target): Promise<void> {
    const manager = managerOf(this.kind.kind, obj);
    const { manager: current } = await this.kind.holder(domain, target);
    if (!current || encodeManager(current) !== encodeManager(manager)) return;
    const successor = this.winnerFor(target.key);
    const policy = successor ? 'Retain' : deletionPolicy(obj);
    await this.kind.release(domain, target, manager, policy);
    await domain.audit.record({
      actor: managerActor(manager),
      action: policy === 'Delete' ? this.kind.audit.delete : this.kind.audit.release,
      ...auditWhere(target),
      ok: true,
      details: target.group ? { consumer_group: target.group } : {},
    });
    if (successor) {
      const message = `${target.describe}: kept and handed over to ${describeObject(this.kind.kind, successor)}, the next oldest ${this.kind.kind} for it`;
      await this.deps.events.record(obj, 'Normal', 'HandedOver', message);
    } else {
      await this.deps.events.record(obj, 'Normal', policy === 'Delete' ? 'Deleted' : 'Released', `${target.describe}: ${policy === 'Delete' ? 'removed' : 'kept and released to the HTTP API'} (deletionPolicy ${policy})`);
    }
  }

  /** The oldest live resource of this kind claiming `key` (ties: namespace, then name). */
  private winnerFor(key: string): KubeObject | undefined {
    let winner: KubeObject | undefined;
    for (const candidate of this.deps.objects()) {
      if (candidate.metadata.deletionTimestamp) continue;
      let claimed: Target;
      try {
        claimed = this.kind.target(candidate);
      } catch {
        continue;
      }
      if (claimed.key !== key || this.ownershipRefusal(candidate, claimed)) continue;
      if (!winner || compareAge(candidate, winner) < 0) winner = candidate;
    }
    return winner;
  }

  private async failed(obj: KubeObject, err: unknown): Promise<Outcome> {
    if (err instanceof DomainError && err.code !== 'unavailable' && err.code !== 'conflict') {
      await this.report(obj, { status: 'False', reason: 'Invalid', message: err.message }, {}, false);
      return { result: 'invalid', retry: false, ready: false };
    }
    // A database that cannot serve, or that kept refusing (conflicts, lock waits, a Galera node not ready: the
    // store's retries ran out), is one transient condition for a resource: nothing is wrong with the resource,
    // the key is retried with backoff and recovers by itself, so its status says DatabaseError, not Error with
    // a "reconcile failed" line per key. DomainError('unavailable') is a service that cannot take the request
    // right now (shutting down, a reaper run in progress): the same answer.
    if (err instanceof DatabaseUnavailable || err instanceof DatabaseBusy || (err instanceof DomainError && err.code === 'unavailable')) return this.databaseDown(obj);
    const message = err instanceof DomainError ? err.message : 'reconcile failed; retrying (see the controller log)';
    this.deps.logger.error({ err, resource: describeObject(this.kind.kind, obj) }, 'reconcile failed');
    await this.report(obj, { status: 'False', reason: 'Error', message }, {}, false).catch(() => {});
    return { result: 'error', retry: true, ready: false };
  }

  private async databaseDown(obj: KubeObject): Promise<Outcome> {
    await this.report(obj, { status: 'False', reason: 'DatabaseError', message: 'the database is unavailable; retrying' }, {}, false).catch(() => {});
    return { result: 'error', retry: true, ready: false };
  }

  private async ensureFinalizer(obj: KubeObject): Promise<KubeObject> {
    const { finalizer } = this.deps.scope;
    if (obj.metadata.finalizers?.includes(finalizer)) return obj;
    return this.writeFinalizers(obj, [...(obj.metadata.finalizers ?? []), finalizer]);
  }

  /** The finalizers of `obj` this controller removes when it has let go of the rows. */
  private ownFinalizers(obj: KubeObject): string[] {
    const { finalizer, legacyFinalizer } = this.deps.scope;
    return (obj.metadata.finalizers ?? []).filter((f) => f === finalizer || f === legacyFinalizer);
  }

  /** A resource outside its namespace's topic patterns (controller.topic_ownership) is never applied, nor counted as a claimant. */
  private ownershipRefusal(obj: KubeObject, target: Target): string | undefined {
    const namespace = obj.metadata.namespace ?? '';
    if (target.topicPatterns) return patternsRefusal(this.deps.ownership, namespace, target.topicPatterns);
    return ownershipRefusal(this.deps.ownership, namespace, target.topic);
  }

  /** A replace carrying the cached resourceVersion: a stale cache gets 409 and the key is retried. */
  private async writeFinalizers(obj: KubeObject, finalizers: string[]): Promise<KubeObject> {
    const { metadata } = obj;
    try {
      return (await this.deps.clients.custom.replaceNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: metadata.namespace ?? '',
        plural: this.kind.plural,
        name: metadata.name,
        body: { ...obj, metadata: { ...metadata, finalizers } },
      })) as KubeObject;
    } catch (err) {
      if (isNotFound(err)) return obj;
      throw err;
    }
  }

  /**
   * Writes status only when it differs from what the resource shows, and records an Event when the Ready
   * condition changes or the rows were written: a resync that finds everything in place writes nothing.
   */
  private async report(obj: KubeObject, ready: Ready, fields: Record<string, unknown>, rowsChanged: boolean): Promise<void> {
    const generation = obj.metadata.generation;
    const previous = obj.status?.conditions?.find((c) => c.type === 'Ready');
    const conditionChanged = previous?.status !== ready.status || previous?.reason !== ready.reason || previous?.message !== ready.message;
    const condition: Condition = {
      type: 'Ready',
      ...ready,
      lastTransitionTime: previous && previous.status === ready.status ? previous.lastTransitionTime : new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      observedGeneration: generation,
    };
    const status = { ...fields, observedGeneration: generation, conditions: [condition] };
    const unchanged =
      !conditionChanged &&
      obj.status?.observedGeneration === generation &&
      previous?.observedGeneration === generation &&
      Object.entries(fields).every(([field, value]) => obj.status?.[field] === value);
    if (!unchanged) {
      try {
        await this.deps.clients.custom.patchNamespacedCustomObjectStatus(
          { group: GROUP, version: VERSION, namespace: obj.metadata.namespace ?? '', plural: this.kind.plural, name: obj.metadata.name, body: { status } },
          mergePatch,
        );
      } catch (err) {
        if (isNotFound(err)) return;
        this.deps.logger.warn({ reason: describeKubeError(err), resource: describeObject(this.kind.kind, obj) }, 'could not write status');
        throw err;
      }
    }
    if (conditionChanged || rowsChanged) {
      await this.deps.events.record(obj, ready.status === 'True' ? 'Normal' : 'Warning', ready.reason, ready.message);
    }
  }
}

/** An audit record's topic and target: the row's topic, or for grants the principal (no single topic). */
const auditWhere = (target: Target) => (target.auditTarget === undefined ? { topic: target.topic, target: target.topic } : { topic: null, target: target.auditTarget });

function compareAge(a: KubeObject, b: KubeObject): number {
  return (
    creationTime(a) - creationTime(b) ||
    (a.metadata.namespace ?? '').localeCompare(b.metadata.namespace ?? '') ||
    a.metadata.name.localeCompare(b.metadata.name)
  );
}
