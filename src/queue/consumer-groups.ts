import type { Knex } from 'knex';
import { getConsumerGroup, listConsumerGroups, registerConsumerGroup, unregisterConsumerGroup } from '../store/consumer-groups.js';
import { setManager } from '../store/managed-rows.js';
import type { Catalog } from './catalog.js';
import { assertConsumerGroupName } from './consumer-group-names.js';
import { conflict, notFound } from './errors.js';
import { assertManagedByOrFree, assertNotManaged, decodeManager, encodeManager, type DeletionPolicy, type ManagedBy } from './managed-by.js';
import type { TopicSignals } from './topic-signals.js';
import { assertNotDeadLetterTopic, assertTopicName } from './topic-names.js';

export interface ConsumerGroupServiceDeps {
  db: Knex;
  catalog: Catalog;
  signals: TopicSignals;
  now?: () => number;
}

const groupWhat = (topic: string, group: string) => `consumer group "${group}" on topic "${topic}"`;

/** Registration of consumer groups (docs/consumer-groups-replay.md); delivery itself is in fan-out.ts. */
export class ConsumerGroupService {
  private readonly now: () => number;

  constructor(private readonly deps: ConsumerGroupServiceDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Read from the database, not the cache: a registration on another instance shows at once. */
  list(topicName: unknown): Promise<string[]> {
    return listConsumerGroups(this.deps.db, assertTopicName(topicName));
  }

  /** One registration and who manages it (extension: GET /api/topics/:topic/consumer-groups/:group). */
  async get(topicName: unknown, group: unknown): Promise<{ topic: string; consumer_group: string; managed_by: ManagedBy | null }> {
    const topic = assertTopicName(topicName);
    const name = assertConsumerGroupName(group);
    const row = await getConsumerGroup(this.deps.db, topic, name);
    if (!row) throw notFound(`consumer group "${name}" is not registered on topic "${topic}"`);
    return { topic, consumer_group: name, managed_by: decodeManager(row.managed_by) };
  }

  async register(topicName: unknown, group: unknown): Promise<void> {
    const topic = assertNotDeadLetterTopic(assertTopicName(topicName));
    const name = assertConsumerGroupName(group);
    if (!(await registerConsumerGroup(this.deps.db, topic, name, this.now()))) {
      assertNotManaged((await getConsumerGroup(this.deps.db, topic, name))?.managed_by, groupWhat(topic, name));
      throw conflict(`consumer group "${name}" is already registered on topic "${topic}"`);
    }
    await this.registered(topic);
  }

  /** A name that could never be registered is 400, as on register and get (it reached the database before: a 500 on MySQL). */
  async unregister(topicName: unknown, group: unknown): Promise<void> {
    const topic = assertTopicName(topicName);
    const name = assertConsumerGroupName(group);
    if (!(await this.remove(topic, name, (current) => assertNotManaged(current, groupWhat(topic, name))))) {
      throw notFound(`consumer group "${name}" is not registered on topic "${topic}"`);
    }
  }

  /**
   * The controller's write: registers the group as POST would (adopting the topic's pending messages), or
   * adopts an existing registration nobody manages; nothing changes when `manager` already has it.
   */
  async apply(topicName: unknown, group: unknown, manager: ManagedBy): Promise<{ changed: boolean }> {
    const topic = assertNotDeadLetterTopic(assertTopicName(topicName));
    const name = assertConsumerGroupName(group, 'group');
    const owner = encodeManager(manager);
    for (;;) {
      const current = await getConsumerGroup(this.deps.db, topic, name);
      if (current?.managed_by === owner) return { changed: false };
      if (current) {
        assertManagedByOrFree(current.managed_by, owner, groupWhat(topic, name));
        if (!(await setManager(this.deps.db, 'consumer_groups', { topic, consumer_group: name }, owner, current.managed_by))) continue;
        await this.deps.catalog.changed();
        return { changed: true };
      }
      // Lost a race with a registration through HTTP: look again and adopt it.
      if (!(await registerConsumerGroup(this.deps.db, topic, name, this.now(), owner))) continue;
      await this.registered(topic);
      return { changed: true };
    }
  }

  /** The controller, when `manager` is deleted: Delete unregisters the group as DELETE would, Retain hands it to the HTTP API. */
  async release(topicName: unknown, group: unknown, manager: ManagedBy, policy: DeletionPolicy): Promise<void> {
    const topic = assertTopicName(topicName);
    const name = assertConsumerGroupName(group, 'group');
    const owner = encodeManager(manager);
    if (policy === 'Delete') {
      await this.remove(topic, name, (current) => assertManagedByOrFree(current, owner, groupWhat(topic, name)));
    } else if (await setManager(this.deps.db, 'consumer_groups', { topic, consumer_group: name }, '', owner)) {
      await this.deps.catalog.changed();
    }
  }

  private async registered(topic: string): Promise<void> {
    await this.deps.catalog.changed();
    this.deps.signals.signal(topic);
  }

  private async remove(topic: string, group: string, guard: (current: string | undefined) => void): Promise<boolean> {
    const replayable = this.deps.catalog.config(topic)?.replayable === true;
    if (!(await unregisterConsumerGroup(this.deps.db, topic, group, replayable, this.now(), guard))) return false;
    await this.deps.catalog.changed();
    return true;
  }
}
