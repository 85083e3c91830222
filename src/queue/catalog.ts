import type { Knex } from 'knex';
import type { Logger } from '../log/logger.js';
import { RepeatedFailure } from '../log/repeated.js';
import { listAllConsumerGroups } from '../store/consumer-groups.js';
import { catalogRevision } from '../store/settings.js';
import { listTopicConfigs, type TopicConfigRow } from '../store/topic-configs.js';
import { listTopicSchemas, type TopicSchemaRow } from '../store/topic-schemas.js';
import { compileSchema, type CompiledSchema } from './avro.js';

export interface CachedSchema {
  row: TopicSchemaRow;
  compiled: CompiledSchema;
}

/**
 * In-process copy of topic configurations and compiled schemas, so enqueue and dequeue never read them
 * from the database. Local changes reload at once; other instances' changes are seen by polling the
 * catalog revision (one primary-key read per `queue.config_refresh_interval`), and at once when the
 * instance that made them says so over Redis.
 */
export class Catalog {
  private configs = new Map<string, TopicConfigRow>();
  private schemas = new Map<string, CachedSchema>();
  private groups = new Map<string, string[]>();
  private revision = -1;
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private readonly listeners: Array<() => void> = [];
  private readonly ownChangeListeners: Array<() => void> = [];
  /** The poll runs every refresh interval (1 s): while the database is away, one line and a count every 30 s. */
  private readonly refreshFailures: RepeatedFailure;

  constructor(
    private readonly db: Knex,
    private readonly refreshIntervalSeconds: number,
    private readonly logger: Logger,
  ) {
    this.refreshFailures = new RepeatedFailure(logger, { what: 'catalog refresh', consequence: 'keeping the cached topic configuration' });
  }

  async start(): Promise<void> {
    await this.reload();
    this.timer = setInterval(() => void this.poll(), Math.max(50, this.refreshIntervalSeconds * 1000));
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Called by the catalog's own writers after they commit. */
  async changed(): Promise<void> {
    for (const listener of this.ownChangeListeners) listener();
    // A reload already in flight may have read the tables before the caller's commit: let it finish, then
    // load again, so the caller's own change is always in the cache when this resolves.
    await this.refreshing?.catch(() => {});
    await this.reload();
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** A writer of this instance changed the catalog (other instances may be told: src/pubsub/redis-peer-relay.ts). */
  onOwnChange(listener: () => void): void {
    this.ownChangeListeners.push(listener);
  }

  /** Another instance changed the catalog: look now rather than at the next poll. */
  refreshNow(): Promise<void> {
    return this.poll();
  }

  config(topic: string): TopicConfigRow | undefined {
    return this.configs.get(topic);
  }

  allConfigs(): TopicConfigRow[] {
    return [...this.configs.values()];
  }

  allSchemas(): CachedSchema[] {
    return [...this.schemas.values()];
  }

  schema(topic: string): CachedSchema | undefined {
    return this.schemas.get(topic);
  }

  /** The consumer groups registered on a topic; a topic with any is a fan-out topic. */
  groupsOf(topic: string): string[] {
    return this.groups.get(topic) ?? [];
  }

  hasAnyGroups(): boolean {
    return this.groups.size > 0;
  }

  /** Whether any topic archives its acknowledged messages (replayable). */
  hasReplayableTopics(): boolean {
    for (const config of this.configs.values()) if (config.replayable) return true;
    return false;
  }

  private async poll(): Promise<void> {
    try {
      if ((await catalogRevision(this.db)) !== this.revision) await this.reload();
      this.refreshFailures.ok();
    } catch (err) {
      this.refreshFailures.fail(err);
    }
  }

  private reload(): Promise<void> {
    // One reload at a time; a change during a reload is picked up by the next poll or the next changed().
    this.refreshing ??= this.load().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async load(): Promise<void> {
    const revision = await catalogRevision(this.db);
    const [configs, schemas, groups] = await Promise.all([listTopicConfigs(this.db), listTopicSchemas(this.db), listAllConsumerGroups(this.db)]);
    this.configs = new Map(configs.map((c) => [c.topic, c]));
    const byTopic = new Map<string, string[]>();
    for (const g of groups) byTopic.set(g.topic, [...(byTopic.get(g.topic) ?? []), g.consumer_group]);
    this.groups = byTopic;
    const compiled = new Map<string, CachedSchema>();
    for (const row of schemas) {
      try {
        compiled.set(row.topic, { row, compiled: compileSchema(row.schema_json) });
      } catch (err) {
        this.logger.error({ err, topic: row.topic }, 'stored schema no longer compiles; enqueues to this topic are not validated');
      }
    }
    this.schemas = compiled;
    this.revision = revision;
    for (const listener of this.listeners) listener();
  }
}
