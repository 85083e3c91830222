import type { V1CronJob, V1OwnerReference } from '@kubernetes/client-node';
import type { Logger } from '../log/logger.js';
import type { DeleteSchedule } from '../reapers/delete-schedule.js';
import type { CronJobTemplate } from './cronjob-template.js';
import { describeKubeError, isConflict, isNotFound, type KubeClients } from './kube.js';
import type { OwnDeployment } from './own-deployment.js';

export interface CronJobSyncOptions {
  clients: KubeClients;
  namespace: string;
  name: string;
  intervalMs: number;
  logger: Logger;
  template: CronJobTemplate;
  /** The controller's Deployment, the CronJob's owner. */
  owner: OwnDeployment;
  /** Undefined while the database has not been reached yet. */
  schedule(): DeleteSchedule | undefined;
}

/**
 * Owns the delete-reaper CronJob: creates it from the template when it is missing, and puts it back when
 * someone changed it, with the schedule stored through PUT /api/admin/delete-reaper/schedule (whichever API pod
 * took it). One settings read and one CronJob read per interval; a write only when they differ. An empty
 * schedule suspends the CronJob (a CronJob must keep a valid schedule). Nothing of it is rendered by Helm, so
 * the controller's writes are no drift a GitOps tool would see.
 */
export class ReaperCronJobSync {
  private timer: NodeJS.Timeout | undefined;
  /**
   * Which loop may schedule the next tick: a sync still running from a loop that stop() ended must not
   * reschedule after a quick start() began another, or two loops would run and stop() could end only one.
   */
  private loop = 0;
  private running: Promise<void> = Promise.resolve();
  private lastProblem = '';
  private ownerReported = false;
  /**
   * The resourceVersion our last write produced, and what we wanted then. The API server normalizes some values
   * (a quantity "0.5" comes back as "500m"): an object unchanged since our own write is taken as matching, or
   * such a value would be written again every interval.
   */
  private lastWrite: { resourceVersion: string; desired: string } | undefined;

  constructor(private readonly options: CronJobSyncOptions) {}

