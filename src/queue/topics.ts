import type { Knex } from 'knex';
import { z } from 'zod';
import { countByStatus, getMessage, listMessages, type MessageFilter, type StatusCount } from '../store/messages/browse.js';
import type { MessageStatus } from '../store/messages/rows.js';
import { deleteByKey, purgeTopic } from '../store/messages/remove.js';
import { purgeFanOutTopic } from '../store/deliveries/purge.js';
import { listConsumerGroups } from '../store/consumer-groups.js';
import { countDeliveriesByStatus, type DeliveryCount } from '../store/deliveries/backlog.js';
import { setManager } from '../store/managed-rows.js';
import { countLines, type LineCount } from '../store/ordering/line-counts.js';
import { deleteTopicConfig, getTopicConfig, putTopicConfig, type TopicConfigRow, type TopicConfigValues } from '../store/topic-configs.js';
import { deleteTopicSchema, getTopicSchema, putTopicSchema, type TopicSchemaRow } from '../store/topic-schemas.js';
import { compileSchema } from './avro.js';
import { MAX_DATA_SECONDS, MAX_DELAY_SECONDS, MAX_INT32, MAX_VISIBILITY_SECONDS, MAX_WAIT_SECONDS, VISIBILITY_TIMEOUT_MESSAGE } from './bounds.js';
import type { Catalog } from './catalog.js';
import { invalid, messageNotFound, notFound } from './errors.js';
import { assertManagedByOrFree, assertNotManaged, decodeManager, encodeManager, type DeletionPolicy, type ManagedBy } from './managed-by.js';
import { normaliseMessageId } from './message-ids.js';
import { assertKey } from './message-keys.js';
import { toMessage, type Message } from './message.js';
import type { QueueMetrics } from './metrics-port.js';
import { assertNotDeadLetterTopic, assertTopicName } from './topic-names.js';
import { listTopics, type TopicSummary } from './topic-list.js';

/** Every status a message row can have, in the order a message passes through them. */
export const MESSAGE_STATUSES: readonly MessageStatus[] = ['pending', 'processing', 'failed', 'expired'];
export const PURGEABLE_STATUSES = ['pending', 'processing', 'expired', 'failed'] as const;
export const DEFAULT_PURGE_STATUSES = ['pending', 'processing', 'expired'];

export interface TopicServiceDeps {
  db: Knex;
  catalog: Catalog;
  metrics: QueueMetrics;
  now?: () => number;
}

export type TopicConfigInput = Partial<Record<keyof TopicConfigValues, unknown>>;

const INTEGER_SETTINGS = [
  'max_retries',
  'message_ttl_seconds',
  'max_depth',
  'throughput_limit',
  'replay_window_seconds',
  'delivery_delay_seconds',
  'retry_backoff_seconds',
  'retry_backoff_max_seconds',
  'visibility_timeout_seconds',
  'receive_wait_seconds',
] as const;

const configWhat = (topic: string) => `topic configuration of "${topic}"`;
const schemaWhat = (topic: string) => `schema of "${topic}"`;

/** Topic configuration, schemas and per-topic administration. */
export class TopicService {
  private readonly now: () => number;

  constructor(private readonly deps: TopicServiceDeps) {
    this.now = deps.now ?? Date.now;
  }

  listConfigs(): TopicConfigRow[] {
    return this.deps.catalog.allConfigs().sort((a, b) => a.topic.localeCompare(b.topic));
  }

  async putConfig(topicName: unknown, input: TopicConfigInput): Promise<TopicConfigRow> {
    const topic = assertNotDeadLetterTopic(assertTopicName(topicName));
    const values = validateConfigValues(input);
    const row = await putTopicConfig(this.deps.db, topic, values, this.now(), '', (current) => assertNotManaged(current, configWhat(topic)));
    await this.deps.catalog.changed();
    return row;
  }

  /** A topic's configuration from the cache, or undefined: a lookup by a name the caller has checked. */
  configOf(topic: string): TopicConfigRow | undefined {
    return this.deps.catalog.config(topic);
  }

  /**
   * One topic's configuration (from the cache every instance keeps current). A name PUT would refuse, a
   * `.dlq` name included, is refused here too (400), rather than reported as not configured (404).
   */
  getConfig(topicName: unknown): TopicConfigRow {
    const topic = assertNotDeadLetterTopic(assertTopicName(topicName));
    const row = this.deps.catalog.config(topic);
    if (!row) throw notFound(`no topic configuration for "${topic}"`);
    return row;
  }

