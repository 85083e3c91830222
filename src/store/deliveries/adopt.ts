import type { Knex } from 'knex';
import { runStatement } from '../statement.js';
import { capabilities } from '../capabilities.js';
import { BEHIND_HEAD, openLine } from '../ordering/lines.js';

/** `INSERT IGNORE` / `INSERT OR IGNORE`: a delivery that already exists is left as it is. */
function insertIgnore(trx: Knex.Transaction): string {
  return capabilities(trx).dialect === 'mysql' ? 'INSERT IGNORE INTO' : 'INSERT OR IGNORE INTO';
}

const DELIVERY_COLUMNS = '(message_id, topic, consumer_group, status, retry_count, last_error, visible_at, expires_at)';

/**
 * Gives `group` a pending delivery of every message of the topic that no group has started (row status
 * pending; a delayed or backed-off one keeps its time; one with an ordering key joins the group's line of its
 * key), and of messages a plain consumer holds (processing without any delivery). One INSERT ... SELECT,
 * so a backlog is adopted without shipping rows through Node.
 * MySQL/MariaDB: the messages are read under a share lock. In READ COMMITTED the SELECT would otherwise read
 * rows that a transaction finishing them (an unregistration's clean-up, a purge) has locked and is deleting,
 * and leave deliveries of messages that are gone; locked, it waits for that transaction and skips what it
 * deleted. Messages the group has a delivery of already are left out by the WHERE, so READ COMMITTED
 * releases their locks at once: a run again over a topic (the expiry reaper's repair) holds none of a
 * backlog that is in order, and does not stand in the way of claims.
 */
export async function adoptMessages(trx: Knex.Transaction, topic: string, group: string): Promise<number> {
  const result = await trx.raw(
    `${insertIgnore(trx)} deliveries ${DELIVERY_COLUMNS}
     SELECT m.id, m.topic, ?, 'pending', 0, '', CASE WHEN m.ordering_key IS NOT NULL THEN ? WHEN m.status = 'pending' THEN m.visible_at ELSE 0 END, m.expires_at FROM messages m
     WHERE m.topic = ? AND (m.status = 'pending'
       OR (m.status = 'processing' AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.message_id = m.id)))
       AND NOT EXISTS (SELECT 1 FROM deliveries o WHERE o.message_id = m.id AND o.consumer_group = ?)${capabilities(trx).rowLocks ? ' LOCK IN SHARE MODE' : ''}`,
    [group, BEHIND_HEAD, topic, group],
  );
  // The adopted messages of each ordering key wait in the group's own line, from its first one on.
  const keys = await trx('deliveries as d')
    .join('messages as m', 'm.id', 'd.message_id')
    .where({ 'd.topic': topic, 'd.consumer_group': group, 'd.status': 'pending', 'd.visible_at': BEHIND_HEAD })
    .distinct('m.ordering_key')
    .pluck('m.ordering_key');
  for (const key of keys.map(String).sort()) await openLine(trx, { topic, group, key }, Date.now());
  return deliveriesStored(result);
}

/** Rows an INSERT stored, from knex's raw answer: mysql2's [ResultSetHeader, ...]; 0 where the driver does not say. */
function deliveriesStored(result: unknown): number {
  const header = Array.isArray(result) ? (result[0] as { affectedRows?: unknown } | undefined) : undefined;
  return typeof header?.affectedRows === 'number' ? header.affectedRows : 0;
}

/** The registered groups of each topic, read inside the enqueue transaction so a new group is never missed. */
export async function groupsOfTopics(trx: Knex.Transaction, topics: string[]): Promise<Map<string, string[]>> {
  const groups = new Map<string, string[]>();
  if (topics.length === 0) return groups;
  const rows = await runStatement(trx, `SELECT topic, consumer_group FROM consumer_groups WHERE topic IN (${topics.map(() => '?').join(', ')})`, topics);
  for (const row of rows as Array<{ topic: string; consumer_group: string }>) {
    const list = groups.get(String(row.topic)) ?? [];
    list.push(String(row.consumer_group));
    groups.set(String(row.topic), list);
  }
  return groups;
}

export interface DeliveryTarget {
  id: string;
  topic: string;
  expiresAt: number | null;
  /** A delayed message: its deliveries are claimable from then on (epoch ms); 0 or absent: at once. */
  availableAt?: number;
  /** Its deliveries wait behind the heads of their groups' lines until they join them. */
  orderingKey?: string | null;
}

/** One pending delivery per (message, group) for messages just stored on fan-out topics. */
export async function insertDeliveries(trx: Knex.Transaction, messages: DeliveryTarget[], groupsOf: (topic: string) => string[] | undefined): Promise<void> {
  const rows = messages.flatMap((m) =>
    (groupsOf(m.topic) ?? []).map((group) => ({
      message_id: m.id,
      topic: m.topic,
      consumer_group: group,
      status: 'pending',
      retry_count: 0,
      last_error: '',
      visible_at: m.orderingKey != null ? BEHIND_HEAD : (m.availableAt ?? 0),
      expires_at: m.expiresAt,
    })),
  );
  for (let i = 0; i < rows.length; i += 500) {
    await trx('deliveries')
      .insert(rows.slice(i, i + 500))
      .onConflict(['message_id', 'consumer_group'])
      .ignore();
  }
}