  start(): void {
    if (this.timer) return;
    const loop = ++this.loop;
    const tick = () => {
      this.running = this.sync().finally(() => {
        if (loop === this.loop) this.timer = setTimeout(tick, this.options.intervalMs).unref();
      });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  async stop(): Promise<void> {
    this.loop++;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  async sync(): Promise<void> {
    const schedule = this.options.schedule();
    if (!schedule) return;
    const { clients, namespace, name, logger } = this.options;
    let effective: string;
    try {
      effective = cronJobSchedule(await schedule.effective());
    } catch {
      return this.problem('the database is unavailable');
    }
    const search = await this.options.owner.search();
    // Created without an owner now, it would need one added later; a failure that may pass is waited out.
    if (!search.owner && !search.settled) return this.problem(search.reason);
    if (!search.owner && !this.ownerReported) {
      logger.warn({ cronJob: name, reason: search.reason }, 'the delete-reaper CronJob gets no owner reference: it stays when the controller is uninstalled');
      this.ownerReported = true;
    }
    try {
      let live: V1CronJob | undefined;
      try {
        live = await clients.batch.readNamespacedCronJob({ name, namespace });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      const desired = desiredCronJob(this.options.template, { name, namespace, schedule: effective, live, owner: search.owner });
      const desiredText = JSON.stringify(desired);
      if (!live) {
        const created = await clients.batch.createNamespacedCronJob({ namespace, body: desired });
        this.lastWrite = { resourceVersion: created.metadata?.resourceVersion ?? '', desired: desiredText };
        logger.info({ cronJob: name, schedule: desired.spec!.schedule, suspend: desired.spec!.suspend, owner: search.owner?.name }, 'delete-reaper CronJob created');
      } else {
        const differences = differingFields(live, desired, search.owner);
        const unchangedSinceOurWrite = this.lastWrite?.resourceVersion === live.metadata?.resourceVersion && this.lastWrite?.desired === desiredText;
        if (differences.length > 0 && !unchangedSinceOurWrite) {
          const replaced = await clients.batch.replaceNamespacedCronJob({ name, namespace, body: replacement(live, desired, search.owner) });
          this.lastWrite = { resourceVersion: replaced.metadata?.resourceVersion ?? '', desired: desiredText };
          // Field paths only: the values may hold anything a template puts in an environment variable.
          logger.info({ cronJob: name, schedule: desired.spec!.schedule, suspend: desired.spec!.suspend, fields: differences }, 'delete-reaper CronJob put back as the controller wants it');
        }
      }
      this.problem('');
    } catch (err) {
      // A conflict is someone else's write in between (or a create racing another): the next interval looks again.
      if (isConflict(err)) return;
      this.problem(describeKubeError(err));
    }
  }

  /** Logs a problem once, not once per interval, and when it clears. */
  private problem(problem: string): void {
    if (problem === this.lastProblem) return;
    if (problem) this.options.logger.warn({ cronJob: this.options.name, problem }, 'cannot sync the delete-reaper CronJob');
    else if (this.lastProblem) this.options.logger.info({ cronJob: this.options.name }, 'delete-reaper CronJob sync recovered');
    this.lastProblem = problem;
  }
}

/** CronJobs take five fields; a stored six-field schedule (leading seconds, accepted for in-process runs) loses its seconds. */
export function cronJobSchedule(stored: string): string {
  const fields = stored.trim().split(/\s+/).filter(Boolean);
  return fields.length === 6 ? fields.slice(1).join(' ') : fields.join(' ');
}

/** A CronJob needs a valid schedule even while suspended: keep the live one, else the template's. */
const PLACEHOLDER_SCHEDULE = '0 3 * * *';

function desiredCronJob(
  template: CronJobTemplate,
  at: { name: string; namespace: string; schedule: string; live: V1CronJob | undefined; owner: V1OwnerReference | undefined },
): V1CronJob {
  const suspend = at.schedule === '';
  const schedule = suspend ? (at.live?.spec?.schedule ?? template.spec.schedule ?? PLACEHOLDER_SCHEDULE) : at.schedule;
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: {
      name: at.name,
      namespace: at.namespace,
      labels: template.labels,
      annotations: template.annotations,
      ...(at.owner ? { ownerReferences: [at.owner] } : {}),
    },
    spec: { ...(template.spec as unknown as V1CronJob['spec'])!, schedule, suspend, concurrencyPolicy: 'Forbid' },
  };
}

/** Whether `live` holds every value of `want` (fields the API server added, such as defaults, are fine). */
function covers(live: unknown, want: unknown): boolean {
  if (want === undefined) return true;
  if (want === null) return live === null || live === undefined;
  if (Array.isArray(want)) return Array.isArray(live) && live.length === want.length && want.every((w, i) => covers(live[i], w));
  if (typeof want === 'object') {
    if (typeof live !== 'object' || live === null || Array.isArray(live)) return false;
    return Object.entries(want as Record<string, unknown>).every(([k, v]) => covers((live as Record<string, unknown>)[k], v));
  }
  // A number may come back as a string (a quantity) and the other way round.
  return String(live) === String(want);
}

/** The top-level fields where the live CronJob is not what the controller wants. */
function differingFields(live: V1CronJob, desired: V1CronJob, owner: V1OwnerReference | undefined): string[] {
  const fields: string[] = [];
  if (!covers(live.metadata?.labels ?? {}, desired.metadata!.labels)) fields.push('metadata.labels');
  if (!covers(live.metadata?.annotations ?? {}, desired.metadata!.annotations)) fields.push('metadata.annotations');
  if (owner && !(live.metadata?.ownerReferences ?? []).some((r) => r.uid === owner.uid && r.controller === true)) fields.push('metadata.ownerReferences');
  for (const [key, value] of Object.entries(desired.spec!)) {
    if (!covers((live.spec as unknown as Record<string, unknown>)?.[key], value)) fields.push(`spec.${key}`);
  }
  return fields;
}

/** The live object with the controller's labels, annotations, owner and spec (a replace, so fields it left out go). */
function replacement(live: V1CronJob, desired: V1CronJob, owner: V1OwnerReference | undefined): V1CronJob {
  const others = (live.metadata?.ownerReferences ?? []).filter((r) => r.controller !== true && r.uid !== owner?.uid);
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: {
      ...live.metadata,
      labels: { ...live.metadata?.labels, ...desired.metadata!.labels },
      annotations: { ...live.metadata?.annotations, ...desired.metadata!.annotations },
      ownerReferences: owner ? [...others, owner] : live.metadata?.ownerReferences,
    },
    spec: desired.spec,
  };
}