  async deleteConfig(topicName: unknown): Promise<void> {
    const topic = assertNotDeadLetterTopic(assertTopicName(topicName));
    if (await deleteTopicConfig(this.deps.db, topic, (current) => assertNotManaged(current, configWhat(topic)))) await this.deps.catalog.changed();
  }

  /**
   * The controller's write: the same validation and write as PUT, marking the row as managed by `manager`
   * (adopting a row nobody manages). Reads the database, not the cache, so a row changed by hand is put back;
   * writes nothing when the row already matches. `previous`: the row before (for the audit record).
   */
  async applyConfig(topicName: unknown, input: TopicConfigInput, manager: ManagedBy): Promise<{ row: TopicConfigRow; changed: boolean; previous: TopicConfigRow | null }> {
    const topic = assertNotDeadLetterTopic(assertTopicName(topicName));
    const values = validateConfigValues(input);
    const owner = encodeManager(manager);
    const current = await getTopicConfig(this.deps.db, topic);
    if (current?.managed_by === owner && sameConfigValues(current, values)) return { row: current, changed: false, previous: current };
    const row = await putTopicConfig(this.deps.db, topic, values, this.now(), owner, (existing) => assertManagedByOrFree(existing, owner, configWhat(topic)));
    await this.deps.catalog.changed();
    return { row, changed: true, previous: current };
  }

  /** Who manages a topic's configuration (read from the database: the controller's view must be current). */
  async configManager(topicName: unknown): Promise<ManagedBy | null> {
    return decodeManager((await getTopicConfig(this.deps.db, assertTopicName(topicName)))?.managed_by ?? '');
  }

  /** The controller, when `manager` is deleted: Delete reverts the topic to the defaults, Retain hands the row to the HTTP API. */
  async releaseConfig(topicName: unknown, manager: ManagedBy, policy: DeletionPolicy): Promise<void> {
    const topic = assertTopicName(topicName);
    const owner = encodeManager(manager);
    const changed =
      policy === 'Delete'
        ? await deleteTopicConfig(this.deps.db, topic, (current) => assertManagedByOrFree(current, owner, configWhat(topic)))
        : await setManager(this.deps.db, 'topic_configs', { topic }, '', owner);
    if (changed) await this.deps.catalog.changed();
  }

  listSchemas(): TopicSchemaRow[] {
    return this.deps.catalog
      .allSchemas()
      .map((s) => s.row)
      .sort((a, b) => a.topic.localeCompare(b.topic));
  }

  async getSchema(topicName: unknown): Promise<TopicSchemaRow> {
    const topic = assertNotDeadLetterTopic(assertTopicName(topicName));
    const row = await getTopicSchema(this.deps.db, topic);
    if (!row) throw notFound(`no schema registered for topic "${topic}"`);
    return row;
  }

  async putSchema(topicName: unknown, schemaJson: unknown): Promise<TopicSchemaRow> {
    const topic = assertNotDeadLetterTopic(assertTopicName(topicName));
    compileSchema(schemaJson);
    const row = await putTopicSchema(this.deps.db, topic, schemaJson as string, this.now(), '', (current) => assertNotManaged(current, schemaWhat(topic)));
    await this.deps.catalog.changed();
    return row;
  }

  async deleteSchema(topicName: unknown): Promise<void> {
    const topic = assertNotDeadLetterTopic(assertTopicName(topicName));
    if (await deleteTopicSchema(this.deps.db, topic, (current) => assertNotManaged(current, schemaWhat(topic)))) await this.deps.catalog.changed();
  }

  /** The controller's write of a schema: as PUT, marking the row managed; a schema already stored as given keeps its version. */
  async applySchema(topicName: unknown, schemaJson: unknown, manager: ManagedBy): Promise<{ row: TopicSchemaRow; changed: boolean }> {
    const topic = assertNotDeadLetterTopic(assertTopicName(topicName));
    compileSchema(schemaJson);
    const owner = encodeManager(manager);
    const current = await getTopicSchema(this.deps.db, topic);
    if (current?.managed_by === owner && current.schema_json === schemaJson) return { row: current, changed: false };
    const row = await putTopicSchema(this.deps.db, topic, schemaJson as string, this.now(), owner, (existing) => assertManagedByOrFree(existing, owner, schemaWhat(topic)));
    await this.deps.catalog.changed();
    return { row, changed: true };
  }

  async schemaManager(topicName: unknown): Promise<ManagedBy | null> {
    return decodeManager((await getTopicSchema(this.deps.db, assertTopicName(topicName)))?.managed_by ?? '');
  }

