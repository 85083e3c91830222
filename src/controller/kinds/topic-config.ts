import { configChanges } from '../../queue/audit.js';
import { decodeManager } from '../../queue/managed-by.js';
import { getTopicConfig } from '../../store/topic-configs.js';
import type { TopicConfigInput } from '../../queue/topics.js';
import { assertNotDeadLetterTopic, assertTopicName } from '../../queue/topic-names.js';
import type { KindHandler } from './kind.js';

/** spec field -> the HTTP API's field, so both go through one validation. */
const FIELDS = {
  maxRetries: 'max_retries',
  messageTtlSeconds: 'message_ttl_seconds',
  maxDepth: 'max_depth',
  throughputLimit: 'throughput_limit',
  replayable: 'replayable',
  replayWindowSeconds: 'replay_window_seconds',
  deliveryDelaySeconds: 'delivery_delay_seconds',
  retryBackoffSeconds: 'retry_backoff_seconds',
  retryBackoffMaxSeconds: 'retry_backoff_max_seconds',
  visibilityTimeoutSeconds: 'visibility_timeout_seconds',
  receiveWaitSeconds: 'receive_wait_seconds',
  contentBasedDeduplication: 'content_based_deduplication',
} as const;

export const topicConfigKind: KindHandler = {
  kind: 'TopicConfig',
  plural: 'topicconfigs',
  audit: { apply: 'topic_config.set', delete: 'topic_config.delete', release: 'topic_config.release' },
  target(obj) {
    const topic = assertNotDeadLetterTopic(assertTopicName(obj.spec?.topic ?? obj.metadata.name));
    return { key: topic, topic, describe: `topic "${topic}"` };
  },
  async holder(domain, target) {
    const row = await getTopicConfig(domain.db, target.topic);
    return { exists: row !== null, manager: decodeManager(row?.managed_by ?? '') };
  },
  async apply(domain, obj, target, manager) {
    const input: TopicConfigInput = {};
    for (const [specField, apiField] of Object.entries(FIELDS)) input[apiField] = obj.spec?.[specField];
    const { changed, row, previous } = await domain.topics.applyConfig(target.topic, input, manager);
    return { changed, message: `topic configuration of "${target.topic}" applied`, status: { topic: target.topic }, details: { changed: configChanges(previous, row) } };
  },
  release: (domain, target, manager, policy) => domain.topics.releaseConfig(target.topic, manager, policy),
};
