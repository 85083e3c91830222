import type { Knex } from 'knex';

/**
 * A topic's defaults for its consumers (docs/http-api.md, docs/sqs.md): the visibility timeout of a dequeue
 * that names none, the wait of an SQS ReceiveMessage that names none, and whether a FIFO queue's send without
 * a MessageDeduplicationId is deduplicated by its body's SHA-256. Null: the server's default
 * (queue.visibility_timeout, no wait, content-based deduplication on, as before these columns existed).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('topic_configs', (t) => {
    t.bigInteger('visibility_timeout_seconds').nullable();
    t.integer('receive_wait_seconds').nullable();
    t.boolean('content_based_deduplication').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('topic_configs', (t) => {
    t.dropColumn('visibility_timeout_seconds');
    t.dropColumn('receive_wait_seconds');
    t.dropColumn('content_based_deduplication');
  });
}