  /** The controller, when `manager` is deleted: Delete removes the schema, Retain hands it to the HTTP API. */
  async releaseSchema(topicName: unknown, manager: ManagedBy, policy: DeletionPolicy): Promise<void> {
    const topic = assertTopicName(topicName);
    const owner = encodeManager(manager);
    const changed =
      policy === 'Delete'
        ? await deleteTopicSchema(this.deps.db, topic, (current) => assertManagedByOrFree(current, owner, schemaWhat(topic)))
        : await setManager(this.deps.db, 'topic_schemas', { topic }, '', owner);
    if (changed) await this.deps.catalog.changed();
  }

  async listMessages(filter: MessageFilter, limit: number, offset: number): Promise<{ items: Message[]; total: number }> {
    if (filter.topic !== undefined) assertTopicName(filter.topic);
    if (filter.status !== undefined && !MESSAGE_STATUSES.includes(filter.status)) throw invalid(`unrecognised status "${String(filter.status)}"; use ${MESSAGE_STATUSES.join(', ')}`);
    const page = await listMessages(this.deps.db, filter, limit, offset);
    return { items: page.items.map(toMessage), total: page.total };
  }

  /**
   * One message, when it exists and `mayRead` allows its topic. Otherwise "not found", whatever the reason: a
   * caller without the grant learns nothing about ids outside its topics, not even that they exist.
   */
  async getMessage(id: unknown, mayRead: (topic: string) => boolean): Promise<Message> {
    const messageId = normaliseMessageId(id);
    const row = messageId ? await getMessage(this.deps.db, messageId) : null;
    if (!row || !mayRead(row.topic)) throw messageNotFound();
    return toMessage(row);
  }

  /**
   * Message rows by topic and status (a fan-out message counts once), and apart from them the deliveries of
   * fan-out topics by group and status: summing `messages` never counts a message twice.
   */
  async stats(): Promise<{ messages: StatusCount[]; deliveries: DeliveryCount[]; lines: LineCount[] }> {
    const [messages, deliveries, lines] = await Promise.all([countByStatus(this.deps.db), countDeliveriesByStatus(this.deps.db), countLines(this.deps.db)]);
    return { messages, deliveries, lines };
  }

  /** Every topic with messages, a configuration, a schema or groups that `visible` keeps, a page of them (topic-list.ts). */
  async listTopics(visible: (topics: string[]) => string[], limit: number, offset: number): Promise<{ items: TopicSummary[]; total: number }> {
    return listTopics(this.deps.db, visible, limit, offset, this.now());
  }

  async purge(topicName: unknown, statuses: unknown): Promise<number> {
    const topic = assertTopicName(topicName);
    const chosen = validatePurgeStatuses(statuses);
    // Whether the topic is fan-out is read from the database, not this instance's catalog: one that has not yet
    // seen a group's registration would purge the message rows, and with them what the group still needs.
    const fanOut = this.deps.catalog.groupsOf(topic).length > 0 || (await listConsumerGroups(this.deps.db, topic)).length > 0;
    const deleted = fanOut
      ? await purgeFanOutTopic(this.deps.db, topic, chosen, this.deps.catalog.config(topic)?.replayable === true, this.now())
      : await purgeTopic(this.deps.db, topic, chosen, this.now());
    if (deleted > 0) this.deps.metrics.message('deleted', topic, deleted);
    return deleted;
  }

  async deleteByKey(topicName: unknown, key: string): Promise<number> {
    const topic = assertTopicName(topicName);
    assertKey(key);
    const deleted = await deleteByKey(this.deps.db, topic, key, this.now());
    if (deleted > 0) this.deps.metrics.message('deleted', topic, deleted);
    return deleted;
  }
}

const setting = (field: string, description: string, max = Number.MAX_SAFE_INTEGER) =>
  z
    .int({ error: `${field} must be an integer or null` })
    .min(0, { error: `${field} must not be negative` })
    .max(max, { error: `${field} must be at most ${max}` })
    .nullish()
    .meta({ description });

/**
 * A topic's settings as PUT and the controller give them (absent and null both mean "the default"). The HTTP
 * API documents its body from this schema (src/http/validation.ts), so the two cannot disagree.
 */
