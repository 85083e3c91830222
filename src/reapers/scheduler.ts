import { Cron } from 'croner';
import { cronOptions } from './cron-expression.js';
import type { Logger } from '../log/logger.js';
import { RepeatedFailure } from '../log/repeated.js';
import { DatabaseUnavailable } from '../store/errors.js';
import { DomainError } from '../queue/errors.js';
import type { DeleteSchedule } from './delete-schedule.js';
import type { ReaperKind, Reapers } from './reapers.js';

/** The latest first run of an interval reaper after start-up. */
const FIRST_RUN_MS = 5 * 60_000;

export interface ReaperSchedulerOptions {
  reapers: Reapers;
  schedule: DeleteSchedule;
  logger: Logger;
  /** Seconds; 0 turns the reaper off. */
  expiryIntervalSeconds: number;
  archiveIntervalSeconds: number;
}

/**
 * In-process reapers (reapers.mode: in-process): expiry and archive on intervals, delete on the stored or
 * configured cron. Schedule changes made on any instance arrive through `refresh()`, which the server calls
 * whenever the catalog revision moves (a PUT bumps it), so every instance follows within a poll interval.
 */
export class ReaperScheduler {
  private readonly timers: NodeJS.Timeout[] = [];
  private cron: Cron | undefined;
  private current = '';
  private stopped = false;
  private refreshing: Promise<void> = Promise.resolve();
  private readonly inFlight = new Set<Promise<void>>();
  /** Per reaper: a run failing every interval while the database is away logs once, then a count. */
  private readonly failures = new Map<ReaperKind, RepeatedFailure>();

  constructor(private readonly options: ReaperSchedulerOptions) {}

  private failuresOf(kind: ReaperKind): RepeatedFailure {
    let failures = this.failures.get(kind);
    if (!failures) {
      failures = new RepeatedFailure(this.options.logger, {
        what: `${kind} reaper run`,
        level: 'error',
        fields: { reaper: kind },
        // A lost database says enough in its message; anything else is a bug worth its stack.
        withStack: (err) => !(err instanceof DatabaseUnavailable),
      });
      this.failures.set(kind, failures);
    }
    return failures;
  }

  async start(): Promise<void> {
    this.every('expiry', this.options.expiryIntervalSeconds);
    this.every('archive', this.options.archiveIntervalSeconds);
    await this.refresh();
  }

  /** Re-reads the effective delete schedule and re-arms the cron when it changed. Calls are serialised. */
  refresh(): Promise<void> {
    this.refreshing = this.refreshing.then(() => this.applySchedule()).catch((err) => this.options.logger.warn({ err }, 'could not read the delete-reaper schedule'));
    return this.refreshing;
  }

  /** Stops the timers and waits for a run in progress, so shutdown never closes the pool under it. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
    this.cron?.stop();
    await Promise.all([...this.inFlight]);
  }

  private async applySchedule(): Promise<void> {
    const schedule = await this.options.schedule.effective();
    if (this.stopped || (schedule === this.current && (schedule === '' || this.cron))) return;
    this.cron?.stop();
    this.cron = undefined;
    this.current = schedule;
    if (schedule === '') return;
    try {
      this.cron = new Cron(schedule, { ...cronOptions(schedule), protect: true }, () => this.runScheduled('delete'));
      this.options.logger.info({ schedule }, 'delete reaper scheduled');
    } catch (err) {
      this.options.logger.error({ err, schedule }, 'delete reaper schedule is not a valid cron expression; the reaper is off');
    }
  }

  /**
   * Every `seconds`, the first run no later than FIRST_RUN_MS (plus up to a minute, so replicas started together
   * spread): an instance replaced more often than a long interval (the archive reaper's hour, a rollout a
   * day) would otherwise never run it, and retention would never happen.
   */
  private every(kind: ReaperKind, seconds: number): void {
    if (!(seconds > 0)) return;
    const intervalMs = seconds * 1000;
    const firstMs = intervalMs <= FIRST_RUN_MS ? intervalMs : FIRST_RUN_MS + Math.random() * 60_000;
    const first = setTimeout(() => {
      void this.runScheduled(kind);
      if (this.stopped) return;
      const timer = setInterval(() => void this.runScheduled(kind), intervalMs);
      timer.unref();
      this.timers.push(timer);
    }, firstMs);
    first.unref();
    this.timers.push(first);
  }

  private runScheduled(kind: ReaperKind): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const run = this.runOnce(kind).finally(() => this.inFlight.delete(run));
    this.inFlight.add(run);
    return run;
  }

  private async runOnce(kind: ReaperKind): Promise<void> {
    try {
      const { count, auditDeleted } = await this.options.reapers.run(kind, 0);
      this.failuresOf(kind).ok();
      this.options.logger.debug({ reaper: kind, count, auditDeleted }, 'reaper run');
    } catch (err) {
      // Another instance is running it right now: that run does the work (and the database answered).
      if (err instanceof DomainError && err.code === 'unavailable') return this.failuresOf(kind).ok();
      this.failuresOf(kind).fail(err);
    }
  }
}
