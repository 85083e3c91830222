import type { Knex } from 'knex';
import type { Logger } from '../log/logger.js';
import { RepeatedFailure } from '../log/repeated.js';
import { countDeliveriesByStatus, oldestPendingDeliveryCreatedAt, type DeliveryCount } from '../store/deliveries/backlog.js';
import { countByStatus, countDelayed, oldestPendingAvailableSince, type StatusCount } from '../store/messages/browse.js';

type Snapshot = {
  depth: StatusCount[];
  oldestPendingAgeSeconds: Map<string, number>;
  delayed: Map<string, number>;
  groupDepth: DeliveryCount[];
  groupOldestPendingAgeSeconds: Array<{ topic: string; consumer_group: string; ageSeconds: number }>;
};

/**
 * Feeds conveyor_queue_depth, conveyor_oldest_pending_age_seconds and conveyor_delayed_messages, and the
 * consumer-group forms of the first two. A scrape
 * reuses a snapshot younger than `maxAgeMs`, so however often Prometheus (or several) scrape, the database sees
 * at most two index-only GROUP BYs and one index seek per topic and per group with pending deliveries per period.
 *
 * The group forms exist because a fan-out message is `processing` from its first group's claim until every
 * group has settled it: a group nobody consumes any more leaves no trace in the topic's own figures.
 */
export class QueueGauges {
  private cached: { at: number; snapshot: Snapshot } | undefined;
  private inFlight: Promise<Snapshot> | undefined;
  private readonly failures: RepeatedFailure | undefined;

  constructor(
    private readonly db: Knex,
    private readonly maxAgeMs = 10_000,
    private readonly now: () => number = Date.now,
    logger?: Logger,
  ) {
    // Every scrape retries while the database is away: one line, then a count every 30 s.
    this.failures = logger && new RepeatedFailure(logger, { what: 'queue gauge snapshot', consequence: 'conveyor_queue_depth and conveyor_oldest_pending_age_seconds are not reported' });
  }

  async snapshot(): Promise<Snapshot> {
    if (this.cached && this.now() - this.cached.at < this.maxAgeMs) return this.cached.snapshot;
    this.inFlight ??= this.load().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async load(): Promise<Snapshot> {
    try {
      const snapshot = await this.read();
      this.failures?.ok();
      return snapshot;
    } catch (err) {
      this.failures?.fail(err);
      throw err;
    }
  }

  private async read(): Promise<Snapshot> {
    const depth = await countByStatus(this.db);
    const pendingTopics = depth.filter((d) => d.status === 'pending' && d.count > 0).map((d) => d.topic);
    const oldest = await oldestPendingAvailableSince(this.db, pendingTopics, this.now());
    const delayed = await countDelayed(this.db, pendingTopics, this.now());
    const groupDepth = await countDeliveriesByStatus(this.db);
    const pendingGroups = groupDepth.filter((d) => d.status === 'pending' && d.count > 0);
    const groupOldest = await oldestPendingDeliveryCreatedAt(this.db, pendingGroups);
    const now = this.now();
    const age = (createdAt: number) => Math.max(0, (now - createdAt) / 1000);
    const ages = new Map([...oldest].map(([topic, createdAt]) => [topic, age(createdAt)]));
    const groupAges = groupOldest.map(({ topic, consumer_group, createdAt }) => ({ topic, consumer_group, ageSeconds: age(createdAt) }));
    const snapshot = { depth, oldestPendingAgeSeconds: ages, delayed, groupDepth, groupOldestPendingAgeSeconds: groupAges };
    this.cached = { at: now, snapshot };
    return snapshot;
  }
}
