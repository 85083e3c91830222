import { z } from 'zod';
import { MESSAGE_STATUSES } from '../../queue/topics.js';

/**
 * The body of every successful answer of the HTTP API, as the routes and src/http/format.ts build it. Strict:
 * a field a route adds without adding it here fails test/openapi.test.ts, which checks real answers against
 * the document built from these schemas.
 */

const timestamp = () => z.string().meta({ format: 'date-time', description: 'RFC 3339 in UTC with milliseconds.' });
const uuid = () => z.string().meta({ format: 'uuid' });
const count = () => z.int().min(0);
const status = z.enum(MESSAGE_STATUSES);

export const ErrorBody = z.strictObject({ error: z.string().meta({ description: 'What went wrong, for people.' }) });

export const Health = z.strictObject({ status: z.literal('ok') });

export const Version = z.strictObject({ version: z.string() });

export const AuthStatus = z.strictObject({
  auth_required: z.boolean(),
  user: z.strictObject({ id: uuid(), username: z.string(), is_admin: z.boolean() }).optional().meta({ description: 'Only for a valid token.' }),
});

export const Token = z.strictObject({ token: z.string().meta({ description: 'A JWT for `Authorization: Bearer <token>`, valid for 15 minutes.' }) });

const payloadFields = {
  payload: z.string().meta({ description: 'The payload as text; base64 when `payload_encoding` says so.' }),
  payload_encoding: z
    .literal('base64')
    .optional()
    .meta({ description: 'Extension, only present for a payload whose bytes are not UTF-8 text (enqueued as bytes over gRPC): then `payload` is their base64, not text with replacement characters.' }),
};

export const Message = z.strictObject({
  id: uuid(),
  topic: z.string(),
  key: z.string().nullable(),
  ordering_key: z.string().nullable().meta({ description: 'Messages of one ordering key are delivered one at a time, in enqueue order; null: none.' }),
  ...payloadFields,
  metadata: z.record(z.string(), z.string()),
  status,
  retry_count: count(),
  max_retries: count(),
  last_error: z.string().meta({ description: '"" when none.' }),
  expires_at: timestamp().nullable(),
  created_at: timestamp(),
  available_at: timestamp()
    .nullable()
    .meta({ description: 'When a consumer may get it: a pending message from this time (later than created_at when delayed or backed off), a processing one when its claim ends; null when failed or expired.' }),
  original_topic: z.string().meta({ description: 'The topic a dead letter came from; "" otherwise.' }),
  dlq_moved_at: timestamp().nullable(),
});

const page = <T extends z.ZodType>(item: T) => z.strictObject({ items: z.array(item), total: count(), limit: z.int().min(1), offset: count() });

export const MessagePage = page(Message);

export const Enqueued = z.strictObject({ id: uuid() });

export const EnqueuedBatch = z.strictObject({ ids: z.array(uuid()).meta({ description: 'In the order of the messages sent.' }) });

export const DequeuedMessage = z.strictObject({
  id: uuid(),
  topic: z.string(),
  key: z.string().nullable(),
  ordering_key: z.string().nullable().meta({ description: 'Messages of one ordering key are delivered one at a time, in enqueue order; null: none.' }),
  ...payloadFields,
  metadata: z.record(z.string(), z.string()),
  status: z.literal('processing'),
  retry_count: count(),
  max_retries: count(),
  created_at: timestamp(),
  available_at: timestamp().meta({ description: 'When the claim ends: the message is available to consumers again then unless it is settled first.' }),
});

export const Dequeued = z.strictObject({ messages: z.array(DequeuedMessage) });

export const VisibilityChanged = z.strictObject({
  id: uuid(),
  available_at: timestamp().meta({ description: 'When the message becomes available to consumers again unless it is settled first.' }),
});

export const AckBatchResult = z.strictObject({
  acked: z.array(z.string()),
  not_found: z.array(z.string()).meta({ description: 'Ids that were unknown, not UUIDs, or not being processed.' }),
});

export const ManagedBy = z
  .strictObject({ kind: z.string(), namespace: z.string(), name: z.string() })
  .meta({ description: 'The Kubernetes resource that owns the row; the HTTP API cannot change it meanwhile (409).' });

