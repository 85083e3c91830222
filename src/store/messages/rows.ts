/** A `messages` row as both engines return it (timestamps in epoch milliseconds). */
export interface MessageRow {
  id: string;
  topic: string;
  msg_key: string | null;
  payload: Buffer;
  metadata: string;
  status: MessageStatus;
  retry_count: number;
  max_retries: number;
  last_error: string;
  visible_at: number;
  expires_at: number | null;
  created_at: number;
  original_topic: string;
  dlq_moved_at: number | null;
  ordering_key: string | null;
}

export type MessageStatus = 'pending' | 'processing' | 'failed' | 'expired';

export const MESSAGE_COLUMNS = [
  'id',
  'topic',
  'msg_key',
  'payload',
  'metadata',
  'status',
  'retry_count',
  'max_retries',
  'last_error',
  'visible_at',
  'expires_at',
  'created_at',
  'original_topic',
  'dlq_moved_at',
  'ordering_key',
] as const;

/** mysql2 hands BIGINT back as number already; SQLite may hand back bigint for large values. */
export function normaliseRow(raw: Record<string, unknown>): MessageRow {
  const num = (v: unknown) => (v == null ? null : Number(v));
  return {
    id: String(raw.id),
    topic: String(raw.topic),
    msg_key: raw.msg_key == null ? null : String(raw.msg_key),
    payload: Buffer.isBuffer(raw.payload) ? raw.payload : Buffer.from(String(raw.payload ?? '')),
    metadata: String(raw.metadata ?? '{}'),
    status: raw.status as MessageStatus,
    retry_count: Number(raw.retry_count),
    max_retries: Number(raw.max_retries),
    last_error: String(raw.last_error ?? ''),
    visible_at: Number(raw.visible_at),
    expires_at: num(raw.expires_at),
    created_at: Number(raw.created_at),
    original_topic: String(raw.original_topic ?? ''),
    dlq_moved_at: num(raw.dlq_moved_at),
    ordering_key: raw.ordering_key == null ? null : String(raw.ordering_key),
  };
}

/** Splits `items` into chunks that stay under both a row count and a byte budget (max_allowed_packet). */
export function chunkRows<T extends { payload: Buffer; metadata: string }>(items: T[], maxRows = 500, maxBytes = 4 * 1024 * 1024): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = item.payload.length + item.metadata.length;
    if (current.length > 0 && (current.length >= maxRows || bytes + size > maxBytes)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
