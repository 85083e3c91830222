import type { Knex } from 'knex';
import { BEHIND_HEAD, UNJOINED } from './lines.js';

export interface LineCount {
  topic: string;
  /** '' for the topic's own lines. */
  consumer_group: string;
  /** Ordering keys with a live line (a head). */
  keys: number;
  /** Of those, the lines whose head a consumer holds while messages wait behind it. */
  waiting_keys: number;
}

/**
 * Lines per topic (and group), and how many of them are held up by a processing head: one pass over the
 * heads, each with a primary-key read of its head and an index seek into its line (messages_ordering).
 */
export async function countLines(db: Knex): Promise<LineCount[]> {
  const waiting = (q: Knex.QueryBuilder) =>
    q
      .select(1)
      .from('messages as w')
      .whereRaw('w.topic = h.topic AND w.ordering_key = h.ordering_key')
      .where('w.status', 'pending')
      .where('w.visible_at', '>=', UNJOINED);
  const plain = db('ordering_heads as h')
    .leftJoin('messages as m', 'm.id', 'h.message_id')
    .where('h.consumer_group', '')
    .groupBy('h.topic', 'h.consumer_group')
    .select('h.topic', 'h.consumer_group')
    .count({ keys: '*' })
    .select(db.raw(`SUM(CASE WHEN m.status = 'processing' AND EXISTS (${waiting(db.queryBuilder()).toQuery()}) THEN 1 ELSE 0 END) AS waiting_keys`));
  const grouped = db('ordering_heads as h')
    .leftJoin('deliveries as d', (j) => j.on('d.message_id', '=', 'h.message_id').andOn('d.consumer_group', '=', 'h.consumer_group'))
    .whereNot('h.consumer_group', '')
    .groupBy('h.topic', 'h.consumer_group')
    .select('h.topic', 'h.consumer_group')
    .count({ keys: '*' })
    .select(
      db.raw(
        `SUM(CASE WHEN d.status = 'processing' AND EXISTS (SELECT 1 FROM messages w JOIN deliveries wd ON wd.message_id = w.id AND wd.consumer_group = h.consumer_group ` +
          `WHERE w.topic = h.topic AND w.ordering_key = h.ordering_key AND wd.status = 'pending' AND wd.visible_at = ?) THEN 1 ELSE 0 END) AS waiting_keys`,
        [BEHIND_HEAD],
      ),
    );
  const rows = [...((await plain) as Array<Record<string, unknown>>), ...((await grouped) as Array<Record<string, unknown>>)];
  return rows
    .map((r) => ({ topic: String(r.topic), consumer_group: String(r.consumer_group), keys: Number(r.keys), waiting_keys: Number(r.waiting_keys ?? 0) }))
    .sort((a, b) => a.topic.localeCompare(b.topic) || a.consumer_group.localeCompare(b.consumer_group));
}
