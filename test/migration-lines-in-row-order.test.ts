import { expect, it } from 'vitest';
import { BEHIND_HEAD } from '../src/store/ordering/lines.js';
import { describeEachEngine } from './helpers/engines.js';
import { earlierRow, freshDatabases, migratedUpTo, orderedId as id } from './helpers/earlier-schema.js';
import { startTestServer } from './helpers/server.js';

const BEFORE = '20261128060000_queue_defaults';

/**
 * A database written before migration 20261129010000_lines_in_row_order, holding a line whose second row was
 * requeued to the back (a later ordering_seq than the row stored after it). On SQLite lines are in row order
 * from then on: the upgrade must keep the line's order, and a requeue after it must still go to the back.
 */
describeEachEngine('upgrade to lines in row order', (engine) => {
  const freshDatabase = freshDatabases(engine);

  it('keeps a line with a requeued message in its order, and requeues to the back after it', async () => {
    const database = await freshDatabase();
    const old = await migratedUpTo(database, BEFORE);
    const now = Date.now();
    const row = (n: number, seq: string, head: boolean) =>
      // Message 1 is on its last attempt (queue.dlq_threshold, 3): its nack dead-letters it.
      earlierRow(n, now, { retry_count: n === 1 ? 2 : 0, visible_at: head ? 0 : BEHIND_HEAD, ordering_key: 'K', ordering_seq: seq });
    // Stored 1, 2, 3; message 2 was requeued after 3 was enqueued: the line is 1, 3, 2.
    await old('messages').insert([row(1, id(1), true), row(2, id(9), false), row(3, id(3), false)]);
    await old('ordering_heads').insert({ topic: 'upgraded', consumer_group: '', ordering_key: 'K', message_id: id(1) });
    await old.destroy();

    const server = await startTestServer(engine, { database });
    try {
      const next = async () => {
        const { body } = await server.api.dequeue('upgraded', { count: 10 });
        expect(body.messages).toHaveLength(1);
        return body.messages[0] as { id: string; payload: string };
      };
      const taken: string[] = [];
      for (let i = 0; i < 3; i++) {
        const m = await next();
        taken.push(m.payload);
        // The first one goes to the dead-letter topic, to be requeued below.
        if (i === 0) expect((await server.api.post(`/api/messages/${m.id}/nack`, { error: 'x' })).status).toBe(204);
        else expect((await server.api.post(`/api/messages/${m.id}/ack`, {})).status).toBe(204);
      }
      expect(taken).toEqual(['m1', 'm3', 'm2']);

      // Two more of the key, then the dead letter back: it waits behind both.
      for (const payload of ['m4', 'm5']) expect((await server.api.enqueue('upgraded', payload, { ordering_key: 'K' })).status).toBe(201);
      expect((await server.api.post(`/api/messages/${id(1)}/requeue`, {})).status).toBe(204);
      const after: string[] = [];
      for (let i = 0; i < 3; i++) {
        const m = await next();
        after.push(m.payload);
        expect((await server.api.post(`/api/messages/${m.id}/ack`, {})).status).toBe(204);
      }
      expect(after).toEqual(['m4', 'm5', 'm1']);
    } finally {
      await server.close();
    }
  });
});
