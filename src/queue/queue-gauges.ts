import type { Knex } from 'knex';
import { countByStatus, oldestPendingCreatedAt, type StatusCount } from '../store/messages/browse.js';

type Snapshot = { depth: StatusCount[]; oldestPendingAgeSeconds: Map<string, number> };

/**
 * Feeds conveyor_queue_depth and conveyor_oldest_pending_age_seconds. A scrape reuses a snapshot younger
 * than `maxAgeMs`, so however often Prometheus (or several) scrape, the database sees at most one
 * index-only GROUP BY and one index seek per topic per period.
 */
export class QueueGauges {
  private cached: { at: number; snapshot: Snapshot } | undefined;
  private inFlight: Promise<Snapshot> | undefined;

  constructor(
    private readonly db: Knex,
    private readonly maxAgeMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  async snapshot(): Promise<Snapshot> {
    if (this.cached && this.now() - this.cached.at < this.maxAgeMs) return this.cached.snapshot;
    this.inFlight ??= this.load().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async load(): Promise<Snapshot> {
    const depth = await countByStatus(this.db);
    const pendingTopics = depth.filter((d) => d.status === 'pending' && d.count > 0).map((d) => d.topic);
    const oldest = await oldestPendingCreatedAt(this.db, pendingTopics);
    const now = this.now();
    const ages = new Map([...oldest].map(([topic, createdAt]) => [topic, Math.max(0, (now - createdAt) / 1000)]));
    const snapshot = { depth, oldestPendingAgeSeconds: ages };
    this.cached = { at: now, snapshot };
    return snapshot;
  }
}
