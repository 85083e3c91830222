import type { Knex } from 'knex';

/**
 * The W3C trace context a message's metadata holds (its `traceparent` and `tracestate` keys, as the server
 * stores them), for the spans of what happens to the message later. Only the strings: whether they make a
 * valid context is the tracing's to judge.
 */
export interface StoredTraceContext {
  traceparent: string;
  tracestate?: string;
}

/**
 * The trace context in a metadata text. Most messages carry none: a text without the key is not parsed, so
 * a message without one costs a substring search.
 */
export function storedTraceContext(metadata: string): StoredTraceContext | undefined {
  if (!metadata.includes('"traceparent"')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(metadata);
  } catch {
    return undefined;
  }
  if (!value || typeof value !== 'object') return undefined;
  const { traceparent, tracestate } = value as Record<string, unknown>;
  if (typeof traceparent !== 'string') return undefined;
  return typeof tracestate === 'string' && tracestate !== '' ? { traceparent, tracestate } : { traceparent };
}

export interface StoredMessageTrace {
  topic: string;
  trace: StoredTraceContext;
}

/**
 * The stored trace contexts of messages by id (one primary-key read), for the links of acks and nacks of
 * messages another instance delivered. A message of a consumer group has its context on its `messages` row
 * too. Ids without a message, or whose message carries no context, are absent from the answer. Not retried:
 * a link is not worth holding up the settle it describes.
 */
export async function readTraceContexts(db: Knex, ids: readonly string[]): Promise<Map<string, StoredMessageTrace>> {
  const found = new Map<string, StoredMessageTrace>();
  if (ids.length === 0) return found;
  const rows: Array<{ id: unknown; topic: unknown; metadata: unknown }> = await db('messages').select('id', 'topic', 'metadata').whereIn('id', [...ids]);
  for (const row of rows) {
    const trace = storedTraceContext(String(row.metadata ?? ''));
    if (trace) found.set(String(row.id), { topic: String(row.topic), trace });
  }
  return found;
}
