import { expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { earlierRow, freshDatabases, migratedUpTo, orderedId as id } from './helpers/earlier-schema.js';
import { startTestServer } from './helpers/server.js';

const BEFORE = '20261129020000_ordering_index_without_plain';
/** visible_at of a message waiting behind its key's head, as every release with ordering keys stores it. */
const BEHIND_HEAD = Number.MAX_SAFE_INTEGER;

/**
 * A MySQL/MariaDB database written before migration 20261129030000_ordering_keys_exact, whose collation took
 * ordering keys that differ only in trailing spaces ("k", "k ") for one line: one head row, one seek. Upgrading
 * splits such a line in two, and each part must keep moving, in order, with one message out at a time. SQLite
 * always compared keys byte for byte.
 */
describeEachEngine('upgrade to exact ordering keys', (engine) => {
  const freshDatabase = freshDatabases(engine);

  it.skipIf(engine.name !== 'mysql')('splits lines of keys that differ in trailing spaces; each keeps its order and one message out', async () => {
    const database = await freshDatabase();
    const old = await migratedUpTo(database, BEFORE);
    const now = Date.now();
    const row = (n: number, topic: string, key: string, visibleAt: number, fields: Record<string, unknown> = {}) =>
      earlierRow(n, now, { topic, ordering_key: key, ordering_seq: id(n), deliver_after: 0, visible_at: visibleAt, ...fields });
    await old('messages').insert([
      // One line under the old collation, its head the first message ("k").
      row(1, 'merged', 'k', 0),
      row(2, 'merged', 'k ', BEHIND_HEAD),
      row(3, 'merged', 'k', BEHIND_HEAD),
      row(4, 'merged', 'k ', BEHIND_HEAD),
      // Its head row spelt "j", its head a message of "j " being processed.
      row(5, 'respelt', 'j ', now + 600_000, { status: 'processing' }),
      row(6, 'respelt', 'j', BEHIND_HEAD),
      row(7, 'respelt', 'j ', BEHIND_HEAD),
    ]);
    await old('ordering_heads').insert([
      { topic: 'merged', consumer_group: '', ordering_key: 'k', message_id: id(1) },
      { topic: 'respelt', consumer_group: '', ordering_key: 'j', message_id: id(5) },
    ]);
    await old.destroy();

    const server = await startTestServer(engine, { database });
    try {
      const dequeued = async (topic: string) => ((await server.api.dequeue(topic, { count: 10 })).body.messages as Array<{ id: string }>).map((m) => m.id);
      const ack = async (n: number) => expect((await server.api.post(`/api/messages/${id(n)}/ack`)).status).toBe(204);

      expect(await dequeued('merged')).toEqual([id(1), id(2)]);
      await ack(1);
      await ack(2);
      expect(await dequeued('merged')).toEqual([id(3), id(4)]);

      // "j " keeps its processing head; "j" gets its own, and "j "'s next waits until its head is acked.
      expect(await dequeued('respelt')).toEqual([id(6)]);
      expect(await dequeued('respelt')).toEqual([]);
      await ack(5);
      expect(await dequeued('respelt')).toEqual([id(7)]);
      expect(await server.db('ordering_heads').where({ topic: 'respelt' }).orderBy('ordering_key').pluck('ordering_key')).toEqual(['j', 'j ']);
    } finally {
      await server.close();
    }
  });
});
