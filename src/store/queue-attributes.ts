import type { Knex } from 'knex';
import { UNJOINED } from './ordering/lines.js';
import { withDbRetry } from './retry.js';

/** A topic's messages as a queue counts them (the SQS-compatible API's Approximate... attributes). */
export interface QueueCounts {
  /** Pending and available now, or waiting behind the head of their ordering key. */
  visible: number;
  /** Being processed (claimed, within their visibility timeout). */
  inFlight: number;
  /** Pending with a delay or retry backoff that has not passed. */
  delayed: number;
}

/** One grouped read over the topic's (topic, status) index range. */
export async function countQueue(db: Knex, topic: string, now: number): Promise<QueueCounts> {
  const rows = (await withDbRetry(db, () =>
    db('messages')
      .where({ topic })
      .whereIn('status', ['pending', 'processing'])
      .select('status')
      .select(db.raw('SUM(CASE WHEN visible_at > ? AND visible_at < ? THEN 1 ELSE 0 END) AS later', [now, UNJOINED]))
      .count({ n: '*' })
      .groupBy('status'),
  )) as Array<{ status: string; later: unknown; n: unknown }>;
  const counts: QueueCounts = { visible: 0, inFlight: 0, delayed: 0 };
  for (const row of rows) {
    const n = Number(row.n ?? 0);
    if (row.status === 'processing') counts.inFlight += n;
    else {
      const later = Number(row.later ?? 0);
      counts.delayed += later;
      counts.visible += n - later;
    }
  }
  return counts;
}

/** When the topic's configuration row was first written (ms), or null without one. */
export async function topicConfigCreatedAt(db: Knex, topic: string): Promise<number | null> {
  const row = (await withDbRetry(db, () => db('topic_configs').where({ topic }).first('created_at'))) as { created_at?: unknown } | undefined;
  return row?.created_at == null ? null : Number(row.created_at);
}
