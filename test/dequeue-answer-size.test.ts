import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { QueueClient } from './helpers/grpc.js';
import { dequeueIds, listTopic } from './helpers/messages.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * queue.max_dequeue_bytes: one dequeue answers messages in order until their size reaches the bound (always at
 * least one); what its claim took beyond goes back to pending with no attempt counted.
 */
describeEachEngine('dequeue answer size', (engine) => {
  let small: TestServer;
  let standard: TestServer;
  beforeAll(async () => {
    [small, standard] = await Promise.all([startTestServer(engine, { overrides: { queue: { max_dequeue_bytes: 10_000 } } }), startTestServer(engine)]);
  });
  afterAll(async () => {
    await Promise.all([small?.close(), standard?.close()]);
  });

  const enqueueAll = async (server: TestServer, topic: string, payloads: string[]) => {
    const res = await server.api.post('/api/messages/batch', { messages: payloads.map((payload) => ({ topic, payload })) });
    expect(res.status, res.text).toBe(201);
    return res.body.ids as string[];
  };

  it('answers messages in order up to the bound and leaves the rest pending with no attempt counted', async () => {
    const ids = await enqueueAll(small, 'size', ['a', 'b', 'c', 'd', 'e'].map((c) => c.repeat(3000)));
    expect(await dequeueIds(small.api, 'size', { count: 5 })).toEqual(ids.slice(0, 3));
    const rest = (await listTopic(small.api, 'size')).filter((m) => m.status === 'pending');
    expect(rest.map((m) => [m.id, m.retry_count])).toEqual(ids.slice(3).map((id) => [id, 0]));
    expect(await dequeueIds(small.api, 'size', { count: 5 })).toEqual(ids.slice(3));
  });

  it('always answers one message, however large', async () => {
    const [large, next] = await enqueueAll(small, 'size-one', ['x'.repeat(50_000), 'y']);
    expect(await dequeueIds(small.api, 'size-one', { count: 10 })).toEqual([large]);
    expect(await dequeueIds(small.api, 'size-one', { count: 10 })).toEqual([next]);
  });

  it("bounds a consumer group's answer the same way, the rest pending for that group only", async () => {
    expect((await small.api.post('/api/topics/size-group/consumer-groups', { consumer_group: 'g' })).status).toBe(201);
    const ids = await enqueueAll(small, 'size-group', ['a', 'b', 'c', 'd'].map((c) => c.repeat(4000)));
    expect(await dequeueIds(small.api, 'size-group', { count: 4, consumer_group: 'g' })).toEqual(ids.slice(0, 2));
    const counts = (await small.api.get('/api/stats')).body.consumer_groups.filter((g: any) => g.topic === 'size-group');
    expect(counts).toEqual([
      { topic: 'size-group', consumer_group: 'g', status: 'pending', count: 2 },
      { topic: 'size-group', consumer_group: 'g', status: 'processing', count: 2 },
    ]);
    const again = await small.api.dequeue('size-group', { count: 4, consumer_group: 'g' });
    expect(again.body.messages.map((m: any) => [m.id, m.retry_count])).toEqual(ids.slice(2).map((id) => [id, 0]));
  });

  it("keeps a BatchDequeue of 1 MB messages within a default gRPC client's 4 MiB receive limit", async () => {
    const ids = await enqueueAll(standard, 'size-grpc', ['a', 'b', 'c', 'd', 'e', 'f'].map((c) => c.repeat(1_000_000)));
    const client = new QueueClient(standard.server.grpcPort);
    try {
      const first = await client.call('BatchDequeue', { topic: 'size-grpc', count: 6 });
      expect(first.messages.map((m: any) => m.id)).toEqual(ids.slice(0, 4));
      const second = await client.call('BatchDequeue', { topic: 'size-grpc', count: 6 });
      expect(second.messages.map((m: any) => [m.id, m.retry_count])).toEqual(ids.slice(4).map((id) => [id, 0]));
    } finally {
      client.close();
    }
  });
});
