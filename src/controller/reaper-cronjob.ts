import type { V1CronJob } from '@kubernetes/client-node';
import type { Logger } from '../log/logger.js';
import type { DeleteSchedule } from '../reapers/delete-schedule.js';
import { describeKubeError, isNotFound, mergePatch, type KubeClients } from './kube.js';

export interface CronJobSyncOptions {
  clients: KubeClients;
  namespace: string;
  name: string;
  intervalMs: number;
  logger: Logger;
  /** Undefined while the database has not been reached yet. */
  schedule(): DeleteSchedule | undefined;
}

/**
 * Keeps the delete-reaper CronJob's schedule equal to the schedule stored through
 * PUT /api/admin/delete-reaper/schedule, whichever API pod took it: one settings read per interval, a patch
 * only when they differ. An empty schedule suspends the CronJob (a CronJob must keep a valid schedule).
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
    const { clients, namespace, name } = this.options;
    let effective: string;
    try {
      effective = cronJobSchedule(await schedule.effective());
    } catch {
      return this.problem('the database is unavailable');
    }
    try {
      const cronJob = await clients.batch.readNamespacedCronJob({ name, namespace });
      const patch = desiredPatch(cronJob, effective);
      if (patch) {
        await clients.batch.patchNamespacedCronJob({ name, namespace, body: { spec: patch } }, mergePatch);
        this.options.logger.info({ cronJob: name, schedule: effective, suspend: patch.suspend }, 'delete-reaper CronJob follows the stored schedule');
      }
      this.problem('');
    } catch (err) {
      this.problem(isNotFound(err) ? `CronJob ${namespace}/${name} not found` : describeKubeError(err));
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

function desiredPatch(cronJob: V1CronJob, schedule: string): { schedule?: string; suspend: boolean; concurrencyPolicy: string } | undefined {
  const spec = cronJob.spec;
  const suspend = schedule === '';
  const scheduleOk = suspend || spec?.schedule === schedule;
  if (scheduleOk && (spec?.suspend ?? false) === suspend && spec?.concurrencyPolicy === 'Forbid') return undefined;
  return { ...(suspend ? {} : { schedule }), suspend, concurrencyPolicy: 'Forbid' };
}
