import type { Knex } from 'knex';
import { listConsumerGroups, registerConsumerGroup, unregisterConsumerGroup } from '../store/consumer-groups.js';
import type { Catalog } from './catalog.js';
import { assertConsumerGroupName } from './consumer-group-names.js';
import { conflict, invalid, notFound } from './errors.js';
import type { TopicSignals } from './topic-signals.js';
import { assertNotDeadLetterTopic, assertTopicName } from './topic-names.js';

export interface ConsumerGroupServiceDeps {
  db: Knex;
  catalog: Catalog;
  signals: TopicSignals;
  now?: () => number;
}

/** Registration of consumer groups (contract §4); delivery itself is in fan-out.ts. */
export class ConsumerGroupService {
  private readonly now: () => number;

  constructor(private readonly deps: ConsumerGroupServiceDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Read from the database, not the cache: a registration on another instance shows at once. */
  list(topicName: unknown): Promise<string[]> {
    return listConsumerGroups(this.deps.db, assertTopicName(topicName));
  }

  async register(topicName: unknown, group: unknown): Promise<void> {
    const topic = assertNotDeadLetterTopic(assertTopicName(topicName));
    const name = assertConsumerGroupName(group);
    if (!(await registerConsumerGroup(this.deps.db, topic, name, this.now()))) {
      throw conflict(`consumer group "${name}" is already registered on topic "${topic}"`);
    }
    await this.deps.catalog.changed();
    this.deps.signals.signal(topic);
  }

  async unregister(topicName: unknown, group: unknown): Promise<void> {
    const topic = assertTopicName(topicName);
    if (typeof group !== 'string' || group === '') throw invalid('consumer_group is required');
    const replayable = this.deps.catalog.config(topic)?.replayable === true;
    if (!(await unregisterConsumerGroup(this.deps.db, topic, group, replayable, this.now()))) {
      throw notFound(`consumer group "${group}" is not registered on topic "${topic}"`);
    }
    await this.deps.catalog.changed();
  }
}
