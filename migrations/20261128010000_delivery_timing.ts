import type { Knex } from 'knex';

/**
 * A topic's delivery timing: a default delay of its new messages, and the backoff of its retries (base and
 * cap, in seconds). Null: the server-wide default (none, queue.retry_backoff_seconds and _max_seconds).
 * Nothing else changes in the storage model: a pending message's or delivery's `visible_at` already says
 * when it may be claimed.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('topic_configs', (t) => {
    t.bigInteger('delivery_delay_seconds').nullable();
    t.bigInteger('retry_backoff_seconds').nullable();
    t.bigInteger('retry_backoff_max_seconds').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('topic_configs', (t) => {
    t.dropColumn('delivery_delay_seconds');
    t.dropColumn('retry_backoff_seconds');
    t.dropColumn('retry_backoff_max_seconds');
  });
}