export const TopicConfig = z.strictObject({
  topic: z.string(),
  max_retries: count().nullable(),
  message_ttl_seconds: count().nullable(),
  max_depth: z.int().min(1).nullable(),
  throughput_limit: count().nullable(),
  replayable: z.boolean(),
  replay_window_seconds: count().nullable(),
  delivery_delay_seconds: count().nullable(),
  retry_backoff_seconds: count().nullable(),
  retry_backoff_max_seconds: count().nullable(),
  visibility_timeout_seconds: z.int().min(1).nullable(),
  receive_wait_seconds: count().nullable(),
  content_based_deduplication: z.boolean().nullable(),
  managed_by: ManagedBy.nullable(),
});

/** What an unset (null) setting of a topic configuration means on this service: its queue.* settings. */
export const TopicConfigDefaults = z
  .strictObject({
    max_retries: count().meta({ description: 'queue.max_retries' }),
    message_ttl_seconds: count().meta({ description: 'queue.message_ttl in seconds; 0: never' }),
    retry_backoff_seconds: count().meta({ description: 'queue.retry_backoff_seconds' }),
    retry_backoff_max_seconds: count().meta({ description: 'queue.retry_backoff_max_seconds' }),
    visibility_timeout_seconds: z.int().min(1).meta({ description: 'queue.visibility_timeout' }),
  })
  .meta({ description: "The server's values for the settings a configuration leaves unset (extension)." });

export const TopicConfigList = z.strictObject({ items: z.array(TopicConfig), defaults: TopicConfigDefaults });

export const TopicSchema = z.strictObject({
  topic: z.string(),
  schema_json: z.string(),
  version: z.int().min(1),
  updated_at: timestamp(),
  managed_by: ManagedBy.nullable(),
});

export const TopicSchemaList = z.strictObject({ items: z.array(TopicSchema) });

export const TopicStatusCount = z.strictObject({ topic: z.string(), status, count: count() });

export const GroupStatusCount = z.strictObject({ topic: z.string(), consumer_group: z.string(), status, count: count() });

export const Stats = z.strictObject({
  topics: z.array(TopicStatusCount).meta({ description: 'Messages by topic and status; a fan-out message counts once.' }),
  consumer_groups: z.array(GroupStatusCount).meta({ description: 'Fan-out topics: the deliveries of each group by status (acked ones not shown).' }),
  ordering: z
    .array(
      z.strictObject({
        topic: z.string(),
        consumer_group: z.string().meta({ description: '"" for the topic itself; a group of a fan-out topic keeps lines of its own.' }),
        keys: count().meta({ description: 'Ordering keys with a live message.' }),
        waiting_keys: count().meta({ description: 'Of those, keys whose head a consumer holds while later messages wait behind it.' }),
      }),
    )
    .meta({ description: 'Ordering keys per topic (and consumer group).' }),
});

const age = () => z.number().min(0).nullable().meta({ description: 'Seconds the oldest pending message available to a consumer has waited; null when none is.' });

export const TopicSummary = z.strictObject({
  topic: z.string(),
  dead_letter: z.boolean().meta({ description: 'A dead-letter topic (`<topic>.dlq`).' }),
  depth: z.strictObject({ pending: count(), processing: count(), failed: count(), expired: count() }).meta({ description: 'Messages by status; a fan-out message counts once.' }),
  oldest_pending_age_seconds: age(),
  configured: z.boolean().meta({ description: 'The topic has a configuration (GET /api/topic-configs/{topic}).' }),
  schema_version: z.int().min(1).nullable().meta({ description: 'The version of its Avro schema; null without one.' }),
  managed: z.boolean().meta({ description: 'Kubernetes manages its configuration, its schema or one of its groups.' }),
  managed_by: z.strictObject({ config: ManagedBy.nullable(), schema: ManagedBy.nullable() }),
  consumer_groups: z.array(
    z.strictObject({
      consumer_group: z.string(),
      depth: z.strictObject({ pending: count(), processing: count(), failed: count() }).meta({ description: "The group's deliveries by status." }),
      oldest_pending_age_seconds: age(),
      managed_by: ManagedBy.nullable(),
    }),
  ),
});

