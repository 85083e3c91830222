import type { Knex } from 'knex';

export interface DeliveryCount {
  topic: string;
  consumer_group: string;
  status: string;
  count: number;
}

/** Per-group counts for /api/stats; acked rows are bookkeeping until their message completes, not shown. */
export async function countDeliveriesByStatus(db: Knex): Promise<DeliveryCount[]> {
  const rows = await db('deliveries')
    .select('topic', 'consumer_group', 'status')
    .count({ n: '*' })
    .whereNot({ status: 'acked' })
    .groupBy('topic', 'consumer_group', 'status')
    .orderBy(['topic', 'consumer_group', 'status']);
  return rows.map((r: Record<string, unknown>) => ({ topic: String(r.topic), consumer_group: String(r.consumer_group), status: String(r.status), count: Number(r.n) }));
}

export interface OldestDelivery {
  topic: string;
  consumer_group: string;
  createdAt: number;
}

/**
 * created_at of the oldest pending delivery of each group: one walk of `deliveries_claim` (topic, group, status,
 * message_id) to its first entry per group, never a scan. Message ids are UUIDv7, so the first is the oldest.
 */
export async function oldestPendingDeliveryCreatedAt(db: Knex, groups: Array<{ topic: string; consumer_group: string }>): Promise<OldestDelivery[]> {
  const oldest: OldestDelivery[] = [];
  for (const { topic, consumer_group } of groups) {
    const row = await db('deliveries as d')
      .join('messages as m', 'm.id', 'd.message_id')
      .where({ 'd.topic': topic, 'd.consumer_group': consumer_group, 'd.status': 'pending' })
      .orderBy('d.message_id')
      .first('m.created_at');
    if (row) oldest.push({ topic, consumer_group, createdAt: Number(row.created_at) });
  }
  return oldest;
}
