import { assertNotDeadLetterTopic, assertTopicName } from '../../queue/topic-names.js';
import { compileSchema } from '../../queue/avro.js';
import { decodeManager } from '../../queue/managed-by.js';
import { getTopicSchema } from '../../store/topic-schemas.js';
import type { KindHandler } from './kind.js';

export const topicSchemaKind: KindHandler = {
  kind: 'TopicSchema',
  plural: 'topicschemas',
  audit: { apply: 'topic_schema.set', delete: 'topic_schema.delete', release: 'topic_schema.release' },
  target(obj) {
    const topic = assertNotDeadLetterTopic(assertTopicName(obj.spec?.topic));
    return { key: topic, topic, describe: `topic "${topic}"` };
  },
  async holder(domain, target) {
    const row = await getTopicSchema(domain.db, target.topic);
    return { exists: row !== null, manager: decodeManager(row?.managed_by ?? '') };
  },
  async apply(domain, obj, target, manager) {
    // The resource holds the schema as an object; the API stores (and versions) its JSON text.
    const schemaJson = obj.spec?.schema === undefined ? undefined : JSON.stringify(obj.spec.schema);
    const { row, changed } = await domain.topics.applySchema(target.topic, schemaJson, manager);
    const fingerprint = compileSchema(row.schema_json).fingerprint('sha256').toString('hex');
    return {
      changed,
      message: `schema of "${target.topic}" stored as version ${row.version}`,
      status: { topic: target.topic, schemaVersion: row.version, fingerprint },
      details: { version: row.version },
    };
  },
  release: (domain, target, manager, policy) => domain.topics.releaseSchema(target.topic, manager, policy),
};
