import { HealthImplementation, type ServingStatus } from 'grpc-health-check';
import type { Knex } from 'knex';
import { checkDatabaseReady } from '../store/galera-checks.js';

const CHECK_INTERVAL_MS = 2000;
const PING_TIMEOUT_MS = 1000;
const SERVICES = ['', 'queue.QueueService'];

/**
 * grpc.health.v1.Health: SERVING only while the database answers (and, on a Galera cluster, while its node
 * says wsrep_ready = ON), re-checked every couple of seconds.
 */
export class DatabaseHealth {
  readonly implementation = new HealthImplementation(Object.fromEntries(SERVICES.map((s) => [s, 'NOT_SERVING' as ServingStatus])));
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly db: Knex) {}

  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.check(), CHECK_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.set('NOT_SERVING');
  }

  private async check(): Promise<void> {
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), PING_TIMEOUT_MS).unref());
    try {
      await Promise.race([checkDatabaseReady(this.db), timeout]);
      if (!this.stopped) this.set('SERVING');
    } catch {
      this.set('NOT_SERVING');
    }
  }

  private set(status: ServingStatus): void {
    for (const service of SERVICES) this.implementation.setStatus(service, status);
  }
}
