import type { Knex } from 'knex';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import type { MetricsRegistry } from '../metrics/registry.js';
import { Catalog } from '../queue/catalog.js';
import { ConsumerGroupService } from '../queue/consumer-groups.js';
import { TopicService } from '../queue/topics.js';
import { TopicSignals } from '../queue/topic-signals.js';
import { DeleteSchedule } from '../reapers/delete-schedule.js';
import { createDb, migrate, ping } from '../store/db.js';
import type { ControllerDomain } from './kinds/kind.js';

export interface DomainRuntime extends ControllerDomain {
  db: Knex;
  deleteSchedule: DeleteSchedule;
  close(): Promise<void>;
}

/** The same database, migrations and domain services as `conveyor serve`, without any transport. */
async function openDomain(config: Config, logger: Logger, metrics: MetricsRegistry): Promise<DomainRuntime> {
  const db = createDb({ url: config.db.url, poolSize: Math.min(config.db.pool_size, 4) });
  try {
    await migrate(db);
    const catalog = new Catalog(db, config.queue.config_refresh_interval, logger);
    await catalog.start();
    return {
      db,
      topics: new TopicService({ db, catalog, metrics }),
      consumerGroups: new ConsumerGroupService({ db, catalog, signals: new TopicSignals() }),
      deleteSchedule: new DeleteSchedule(db, config.queue.delete_reaper_schedule),
      close: async () => {
        catalog.stop();
        await db.destroy();
      },
    };
  } catch (err) {
    await db.destroy().catch(() => {});
    throw err;
  }
}

/**
 * Connects in the background and keeps trying (capped backoff), so a controller started while the database
 * is down runs anyway: its resources report DatabaseError until the connection comes.
 */
export class DomainConnection {
  private runtime: DomainRuntime | undefined;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private connecting: Promise<void> | undefined;

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
    private readonly metrics: MetricsRegistry,
    private readonly onConnected: () => void,
  ) {}

  get current(): DomainRuntime | undefined {
    return this.runtime;
  }

  start(): void {
    this.connecting = this.connect(0);
  }

  /** Whether the database answers right now (for /readyz). */
  async healthy(timeoutMs: number): Promise<boolean> {
    if (!this.runtime) return false;
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs).unref());
    return Promise.race([ping(this.runtime.db), timeout]).then(
      () => true,
      () => false,
    );
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.connecting;
    await this.runtime?.close();
  }

  private async connect(failures: number): Promise<void> {
    if (this.stopped) return;
    try {
      this.runtime = await openDomain(this.config, this.logger, this.metrics);
      if (failures > 0) this.logger.info({ failures }, 'database reachable again');
      this.onConnected();
    } catch (err) {
      const delay = Math.min(1000 * 2 ** failures, 30_000);
      if (failures === 0 || failures % 10 === 0) this.logger.warn({ err: { message: (err as Error).message, code: (err as { code?: string }).code }, retryInMs: delay }, 'cannot reach the database; retrying');
      await new Promise<void>((resolve) => {
        this.timer = setTimeout(resolve, delay);
      });
      return this.connect(failures + 1);
    }
  }
}
