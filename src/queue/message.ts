import type { MessageRow, MessageStatus } from '../store/messages/rows.js';
import { UNJOINED } from '../store/ordering/lines.js';

/** What a dequeue asks for (MessageService.dequeue, and the claims of Subscribe streams in subscriptions.ts). */
export interface DequeueInput {
  topic: unknown;
  count?: number;
  visibilityTimeoutSeconds?: number;
  consumerGroup?: string;
}

/** A message as the domain hands it to transports. */
export interface Message {
  id: string;
  topic: string;
  key: string | null;
  orderingKey: string | null;
  payload: Buffer;
  metadata: Record<string, string>;
  status: MessageStatus;
  retryCount: number;
  maxRetries: number;
  lastError: string;
  expiresAt: number | null;
  createdAt: number;
  originalTopic: string;
  dlqMovedAt: number | null;
  /** A processing message: when the claim that took it ends (ms); what a consumer that did not get it gives back. */
  claimedUntil?: number;
  /**
   * When a consumer may get it (ms): a pending message's time (its creation, or later when delayed or backed
   * off), a processing one's claim end; null for a failed or expired one, which no consumer gets again.
   */
  availableAt: number | null;
}

function availableAtOf(row: MessageRow): number | null {
  // Waiting behind the head of its ordering key: available once it is the head, which no time says.
  if (row.status === 'pending' && row.visible_at >= UNJOINED) return null;
  if (row.status === 'pending') return Math.max(row.visible_at, row.created_at);
  return row.status === 'processing' ? row.visible_at : null;
}

function parseMetadata(text: string): Record<string, string> {
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, string>) : {};
  } catch {
    return {};
  }
}

export function toMessage(row: MessageRow): Message {
  return {
    id: row.id,
    topic: row.topic,
    key: row.msg_key,
    orderingKey: row.ordering_key,
    payload: row.payload,
    metadata: parseMetadata(row.metadata),
    status: row.status,
    retryCount: row.retry_count,
    maxRetries: row.max_retries,
    lastError: row.last_error,
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    originalTopic: row.original_topic,
    dlqMovedAt: row.dlq_moved_at,
    claimedUntil: row.status === 'processing' ? row.visible_at : undefined,
    availableAt: availableAtOf(row),
  };
}
