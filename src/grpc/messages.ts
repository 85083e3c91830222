import type { EnqueueInput } from '../queue/messages.js';
import type { Message } from '../queue/message.js';

/** Request and response shapes of proto/queue.proto as @grpc/proto-loader hands them over (keepCase). */
export interface EnqueueRequest {
  topic: string;
  payload: Buffer;
  metadata: Record<string, string>;
  key?: string;
  delay_seconds?: number;
  deliver_at?: Timestamp | null;
  ordering_key?: string;
}

export interface DequeueRequest {
  topic: string;
  visibility_timeout_seconds?: number;
  consumer_group: string;
  /** Dequeue and BatchDequeue: long polling (absent or 0: answer at once). */
  wait_seconds?: number;
}

export interface BatchDequeueRequest extends DequeueRequest {
  count: number;
}

export interface AckRequest {
  id: string;
  consumer_group: string;
}

export interface NackRequest extends AckRequest {
  error: string;
  delay_seconds?: number;
}

export interface ChangeVisibilityRequest extends AckRequest {
  visibility_timeout_seconds: number;
}

export interface EnqueueBatchRequest {
  requests: EnqueueRequest[];
}

export interface AckBatchRequest {
  ids: string[];
  consumer_group: string;
}

export interface SubscribeRequest extends DequeueRequest {
  max_in_flight?: number;
}

interface Timestamp {
  seconds: number;
  nanos: number;
}

export function toEnqueueInput(request: EnqueueRequest): EnqueueInput {
  const deliverAt = request.deliver_at ? request.deliver_at.seconds * 1000 + Math.floor(request.deliver_at.nanos / 1_000_000) : null;
  return { topic: request.topic, payload: request.payload, metadata: request.metadata, key: request.key ?? null, orderingKey: request.ordering_key ?? null, delaySeconds: request.delay_seconds, deliverAt };
}

/** proto3 cannot send an absent string, so the empty group means "no consumer group". */
export function groupOf(request: { consumer_group: string }): string | undefined {
  return request.consumer_group === '' ? undefined : request.consumer_group;
}

export function timestamp(ms: number): Timestamp {
  return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 };
}

export function dequeueResponse(m: Message) {
  return {
    id: m.id,
    topic: m.topic,
    payload: m.payload,
    metadata: m.metadata,
    created_at: timestamp(m.createdAt),
    retry_count: m.retryCount,
    max_retries: m.maxRetries,
    ...(m.key === null ? {} : { key: m.key }),
    ...(m.availableAt === null ? {} : { available_at: timestamp(m.availableAt) }),
    ...(m.orderingKey === null ? {} : { ordering_key: m.orderingKey }),
  };
}

export function subscribeResponse(m: Message) {
  return {
    id: m.id,
    topic: m.topic,
    payload: m.payload,
    metadata: m.metadata,
    created_at: timestamp(m.createdAt),
    retry_count: m.retryCount,
    ...(m.orderingKey === null ? {} : { ordering_key: m.orderingKey }),
  };
}
