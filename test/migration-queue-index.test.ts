import { expect, it } from 'vitest';
import { createDb } from '../src/store/db.js';
import { describeEachEngine } from './helpers/engines.js';
import { earlierRow, freshDatabases, migratedUpTo, orderedId as id } from './helpers/earlier-schema.js';
import { startTestServer } from './helpers/server.js';

const BEFORE = '20261122060000_engine_parity';

/**
 * A database written by the version before migration 20261122070000_queue_index: pending rows carry their
 * enqueue or retry time in visible_at, and the indexes are messages_claim/visibility/expiry. Upgrading must
 * keep every message deliverable, in age order, and the reapers working.
 */
describeEachEngine('upgrade to the queue index', (engine) => {
  const freshDatabase = freshDatabases(engine);

  it('keeps old rows claimable in age order, and the reapers find expired messages', async () => {
    const database = await freshDatabase();
    const old = await migratedUpTo(database, BEFORE);
    const now = Date.now();
    const row = (n: number, fields: Record<string, unknown>) => earlierRow(n, now, fields);
    await old('messages').insert([
      // A retried message: the old version set visible_at to the retry time, later than newer messages'.
      row(1, { visible_at: now - 1_000, retry_count: 1 }),
      row(2, { visible_at: now - 9_000 }),
      row(3, { visible_at: now - 8_000 }),
      row(4, { visible_at: now - 7_000, expires_at: now - 5_000 }),
      row(5, { visible_at: now - 6_000, status: 'expired', expires_at: now - 6_000 }),
    ]);
    await old.destroy();

    const server = await startTestServer(engine, { database });
    try {
      const indexes = await indexNames(server.db);
      expect(indexes).toEqual(expect.arrayContaining(['messages_queue', 'messages_reap']));
      expect(indexes).not.toEqual(expect.arrayContaining(['messages_claim']));
      expect(await server.db('messages').where({ status: 'pending' }).whereNot({ visible_at: 0 }).count({ n: '*' }).first()).toEqual({ n: 0 });

      const dequeued = await server.api.dequeue('upgraded', { count: 10 });
      expect(dequeued.status).toBe(200);
      // Message 4's TTL passed: skipped by the claim; message 5 was already expired.
      expect(dequeued.body.messages.map((m: { id: string }) => m.id)).toEqual([id(1), id(2), id(3)]);

      const expiry = await server.api.post('/api/admin/expiry-reaper/run', {});
      expect(expiry.status).toBe(200);
      expect(expiry.body.expired).toBe(1);
      expect(await server.db('messages').where({ topic: 'upgraded', status: 'expired' }).orderBy('id').pluck('id')).toEqual([id(4), id(5)]);
      const deleted = await server.api.post('/api/admin/delete-reaper/run', {});
      expect(deleted.body.deleted).toBe(2);
      expect(await server.db('messages').where({ topic: 'upgraded' }).orderBy('id').pluck('id')).toEqual([id(1), id(2), id(3)]);
    } finally {
      await server.close();
    }
  });
});

async function indexNames(db: ReturnType<typeof createDb>): Promise<string[]> {
  if (String(db.client.config.client).startsWith('mysql')) {
    const [rows] = (await db.raw("SELECT DISTINCT INDEX_NAME AS name FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'messages'")) as [Array<{ name: string }>];
    return rows.map((r) => r.name);
  }
  const rows = (await db.raw("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages'")) as Array<{ name: string }>;
  return rows.map((r) => r.name);
}
