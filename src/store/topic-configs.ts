import type { Knex } from 'knex';
import { retryTransaction } from './retry.js';
import { lockedManager, type ManagerGuard } from './managed-rows.js';
import { bumpCatalogRevision } from './settings.js';

export interface TopicConfigRow {
  topic: string;
  max_retries: number | null;
  message_ttl_seconds: number | null;
  max_depth: number | null;
  throughput_limit: number | null;
  replayable: boolean;
  replay_window_seconds: number | null;
  delivery_delay_seconds: number | null;
  retry_backoff_seconds: number | null;
  retry_backoff_max_seconds: number | null;
  visibility_timeout_seconds: number | null;
  receive_wait_seconds: number | null;
  content_based_deduplication: boolean | null;
  managed_by: string;
  updated_at: number;
}

export type TopicConfigValues = Omit<TopicConfigRow, 'topic' | 'managed_by' | 'updated_at'>;

/** A topic's settings, in the order every view lists them. */
export const TOPIC_CONFIG_FIELDS = [
  'max_retries',
  'message_ttl_seconds',
  'max_depth',
  'throughput_limit',
  'replayable',
  'replay_window_seconds',
  'delivery_delay_seconds',
  'retry_backoff_seconds',
  'retry_backoff_max_seconds',
  'visibility_timeout_seconds',
  'receive_wait_seconds',
  'content_based_deduplication',
] as const satisfies ReadonlyArray<keyof TopicConfigValues>;

const num = (v: unknown) => (v == null ? null : Number(v));

function normalise(raw: Record<string, unknown>): TopicConfigRow {
  return {
    topic: String(raw.topic),
    max_retries: num(raw.max_retries),
    message_ttl_seconds: num(raw.message_ttl_seconds),
    max_depth: num(raw.max_depth),
    throughput_limit: num(raw.throughput_limit),
    replayable: Boolean(raw.replayable),
    replay_window_seconds: num(raw.replay_window_seconds),
    delivery_delay_seconds: num(raw.delivery_delay_seconds),
    retry_backoff_seconds: num(raw.retry_backoff_seconds),
    retry_backoff_max_seconds: num(raw.retry_backoff_max_seconds),
    visibility_timeout_seconds: num(raw.visibility_timeout_seconds),
    receive_wait_seconds: num(raw.receive_wait_seconds),
    content_based_deduplication: raw.content_based_deduplication == null ? null : Boolean(raw.content_based_deduplication),
    managed_by: String(raw.managed_by ?? ''),
    updated_at: Number(raw.updated_at),
  };
}

export async function listTopicConfigs(db: Knex): Promise<TopicConfigRow[]> {
  return (await db('topic_configs').select('*').orderBy('topic')).map(normalise);
}

export async function getTopicConfig(db: Knex, topic: string): Promise<TopicConfigRow | null> {
  const row = await db('topic_configs').where({ topic }).first();
  return row ? normalise(row) : null;
}

/**
 * Replaces every setting of a topic (absent = null = global default) and bumps the catalog revision.
 * Retried whole; a re-run after a lost commit answer writes the same row again (the guard then sees this
 * call's own manager, which it allows).
 */
export async function putTopicConfig(db: Knex, topic: string, values: TopicConfigValues, now: number, managedBy: string, guard: ManagerGuard): Promise<TopicConfigRow> {
  await retryTransaction(db, async (trx) => {
    guard(await lockedManager(trx, 'topic_configs', { topic }));
    // Read under the lock lockedManager took (the row, or SQLite's write lock).
    const before = await trx('topic_configs').where({ topic }).first('throughput_limit');
    await trx('topic_configs')
      .insert({ topic, ...values, managed_by: managedBy, created_at: now, updated_at: now })
      .onConflict('topic')
      .merge([...Object.keys(values), 'managed_by', 'updated_at']);
    // A changed limit starts from a full bucket rather than from whatever the old one had left. Only a changed
    // one: the controller puts every TopicConfig again at each resync, and each put would grant a second's worth.
    if (num(before?.throughput_limit) !== num(values.throughput_limit)) await trx('topic_buckets').where({ topic }).delete();
    await bumpCatalogRevision(trx);
  });
  return (await getTopicConfig(db, topic))!;
}

/** Retried whole; a re-run after a lost commit answer that finds the row gone answers what the lost attempt did. */
export async function deleteTopicConfig(db: Knex, topic: string, guard: ManagerGuard): Promise<boolean> {
  let deletedEarlier = false;
  return retryTransaction(db, async (trx, attempt) => {
    const manager = await lockedManager(trx, 'topic_configs', { topic });
    if (manager === undefined && attempt.uncertain && deletedEarlier) return true;
    guard(manager);
    const deleted = await trx('topic_configs').where({ topic }).delete();
    await trx('topic_buckets').where({ topic }).delete();
    if (deleted > 0) await bumpCatalogRevision(trx);
    deletedEarlier = deleted > 0;
    return deleted > 0;
  });
}
