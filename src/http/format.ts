import { isUtf8 } from 'node:buffer';
import { decodeManager } from '../queue/managed-by.js';
import type { Message } from '../queue/message.js';
import type { TopicConfigRow } from '../store/topic-configs.js';
import type { TopicSchemaRow } from '../store/topic-schemas.js';

/** Times are RFC 3339 in UTC with milliseconds (docs/http-api.md). */
export const iso = (ms: number) => new Date(ms).toISOString();
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

/**
 * A payload as JSON text: its UTF-8 text, or, for bytes that are no UTF-8 (a gRPC producer's binary payload),
 * their base64 flagged by `payload_encoding`: decoding them as text would hand the consumer different bytes
 * (each invalid sequence a U+FFFD) with nothing to say so.
 */
function payloadFields(payload: Buffer): { payload: string; payload_encoding?: 'base64' } {
  return isUtf8(payload) ? { payload: payload.toString('utf8') } : { payload: payload.toString('base64'), payload_encoding: 'base64' };
}

export function messageJson(m: Message) {
  return {
    id: m.id,
    topic: m.topic,
    key: m.key,
    ordering_key: m.orderingKey,
    ...payloadFields(m.payload),
    metadata: m.metadata,
    status: m.status,
    retry_count: m.retryCount,
    max_retries: m.maxRetries,
    last_error: m.lastError,
    expires_at: isoOrNull(m.expiresAt),
    created_at: iso(m.createdAt),
    available_at: isoOrNull(m.availableAt),
    original_topic: m.originalTopic,
    dlq_moved_at: isoOrNull(m.dlqMovedAt),
  };
}

export function dequeuedMessageJson(m: Message) {
  return {
    id: m.id,
    topic: m.topic,
    key: m.key,
    ordering_key: m.orderingKey,
    ...payloadFields(m.payload),
    metadata: m.metadata,
    status: 'processing',
    retry_count: m.retryCount,
    max_retries: m.maxRetries,
    created_at: iso(m.createdAt),
    available_at: isoOrNull(m.availableAt),
  };
}

export function topicConfigJson(row: TopicConfigRow) {
  return {
    topic: row.topic,
    max_retries: row.max_retries,
    message_ttl_seconds: row.message_ttl_seconds,
    max_depth: row.max_depth,
    throughput_limit: row.throughput_limit,
    replayable: row.replayable,
    replay_window_seconds: row.replay_window_seconds,
    delivery_delay_seconds: row.delivery_delay_seconds,
    retry_backoff_seconds: row.retry_backoff_seconds,
    retry_backoff_max_seconds: row.retry_backoff_max_seconds,
    visibility_timeout_seconds: row.visibility_timeout_seconds,
    receive_wait_seconds: row.receive_wait_seconds,
    content_based_deduplication: row.content_based_deduplication,
    managed_by: decodeManager(row.managed_by),
  };
}

export function topicSchemaJson(row: TopicSchemaRow) {
  return { topic: row.topic, schema_json: row.schema_json, version: row.version, updated_at: iso(row.updated_at), managed_by: decodeManager(row.managed_by) };
}