export const topicConfigBody = z.object({
  max_retries: setting('max_retries', 'Delivery attempts before a message moves to <topic>.dlq; null or absent: queue.dlq_threshold.', MAX_INT32),
  message_ttl_seconds: setting('message_ttl_seconds', 'Seconds until an unprocessed message expires, 0 never; null or absent: queue.message_ttl.', MAX_DATA_SECONDS),
  max_depth: z
    .int({ error: 'max_depth must be an integer or null' })
    .min(0, { error: 'max_depth must not be negative' })
    .min(1, { error: 'max_depth must be at least 1, or null for no cap' })
    .nullish()
    .meta({ description: 'Pending messages at most (enqueue beyond is 429); null or absent: no cap.' }),
  throughput_limit: setting('throughput_limit', 'Messages dequeued per second at most; null or absent: no limit.'),
  replayable: z.boolean({ error: 'replayable must be a boolean' }).nullish().meta({ description: 'Acked messages are kept in the archive log for replay.' }),
  replay_window_seconds: setting('replay_window_seconds', 'How far back replay reaches, in seconds; null or absent: the whole archive log.', MAX_DATA_SECONDS),
  delivery_delay_seconds: setting(
    'delivery_delay_seconds',
    "Seconds a new message of the topic waits before any consumer may get it, unless its enqueue names a delay (delay_seconds 0 included); at most queue.max_delay_seconds. Null or absent: none.",
    MAX_DELAY_SECONDS,
  ),
  retry_backoff_seconds: setting(
    'retry_backoff_seconds',
    'Base of the retry backoff: after the n-th failed attempt (a nack, or a visibility timeout that ran out) the retry waits min(retry_backoff_max_seconds, base x 2^(n-1)) seconds, +-10 % jitter; 0: at once. Null or absent: queue.retry_backoff_seconds.',
    MAX_DELAY_SECONDS,
  ),
  retry_backoff_max_seconds: setting('retry_backoff_max_seconds', 'Cap of the retry backoff, in seconds; null or absent: queue.retry_backoff_max_seconds.', MAX_DELAY_SECONDS),
  visibility_timeout_seconds: z
    .int({ error: 'visibility_timeout_seconds must be an integer or null' })
    .min(1, { error: VISIBILITY_TIMEOUT_MESSAGE })
    .max(MAX_VISIBILITY_SECONDS, { error: VISIBILITY_TIMEOUT_MESSAGE })
    .nullish()
    .meta({ description: 'Seconds a dequeue of the topic that names no visibility_timeout_seconds (HTTP, gRPC Dequeue, BatchDequeue and Subscribe, SQS ReceiveMessage) claims its messages for; 1 to 43200. Null or absent: queue.visibility_timeout.' }),
  receive_wait_seconds: setting(
    'receive_wait_seconds',
    'Seconds an SQS ReceiveMessage of the queue that names no WaitTimeSeconds waits for a message (its ReceiveMessageWaitTimeSeconds); 0 to 20. HTTP and gRPC dequeues ignore it. Null or absent: 0.',
    MAX_WAIT_SECONDS,
  ),
  content_based_deduplication: z
    .boolean({ error: 'content_based_deduplication must be a boolean or null' })
    .nullish()
    .meta({ description: "For a FIFO queue (.fifo) of the SQS API: whether a SendMessage without MessageDeduplicationId is deduplicated by its body's SHA-256 (its ContentBasedDeduplication); false refuses such a send. Null or absent: true." }),
});

function validateConfigValues(input: TopicConfigInput): TopicConfigValues {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw invalid('request body must be a JSON object');
  const result = topicConfigBody.safeParse(input);
  if (!result.success) throw invalid(result.error.issues[0].message);
  const values = {} as TopicConfigValues;
  for (const field of INTEGER_SETTINGS) values[field] = result.data[field] ?? null;
  values.replayable = result.data.replayable === true;
  values.content_based_deduplication = result.data.content_based_deduplication ?? null;
  return values;
}

function sameConfigValues(row: TopicConfigRow, values: TopicConfigValues): boolean {
  return (Object.keys(values) as Array<keyof TopicConfigValues>).every((field) => row[field] === values[field]);
}

function validatePurgeStatuses(statuses: unknown): string[] {
  if (statuses === undefined || statuses === null) return DEFAULT_PURGE_STATUSES;
  if (!Array.isArray(statuses)) throw invalid('statuses must be an array of statuses');
  if (statuses.length === 0) return DEFAULT_PURGE_STATUSES;
  for (const status of statuses) {
    if (!(PURGEABLE_STATUSES as readonly unknown[]).includes(status)) {
      throw invalid(`unrecognised status "${String(status)}"; use ${PURGEABLE_STATUSES.join(', ')}`);
    }
  }
  return [...new Set(statuses as string[])];
}
