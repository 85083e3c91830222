import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { metricValue } from './helpers/metrics.js';
import { startTestServer, type TestServer } from './helpers/server.js';

describeEachEngine('concurrency', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  async function fill(topic: string, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let start = 0; start < n; start += 1000) {
      const messages = Array.from({ length: Math.min(1000, n - start) }, (_, i) => ({ topic, payload: `m${start + i}` }));
      const res = await server.api.post('/api/messages/batch', { messages });
      expect(res.status).toBe(201);
      ids.push(...res.body.ids);
    }
    return ids;
  }

  it('concurrent dequeues of one topic share claim transactions, each caller getting a slice oldest first', async () => {
    const enqueued = await fill('combined', 60);
    const results = await Promise.all(Array.from({ length: 12 }, () => server.api.dequeue('combined', { count: 5 })));
    const batches = results.map((res) => {
      expect(res.status).toBe(200);
      return (res.body.messages as Array<{ id: string }>).map((m) => m.id);
    });
    for (const batch of batches) {
      expect(batch).toHaveLength(5);
      expect(batch).toEqual([...batch].sort());
    }
    expect(batches.flat().sort()).toEqual([...enqueued].sort());
    // Requests that arrived while a claim of the topic ran waited and shared the next one. On SQLite a claim
    // is over within microseconds, before the next request is even parsed, so there is seldom anything to share.
    const claims = await metricValue(server.api, 'conveyor_claims_total', { topic: 'combined', result: 'found' });
    expect(claims).toBeGreaterThan(0);
    if (engine.name === 'mysql') expect(claims).toBeLessThan(12);
  });

  it('8 parallel dequeuers over 2,000 messages never get a message twice and lose none', async () => {
    const enqueued = await fill('race', 2000);
    const received: string[][] = [];
    const acked: string[] = [];
    const consumer = async (index: number) => {
      const mine: string[] = [];
      const count = [1, 2, 3, 4, 6, 8, 9, 10][index];
      for (;;) {
        const res = await server.api.dequeue('race', { count });
        expect(res.status).toBe(200);
        const batch = res.body.messages as Array<{ id: string; status: string; topic: string }>;
        if (batch.length === 0) break;
        expect(batch.length).toBeLessThanOrEqual(count);
        expect(batch.every((m) => m.status === 'processing' && m.topic === 'race')).toBe(true);
        mine.push(...batch.map((m) => m.id));
        // Ack as we go, so claims race with deletes as well as with each other.
        const ack = await server.api.post('/api/messages/ack', { ids: batch.map((m) => m.id) });
        expect(ack.status).toBe(200);
        expect(ack.body.not_found).toEqual([]);
        acked.push(...ack.body.acked);
      }
      received.push(mine);
    };
    await Promise.all(Array.from({ length: 8 }, (_, i) => consumer(i)));

    const all = received.flat();
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBe(2000);
    expect([...all].sort()).toEqual([...enqueued].sort());
    expect([...acked].sort()).toEqual([...enqueued].sort());
    // Work was actually shared: no single consumer took everything.
    expect(received.filter((ids) => ids.length > 0).length).toBeGreaterThan(1);
    expect((await server.api.get('/api/messages?topic=race')).body.total).toBe(0);
    expect((await server.api.dequeue('race')).body.messages).toEqual([]);
  });

  it('parallel dequeuers without acks: every claimed message is processing exactly once, then all ack', async () => {
    const enqueued = await fill('race2', 600);
    const batches = await Promise.all(
      Array.from({ length: 30 }, (_, i) => server.api.dequeue('race2', { count: (i % 10) + 1 + 20 }).then((r) => r.body.messages.map((m: any) => m.id))),
    );
    const claimed: string[] = batches.flat();
    expect(new Set(claimed).size).toBe(claimed.length);
    const rest: string[] = [];
    for (;;) {
      const more = (await server.api.dequeue('race2', { count: 100 })).body.messages.map((m: any) => m.id);
      if (more.length === 0) break;
      rest.push(...more);
    }
    const all = [...claimed, ...rest];
    expect(new Set(all).size).toBe(600);
    expect(all.sort()).toEqual([...enqueued].sort());
    const acks = await Promise.all(all.map((id) => server.api.post(`/api/messages/${id}/ack`)));
    expect(acks.every((r) => r.status === 204)).toBe(true);
    expect((await server.api.get('/api/messages?topic=race2')).body.total).toBe(0);
  });

  it('messages whose visibility expired are redelivered exactly once to parallel dequeuers', async () => {
    const enqueued = await fill('expire-race', 200);
    const first = (await server.api.dequeue('expire-race', { count: 200, visibility_timeout_seconds: 1 })).body.messages;
    expect(first).toHaveLength(200);
    await new Promise((r) => setTimeout(r, 1100));
    const batches = await Promise.all(Array.from({ length: 8 }, (_, i) => server.api.dequeue('expire-race', { count: 10 + i * 5 })));
    const second: any[] = batches.flatMap((b) => b.body.messages);
    for (;;) {
      const more = (await server.api.dequeue('expire-race', { count: 100 })).body.messages;
      if (more.length === 0) break;
      second.push(...more);
    }
    expect(second).toHaveLength(200);
    expect(new Set(second.map((m) => m.id)).size).toBe(200);
    expect(second.map((m) => m.id).sort()).toEqual([...enqueued].sort());
    // Each expiry counted as one delivery attempt, not one per racing dequeuer.
    expect(new Set(second.map((m) => m.retry_count))).toEqual(new Set([1]));
    await server.api.post('/api/messages/ack', { ids: second.map((m) => m.id) });
  });

  it('an ack and a nack racing on one message: exactly one wins', async () => {
    const ids = await fill('settle-race', 40);
    await server.api.dequeue('settle-race', { count: 40 });
    const results = await Promise.all(
      ids.map(async (id) => {
        const [ack, nack, ack2] = await Promise.all([
          server.api.post(`/api/messages/${id}/ack`),
          server.api.post(`/api/messages/${id}/nack`, { error: 'x' }),
          server.api.post(`/api/messages/${id}/ack`),
        ]);
        return [ack.status, nack.status, ack2.status];
      }),
    );
    for (const statuses of results) {
      expect(statuses.filter((s) => s === 204), JSON.stringify(statuses)).toHaveLength(1);
      expect(statuses.filter((s) => s === 404)).toHaveLength(2);
    }
    const nackWon = results.filter(([, nack]) => nack === 204).length;
    const left = (await server.api.get('/api/messages?topic=settle-race&limit=200')).body.items;
    expect(left).toHaveLength(nackWon);
    for (const m of left) expect(m).toMatchObject({ status: 'pending', retry_count: 1, last_error: 'x' });
  });

  it('parallel requeues of one dead letter: exactly one succeeds', async () => {
    await server.api.put('/api/topic-configs/requeue-race', { max_retries: 1 });
    const [id] = await fill('requeue-race', 1);
    await server.api.dequeue('requeue-race');
    expect((await server.api.post(`/api/messages/${id}/nack`)).status).toBe(204);
    const results = await Promise.all(Array.from({ length: 10 }, () => server.api.post(`/api/messages/${id}/requeue`)));
    expect(results.filter((r) => r.status === 204)).toHaveLength(1);
    expect(results.filter((r) => r.status === 404)).toHaveLength(9);
    expect((await server.api.get('/api/messages?topic=requeue-race')).body.total).toBe(1);
    expect((await server.api.get('/api/messages?topic=requeue-race.dlq')).body.total).toBe(0);
  });

  it('purges racing with consumers: each message is removed exactly once, by an ack or by a purge', async () => {
    await fill('purge-race', 800);
    let acked = 0;
    let purged = 0;
    const consumer = async () => {
      for (;;) {
        const res = await server.api.dequeue('purge-race', { count: 20 });
        expect(res.status).toBe(200);
        if (res.body.messages.length === 0) return;
        const ack = await server.api.post('/api/messages/ack', { ids: res.body.messages.map((m: any) => m.id) });
        expect(ack.status).toBe(200);
        acked += ack.body.acked.length;
      }
    };
    const purger = async () => {
      for (let i = 0; i < 5; i++) {
        await new Promise((r) => setTimeout(r, 15));
        const res = await server.api.post('/api/topics/purge-race/purge', { statuses: ['pending', 'processing'] });
        expect(res.status).toBe(200);
        purged += res.body.deleted;
      }
    };
    await Promise.all([consumer(), consumer(), consumer(), consumer(), purger()]);
    purged += (await server.api.post('/api/topics/purge-race/purge')).body.deleted;
    expect(acked + purged).toBe(800);
    expect((await server.api.get('/api/messages?topic=purge-race')).body.total).toBe(0);
  });

  it('60 parallel keyed enqueues of 4 keys leave exactly one pending message per key', async () => {
    const keys = ['k0', 'k1', 'k2', 'k3'];
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => server.api.enqueue('keyed', `v${i}`, { key: keys[i % 4], metadata: { n: String(i) } }).then((r) => ({ i, r }))),
    );
    for (const { r } of results) expect(r.status).toBe(201);
    const { items } = (await server.api.get('/api/messages?topic=keyed&limit=200')).body;
    expect(items).toHaveLength(4);
    expect(items.map((m: any) => m.key).sort()).toEqual(keys);
    for (const item of items) {
      expect(item.status).toBe('pending');
      // Every enqueue of a key got the id of the one pending message of that key.
      const ids = new Set(results.filter(({ i }) => keys[i % 4] === item.key).map(({ r }) => r.body.id));
      expect([...ids]).toEqual([item.id]);
      // Payload and metadata come from the same enqueue (one of that key's).
      const n = Number(item.metadata.n);
      expect(keys[n % 4]).toBe(item.key);
      expect(item.payload).toBe(`v${n}`);
    }
  });

  it('keyed enqueues racing with dequeues keep at most one pending message per key', async () => {
    const keys = ['a', 'b', 'c'];
    const enqueues = Array.from({ length: 90 }, (_, i) => server.api.enqueue('keyed2', `v${i}`, { key: keys[i % 3] }));
    const dequeues = Array.from({ length: 10 }, () => server.api.dequeue('keyed2', { count: 3 }));
    const [enqueueResults] = await Promise.all([Promise.all(enqueues), Promise.all(dequeues)]);
    expect(enqueueResults.every((r) => r.status === 201)).toBe(true);
    const { items } = (await server.api.get('/api/messages?topic=keyed2&limit=200')).body;
    const pendingKeys = items.filter((m: any) => m.status === 'pending').map((m: any) => m.key);
    expect(new Set(pendingKeys).size).toBe(pendingKeys.length);
    expect(pendingKeys.length).toBeLessThanOrEqual(3);
    // Every enqueue's id is a stored message (none was lost to a failed upsert).
    const stored = new Set(items.map((m: any) => m.id));
    for (const r of enqueueResults) expect(stored.has(r.body.id)).toBe(true);
  });

  it('100 parallel enqueues to a topic with max_depth 20 leave exactly 20 pending; the rest get 429', async () => {
    expect((await server.api.put('/api/topic-configs/capped', { max_depth: 20 })).status).toBe(200);
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => server.api.enqueue('capped', `m${i}`)));
    const created = results.filter((r) => r.status === 201);
    const full = results.filter((r) => r.status === 429);
    expect(created).toHaveLength(20);
    expect(full).toHaveLength(80);
    for (const r of full) expect(Object.keys(r.body)).toEqual(['error']);
    const { items, total } = (await server.api.get('/api/messages?topic=capped&limit=200')).body;
    expect(total).toBe(20);
    expect(items.map((m: any) => m.id).sort()).toEqual(created.map((r) => r.body.id).sort());

    // Draining makes room again, exactly as much as was drained.
    await server.api.dequeue('capped', { count: 5 });
    const refill = await Promise.all(Array.from({ length: 30 }, (_, i) => server.api.enqueue('capped', `r${i}`)));
    expect(refill.filter((r) => r.status === 201)).toHaveLength(5);
    const stats = (await server.api.get('/api/stats')).body.topics.filter((t: any) => t.topic === 'capped');
    expect(stats.find((t: any) => t.status === 'pending').count).toBe(20);
  });

  it('parallel batch enqueues to a capped topic are all-or-nothing and never exceed the cap', async () => {
    await server.api.put('/api/topic-configs/capped2', { max_depth: 25 });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => server.api.post('/api/messages/batch', { messages: Array.from({ length: 5 }, (_, j) => ({ topic: 'capped2', payload: `${i}.${j}` })) })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(5);
    expect(results.filter((r) => r.status === 429)).toHaveLength(5);
    expect((await server.api.get('/api/messages?topic=capped2')).body.total).toBe(25);
  });
});
