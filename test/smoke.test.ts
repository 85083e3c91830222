import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { startTestServer, type TestServer } from './helpers/server.js';

describeEachEngine('smoke', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('enqueues, dequeues and acks a message', async () => {
    const { api } = server;
    const created = await api.enqueue('smoke', 'hello');
    expect(created.status).toBe(201);
    const dequeued = await api.dequeue('smoke');
    expect(dequeued.body.messages.map((m: any) => m.id)).toEqual([created.body.id]);
    expect((await api.post(`/api/messages/${created.body.id}/ack`)).status).toBe(204);
    expect((await api.dequeue('smoke')).body.messages).toEqual([]);
  });
});
