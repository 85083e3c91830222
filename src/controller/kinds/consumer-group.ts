import { assertConsumerGroupName } from '../../queue/consumer-group-names.js';
import { assertNotDeadLetterTopic, assertTopicName } from '../../queue/topic-names.js';
import type { KindHandler } from './kind.js';

export const consumerGroupKind: KindHandler = {
  kind: 'ConsumerGroup',
  plural: 'consumergroups',
  audit: { apply: 'consumer_group.register', delete: 'consumer_group.unregister', release: 'consumer_group.release' },
  target(obj) {
    const topic = assertNotDeadLetterTopic(assertTopicName(obj.spec?.topic));
    const group = assertConsumerGroupName(obj.spec?.group ?? obj.metadata.name, 'group');
    return { key: `${topic}/${group}`, topic, group, describe: `consumer group "${group}" on topic "${topic}"` };
  },
  async holder(domain, target) {
    try {
      return { exists: true, manager: (await domain.consumerGroups.get(target.topic, target.group)).managed_by };
    } catch (err) {
      if ((err as { code?: string }).code === 'not_found') return { exists: false, manager: null };
      throw err;
    }
  },
  async apply(domain, _obj, target, manager) {
    const { changed } = await domain.consumerGroups.apply(target.topic, target.group, manager);
    return {
      changed,
      message: `consumer group "${target.group}" registered on topic "${target.topic}"`,
      status: { topic: target.topic, group: target.group },
      details: { consumer_group: target.group },
    };
  },
  release: (domain, target, manager, policy) => domain.consumerGroups.release(target.topic, target.group, manager, policy),
};
