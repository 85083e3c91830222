import type { Knex } from 'knex';
import { withDbRetry } from './retry.js';

const TABLE = 'sqs_receives';

export interface ReceiveRecord {
  token: string;
  count: number;
  firstAt: number;
}

/**
 * Records a receive of each message: its new token, one more receive, the first receive's time kept. One
 * read and one multi-row upsert per receive call; a message is received by one call at a time (its claim),
 * so counting from the read is exact.
 */
export async function recordReceives(db: Knex, receives: Array<{ id: string; token: string }>, now: number): Promise<Map<string, ReceiveRecord>> {
  const records = new Map<string, ReceiveRecord>();
  if (receives.length === 0) return records;
  const before = await receiveRecords(db, receives.map((r) => r.id));
  const rows = receives.map(({ id, token }) => {
    const earlier = before.get(id);
    const record = { token, count: (earlier?.count ?? 0) + 1, firstAt: earlier?.firstAt ?? now };
    records.set(id, record);
    return { message_id: id, token, receive_count: record.count, first_received_at: record.firstAt, received_at: now };
  });
  await withDbRetry(db, () => db(TABLE).insert(rows).onConflict('message_id').merge(['token', 'receive_count', 'received_at']));
  return records;
}

/** The latest receive of each message that has one. */
export async function receiveRecords(db: Knex, ids: string[]): Promise<Map<string, ReceiveRecord>> {
  const records = new Map<string, ReceiveRecord>();
  if (ids.length === 0) return records;
  const rows = (await withDbRetry(db, () => db(TABLE).whereIn('message_id', ids).select('message_id', 'token', 'receive_count', 'first_received_at'))) as Array<Record<string, unknown>>;
  for (const row of rows) records.set(String(row.message_id), { token: String(row.token), count: Number(row.receive_count), firstAt: Number(row.first_received_at) });
  return records;
}

/** What a receipt is checked against: each existing message's topic, status and failed attempts. */
export async function claimStates(db: Knex, ids: string[]): Promise<Map<string, { topic: string; status: string; retryCount: number }>> {
  const states = new Map<string, { topic: string; status: string; retryCount: number }>();
  if (ids.length === 0) return states;
  const rows = (await withDbRetry(db, () => db('messages').whereIn('id', ids).select('id', 'topic', 'status', 'retry_count'))) as Array<Record<string, unknown>>;
  for (const row of rows) states.set(String(row.id), { topic: String(row.topic), status: String(row.status), retryCount: Number(row.retry_count) });
  return states;
}

export async function forgetReceives(db: Knex, ids: string[]): Promise<void> {
  if (ids.length > 0) await withDbRetry(db, () => db(TABLE).whereIn('message_id', ids).delete());
}

/** Removes the records of receives older than `before`: no receipt of theirs can still be in flight. */
export async function sweepReceives(db: Knex, before: number): Promise<number> {
  return withDbRetry(db, () => db(TABLE).where('received_at', '<', before).delete());
}
