import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

// Message ids are UUIDv7 drawn from a pooled random source (src/queue/message-ids.ts); many are made in the
// same millisecond, and dequeue hands messages out in id order, so ids must keep counting up within one.
describeEachEngine('message ids and order', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('gives a batch of 1,000 distinct, increasing UUIDv7 ids and dequeues them in enqueue order', async () => {
    const messages = Array.from({ length: 1000 }, (_, i) => ({ topic: 'ids-order', payload: `m${i}` }));
    const res = await server.api.post('/api/messages/batch', { messages });
    expect(res.status).toBe(201);
    const ids: string[] = res.body.ids;
    expect(ids).toHaveLength(1000);
    for (const id of ids) expect(id).toMatch(UUID_V7);
    expect(new Set(ids).size).toBe(1000);
    expect([...ids].sort()).toEqual(ids);

    const dequeued = await server.api.dequeue('ids-order', { count: 1000 });
    expect(dequeued.body.messages.map((m: { payload: string }) => m.payload)).toEqual(messages.map((m) => m.payload));
  });
});