export const TopicPage = page(TopicSummary);

export const Deleted = z.strictObject({ deleted: count() });

export const ConsumerGroupList = z.strictObject({ items: z.array(z.string()) });

export const ConsumerGroup = z.strictObject({ topic: z.string(), consumer_group: z.string(), managed_by: ManagedBy.nullable() });

export const LogEntry = z.strictObject({
  id: uuid(),
  topic: z.string(),
  key: z.string().nullable(),
  ordering_key: z.string().nullable(),
  payload: z.string().meta({ description: 'Base64.' }),
  retry_count: count(),
  original_topic: z.string(),
  created_at: timestamp(),
  acked_at: timestamp(),
});

export const MessageLogPage = page(LogEntry);

export const ReplayResult = z.strictObject({
  topic: z.string(),
  enqueued: count(),
  from_time: z.union([timestamp(), z.literal('')]).meta({ description: 'The requested from_time in UTC; an empty string when the request had none.' }),
  replayed_from: timestamp().meta({ description: 'Where the replay actually started: the requested time, else the window start, else the oldest log entry (the request time on an empty log).' }),
});

export const ExpiryReaperRun = z.strictObject({ expired: count() });

export const ArchiveReaperRun = z.strictObject({ deleted: count(), audit_deleted: count() });

export const DeleteReaperSchedule = z.strictObject({ schedule: z.string().meta({ description: '"" when disabled.' }), active: z.boolean() });

export const User = z.strictObject({
  id: uuid(),
  username: z.string(),
  is_admin: z.boolean(),
  service_account: z.boolean().meta({ description: 'A Kubernetes service account\'s principal (`system:serviceaccount:<namespace>:<name>`), made on its first request: no password, never an admin.' }),
  created_at: timestamp(),
  updated_at: timestamp(),
});

export const UserList = z.strictObject({ items: z.array(User) });

export const Grant = z.strictObject({
  id: uuid(),
  user_id: uuid(),
  action: z.enum(['read', 'write', 'admin', 'consume']),
  topic_pattern: z.string(),
  consumer_group: z.string().meta({ description: 'Consume grants only; "" otherwise.' }),
  created_at: timestamp(),
  managed_by: ManagedBy.nullable().meta({ description: 'The ConveyorAccess resource that owns the grant (the HTTP API cannot revoke it: 409); null for a grant made through the API.' }),
});

export const GrantList = z.strictObject({ items: z.array(Grant) });

const accessKeyId = () => z.string().meta({ description: 'The access key id: `CVAK` and 16 characters of A-Z 2-7. Not secret.' });

export const AccessKey = z.strictObject({
  access_key_id: accessKeyId(),
  user_id: uuid(),
  created_at: timestamp(),
  last_used_at: timestamp().nullable().meta({ description: 'When a request last authenticated with it (recorded at most once a minute); null if never.' }),
});

export const AccessKeyList = z.strictObject({ items: z.array(AccessKey) });

export const NewAccessKey = z.strictObject({
  access_key_id: accessKeyId(),
  secret: z.string().meta({ description: 'Shown in this answer only: send `Authorization: Bearer <access_key_id>.<secret>`.' }),
  created_at: timestamp(),
});

export const AuditEntry = z.strictObject({
  id: z.int().min(1),
  at: timestamp(),
  actor: z.strictObject({
    id: uuid().nullable().meta({ description: 'Null for anonymous callers and the controller.' }),
    name: z.string(),
  }),
  action: z.string().meta({ description: 'For example topic_config.set; docs/security.md lists them.' }),
  topic: z.string().nullable(),
  target: z.string().nullable(),
  result: z.enum(['ok', 'error']),
  status: z.int().nullable().meta({ description: 'The HTTP status of the answer; null for the controller.' }),
  details: z.record(z.string(), z.unknown()),
});

export const AuditLogPage = page(AuditEntry);

export const OpenApiDocument = z.looseObject({ openapi: z.string() }).meta({ description: 'This document.' });
