import type { Knex } from 'knex';

const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

/**
 * SQLite: an ordering key's line is in its rows' order (rowid), so `messages_ordering` drops `ordering_seq`
 * and becomes `(topic, ordering_key)`, whose entries SQLite keeps in rowid order within a key. Its entries are
 * about half as large, and an ordered flush's commit writes fewer pages (docs/performance.md). A requeue moves
 * its row to the end (src/store/ordering/lines.ts, requeueIntoLines).
 *
 * Rows are already in enqueue order, but a message requeued before this migration kept its old row and took a
 * later `ordering_seq`: the lines that hold one are put in `ordering_seq` order first, by moving their rows to
 * the end in that order. MySQL/MariaDB keep ordering by `ordering_seq`: nothing changes there.
 */
export async function up(db: Knex): Promise<void> {
  if (isMysql(db)) return;
  const moved = (await db.raw(
    'SELECT m.id FROM messages m WHERE m.ordering_key IS NOT NULL AND EXISTS (SELECT 1 FROM messages r WHERE r.topic = m.topic AND r.ordering_key = m.ordering_key AND r.ordering_seq <> r.id) ' +
      'ORDER BY m.topic, m.ordering_key, m.ordering_seq',
  )) as Array<{ id: string }>;
  for (const { id } of moved) await db.raw('UPDATE messages SET rowid = (SELECT MAX(rowid) + 1 FROM messages) WHERE id = ?', [id]);
  await db.raw('DROP INDEX messages_ordering');
  await db.raw('CREATE INDEX messages_ordering ON messages (topic, ordering_key)');
}

export async function down(db: Knex): Promise<void> {
  if (isMysql(db)) return;
  await db.raw('DROP INDEX messages_ordering');
  await db.raw('CREATE INDEX messages_ordering ON messages (topic, ordering_key, ordering_seq)');
}
