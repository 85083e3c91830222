import { V1MicroTime, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from '../log/logger.js';
import { describeKubeError, isConflict, isNotFound, type KubeClients } from './kube.js';

export interface LeaderElectionOptions {
  clients: KubeClients;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  logger: Logger;
  onStartedLeading(): void;
  onStoppedLeading(): void;
}

interface ObservedRecord {
  holder: string;
  renewTime: string;
  resourceVersion: string;
}

/**
 * Leader election on a coordination.k8s.io/v1 Lease with client-go's algorithm: a follower takes the lease
 * when its record has not changed for a whole lease duration by the follower's own clock (so clock skew
 * between pods does not matter); the leader renews every retry period and steps down when it could not renew
 * within the renew deadline; on shutdown it releases the lease (empty holder) so a follower takes over at once.
 */
export class LeaderElector {
  private leading = false;
  private stopped = false;
  private observed: ObservedRecord | undefined;
  private observedAt = 0;
  private lastRenew = 0;
  private timer: NodeJS.Timeout | undefined;
  private failedRequests = 0;
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly options: LeaderElectionOptions) {}

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.schedule(0);
  }

  /** Stops campaigning; a leader releases the lease first so the next replica need not wait for it to expire. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    if (!this.leading) return;
    this.setLeading(false);
    try {
      // Bounded like a renew: a shutdown must not wait on an API server that does not answer.
      await withTimeout(this.release(), this.options.renewDeadlineMs);
    } catch (err) {
      this.options.logger.warn({ reason: describeKubeError(err) }, 'could not release the leader lease; the next leader waits for it to expire');
    }
  }

  private async release(): Promise<void> {
    const lease = await this.read();
    if (lease?.spec?.holderIdentity !== this.options.identity) return;
    const now = new V1MicroTime();
    lease.spec = { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now };
    await this.options.clients.coordination.replaceNamespacedLease({ name: this.options.name, namespace: this.options.namespace, body: lease });
    this.options.logger.info({ lease: this.options.name }, 'released the leader lease');
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    // client-go's jitter on the retry period, so candidates do not collide in lockstep.
    this.timer = setTimeout(() => {
      this.running = this.tick().finally(() => this.schedule(this.options.retryPeriodMs * (this.leading ? 1 : 1 + Math.random() * 0.2)));
    }, delayMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    let renewed = false;
    try {
      // A request the API server (or a network in between) accepts and never answers must not keep a leader
      // leading: a leader waits for its attempt only until its renew deadline, as client-go bounds each renew
      // by it, and steps down below. A candidate waits at most a lease duration. An attempt that answers late
      // changes nothing here; the next tick looks again.
      const waitMs = this.leading ? Math.max(0, this.lastRenew + this.options.renewDeadlineMs - Date.now()) : this.options.leaseDurationMs;
      renewed = await withTimeout(this.tryAcquireOrRenew(), waitMs);
      if (this.failedRequests > 0) this.options.logger.info({ failures: this.failedRequests }, 'leader election: the Kubernetes API answers again');
      this.failedRequests = 0;
    } catch (err) {
      // Once, then every 30th retry: an API server that is away for minutes must not flood the log.
      if (this.failedRequests++ % 30 === 0) this.options.logger.warn({ reason: describeKubeError(err), failures: this.failedRequests }, 'leader election: lease request failed');
    }
    if (renewed) {
      this.lastRenew = Date.now();
      if (!this.leading && !this.stopped) this.setLeading(true);
    } else if (this.leading && Date.now() - this.lastRenew >= this.options.renewDeadlineMs) {
      this.options.logger.warn({ lease: this.options.name }, 'leader election: could not renew the lease in time; stepping down');
      this.setLeading(false);
    }
  }

  private setLeading(leading: boolean): void {
    this.leading = leading;
    this.options.logger.info({ lease: this.options.name, identity: this.options.identity, leading }, leading ? 'became the leader' : 'stopped leading');
    if (leading) this.options.onStartedLeading();
    else this.options.onStoppedLeading();
  }

  private async read(): Promise<V1Lease | undefined> {
    try {
      return await this.options.clients.coordination.readNamespacedLease({ name: this.options.name, namespace: this.options.namespace });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { clients, name, namespace, identity } = this.options;
    const now = new V1MicroTime();
    const leaseDurationSeconds = Math.max(1, Math.round(this.options.leaseDurationMs / 1000));
    const lease = await this.read();
    if (!lease) {
      try {
        await clients.coordination.createNamespacedLease({
          namespace,
          body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace }, spec: { holderIdentity: identity, leaseDurationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 } },
        });
        return true;
      } catch (err) {
        if (isConflict(err)) return false;
        throw err;
      }
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const record: ObservedRecord = { holder, renewTime: String(spec.renewTime ?? ''), resourceVersion: lease.metadata?.resourceVersion ?? '' };
    if (!this.observed || this.observed.holder !== record.holder || this.observed.renewTime !== record.renewTime || this.observed.resourceVersion !== record.resourceVersion) {
      this.observed = record;
      this.observedAt = Date.now();
    }
    const heldByOther = holder !== '' && holder !== identity;
    const observedDurationMs = (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
    if (heldByOther && this.observedAt + observedDurationMs > Date.now()) return false;
    const takingOver = holder !== identity;
    lease.spec = {
      ...spec,
      holderIdentity: identity,
      leaseDurationSeconds,
      renewTime: now,
      acquireTime: takingOver ? now : spec.acquireTime ? new V1MicroTime(spec.acquireTime) : now,
      leaseTransitions: (spec.leaseTransitions ?? 0) + (takingOver && holder !== '' ? 1 : 0),
    };
    try {
      await clients.coordination.replaceNamespacedLease({ name, namespace, body: lease });
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }
}

/** The attempt, or a rejection once `ms` have passed without its answer. */
function withTimeout<T>(attempt: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([attempt, deadline]).finally(() => clearTimeout(timer));
}
