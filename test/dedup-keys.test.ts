import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachEngine, type TestDatabase } from './helpers/engines.js';
import { dequeueIds, enqueueId, failOnce, findMessage, listTopic, nack } from './helpers/messages.js';
import { metricValue } from './helpers/metrics.js';
import { manualClock, startTestServer, type TestServer } from './helpers/server.js';

const pendingWithKey = async (server: TestServer, topic: string, key: string) =>
  (await listTopic(server.api, topic)).filter((m) => m.key === key && m.status === 'pending');

describeEachEngine('deduplication keys', (engine) => {
  const clock = manualClock();
  let server: TestServer & { database: TestDatabase };
  beforeAll(async () => {
    // dlq_threshold 0 and max_retries 5: a nack always returns the message to pending here.
    server = await startTestServer(engine, { now: clock.now, overrides: { queue: { dlq_threshold: 0, max_retries: 5 } } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('upserts a pending message: same id (201), payload and metadata overwritten', async () => {
    const first = await server.api.enqueue('keys-upsert', 'v1', { key: 'order-1', metadata: { rev: '1', only: 'first' } });
    const second = await server.api.enqueue('keys-upsert', 'v2', { key: 'order-1', metadata: { rev: '2' } });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body.id).toBe(first.body.id);
    const messages = await listTopic(server.api, 'keys-upsert');
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ id: first.body.id, key: 'order-1', payload: 'v2', metadata: { rev: '2' }, status: 'pending' });
  });

  it('a retried enqueue of the same payload and metadata returns the stored id, which acks', async () => {
    const first = await enqueueId(server.api, 'keys-retry', 'same', { key: 'k', metadata: { a: 'b' } });
    // A producer's retry after a lost answer: nothing changes in the row.
    expect(await enqueueId(server.api, 'keys-retry', 'same', { key: 'k', metadata: { a: 'b' } })).toBe(first);
    expect(await enqueueId(server.api, 'keys-retry', 'same', { key: 'k', metadata: { a: 'b' } })).toBe(first);
    expect((await listTopic(server.api, 'keys-retry')).map((m) => m.id)).toEqual([first]);
    expect(await dequeueIds(server.api, 'keys-retry', 10)).toEqual([first]);
    expect((await server.api.post(`/api/messages/${first}/ack`)).status).toBe(204);
  });

  it('overwrites metadata with {} when the upsert gives none', async () => {
    const id = await enqueueId(server.api, 'keys-meta', 'v1', { key: 'k', metadata: { a: 'b' } });
    expect(await enqueueId(server.api, 'keys-meta', 'v2', { key: 'k' })).toBe(id);
    expect((await findMessage(server.api, 'keys-meta', id)).metadata).toEqual({});
  });

  it('keeps messages without a key apart, and messages with other keys apart', async () => {
    const a = await enqueueId(server.api, 'keys-distinct', 'x');
    const b = await enqueueId(server.api, 'keys-distinct', 'x');
    const c = await enqueueId(server.api, 'keys-distinct', 'x', { key: 'k1' });
    const d = await enqueueId(server.api, 'keys-distinct', 'x', { key: 'k2' });
    expect(new Set([a, b, c, d]).size).toBe(4);
  });

  it('scopes keys per topic', async () => {
    const a = await enqueueId(server.api, 'keys-topic-a', 'a', { key: 'shared' });
    const b = await enqueueId(server.api, 'keys-topic-b', 'b', { key: 'shared' });
    expect(b).not.toBe(a);
    expect((await findMessage(server.api, 'keys-topic-a', a)).payload).toBe('a');
    expect((await findMessage(server.api, 'keys-topic-b', b)).payload).toBe('b');
  });

  it.each([
    ['case', 'Order-1', 'order-1'],
    ['a trailing space', 'order-1', 'order-1 '],
    ['a leading space', 'order-1', ' order-1'],
    ['an accent', 'cafe', 'café'],
  ])('compares keys exactly: keys differing in %s are two keys', async (what, first, second) => {
    const topic = `keys-exact-${what.replace(/ /g, '-')}`;
    const a = await enqueueId(server.api, topic, 'a', { key: first });
    const b = await enqueueId(server.api, topic, 'b', { key: second });
    expect(b).not.toBe(a);
    expect((await listTopic(server.api, topic)).map((m) => [m.key, m.payload])).toEqual([
      [first, 'a'],
      [second, 'b'],
    ]);
  });

  it('creates a new pending message when the keyed message is processing, leaving the delivered one alone', async () => {
    const first = await enqueueId(server.api, 'keys-processing', 'v1', { key: 'k' });
    expect(await dequeueIds(server.api, 'keys-processing')).toEqual([first]);
    const second = await enqueueId(server.api, 'keys-processing', 'v2', { key: 'k' });
    expect(second).not.toBe(first);
    expect(await findMessage(server.api, 'keys-processing', first)).toMatchObject({ status: 'processing', payload: 'v1' });
    expect(await findMessage(server.api, 'keys-processing', second)).toMatchObject({ status: 'pending', payload: 'v2' });
    // A third enqueue upserts the new pending one, not the processing one.
    expect(await enqueueId(server.api, 'keys-processing', 'v3', { key: 'k' })).toBe(second);
    expect((await findMessage(server.api, 'keys-processing', second)).payload).toBe('v3');
  });

  it('does not upsert a message that was acked; the key is free again', async () => {
    const first = await enqueueId(server.api, 'keys-acked', 'v1', { key: 'k' });
    await dequeueIds(server.api, 'keys-acked');
    expect((await server.api.post(`/api/messages/${first}/ack`)).status).toBe(204);
    const second = await enqueueId(server.api, 'keys-acked', 'v2', { key: 'k' });
    expect(second).not.toBe(first);
  });

  // MySQL: row locks on the pending-key index, taken by concurrent transactions (two flushes per instance).
  if (engine.name === 'mysql') it('concurrent batches upserting the same keys in different orders all succeed, on two instances', async () => {
    const other = await startTestServer(engine, { now: clock.now, database: server.database });
    try {
      const keys = Array.from({ length: 30 }, (_, i) => `k${i}`);
      const shuffled = () => [...keys].sort(() => Math.random() - 0.5);
      const batches = Array.from({ length: 40 }, (_, b) =>
        (b % 2 ? other : server).api.post('/api/messages/batch', { messages: shuffled().map((key) => ({ topic: 'keys-batches', payload: `b${b}`, key })) }),
      );
      // Each upsert locks its key's index entry: taken in request order, these deadlocked until retries ran out (503).
      expect((await Promise.all(batches)).map((r) => r.status)).toEqual(batches.map(() => 201));
      const pending = (await listTopic(server.api, 'keys-batches')).filter((m) => m.status === 'pending');
      expect(pending.map((m) => m.key).sort()).toEqual([...keys].sort());
    } finally {
      await other.close();
    }
  });

  describe('supersede: a message returning to pending while a newer one holds its key', () => {
    it('is removed on nack (204, never 500), and the newer message stays', async () => {
      const old = await enqueueId(server.api, 'keys-sup-nack', 'old', { key: 'k' });
      await dequeueIds(server.api, 'keys-sup-nack');
      const newer = await enqueueId(server.api, 'keys-sup-nack', 'new', { key: 'k' });
      await nack(server.api, old, 'failed');
      const messages = await listTopic(server.api, 'keys-sup-nack');
      expect(messages.map((m) => m.id)).toEqual([newer]);
      expect(messages[0]).toMatchObject({ payload: 'new', status: 'pending', retry_count: 0 });
      // The superseded id is gone for good.
      expect((await server.api.post(`/api/messages/${old}/nack`)).status).toBe(404);
    });

    it('is not removed on nack when no other message holds its key', async () => {
      const id = await enqueueId(server.api, 'keys-sup-alone', 'x', { key: 'k' });
      await failOnce(server.api, 'keys-sup-alone', id);
      expect(await findMessage(server.api, 'keys-sup-alone', id)).toMatchObject({ status: 'pending', retry_count: 1 });
      // It holds the key again: an enqueue upserts it.
      expect(await enqueueId(server.api, 'keys-sup-alone', 'y', { key: 'k' })).toBe(id);
    });

    it('is removed when its visibility timeout expires, and dequeue hands out the newer one', async () => {
      const old = await enqueueId(server.api, 'keys-sup-vis', 'old', { key: 'k' });
      expect(await dequeueIds(server.api, 'keys-sup-vis', { visibility_timeout_seconds: 5 })).toEqual([old]);
      const newer = await enqueueId(server.api, 'keys-sup-vis', 'new', { key: 'k' });
      clock.advance(5_001);
      const res = await server.api.dequeue('keys-sup-vis', { count: 10 });
      expect(res.status).toBe(200);
      expect(res.body.messages.map((m: any) => m.id)).toEqual([newer]);
      expect((await listTopic(server.api, 'keys-sup-vis')).map((m) => m.id)).toEqual([newer]);
    });

    it('is removed on requeue of a dead letter (204), and the newer message stays', async () => {
      const dlq = await startTestServer(engine, { overrides: { queue: { dlq_threshold: 1 } } });
      try {
        const old = await enqueueId(dlq.api, 'keys-sup-requeue', 'old', { key: 'k' });
        await failOnce(dlq.api, 'keys-sup-requeue', old);
        expect(await findMessage(dlq.api, 'keys-sup-requeue.dlq', old)).toMatchObject({ status: 'pending', key: 'k' });
        // The dead letter does not hold the key of its original topic: this creates a new message.
        const newer = await enqueueId(dlq.api, 'keys-sup-requeue', 'new', { key: 'k' });
        expect(newer).not.toBe(old);
        expect((await dlq.api.post(`/api/messages/${old}/requeue`)).status).toBe(204);
        expect(await listTopic(dlq.api, 'keys-sup-requeue.dlq')).toEqual([]);
        const messages = await listTopic(dlq.api, 'keys-sup-requeue');
        expect(messages.map((m) => [m.id, m.payload])).toEqual([[newer, 'new']]);
      } finally {
        await dlq.close();
      }
    });

    it('an older message holding the key gives way to a newer one returning: the latest value of a key stays', async () => {
      const superseded = () => metricValue(server.api, 'conveyor_messages_superseded_total', { topic: 'keys-sup-order' });
      const before = await superseded();
      const old = await enqueueId(server.api, 'keys-sup-order', 'v0-old', { key: 'k' });
      expect(await dequeueIds(server.api, 'keys-sup-order')).toEqual([old]);
      const newer = await enqueueId(server.api, 'keys-sup-order', 'v1-new', { key: 'k' });
      expect(await dequeueIds(server.api, 'keys-sup-order')).toEqual([newer]);
      // The old one comes back first and holds the key; then the newer one comes back.
      await nack(server.api, old);
      await nack(server.api, newer);
      const messages = await listTopic(server.api, 'keys-sup-order');
      expect(messages.map((m) => [m.id, m.payload, m.status])).toEqual([[newer, 'v1-new', 'pending']]);
      expect(await superseded()).toBe(before + 1);
    });

    it('a holder whose TTL has passed holds nothing: the returning message keeps its place', async () => {
      const ttl = await startTestServer(engine, { now: clock.now, overrides: { queue: { dlq_threshold: 1 } } });
      try {
        expect((await ttl.api.put('/api/topic-configs/keys-sup-ttl', { message_ttl_seconds: 2 })).status).toBe(200);
        const first = await enqueueId(ttl.api, 'keys-sup-ttl', 'v1', { key: 'k' });
        await failOnce(ttl.api, 'keys-sup-ttl', first);
        const second = await enqueueId(ttl.api, 'keys-sup-ttl', 'v2', { key: 'k' });
        clock.advance(2_500);
        // The second one's TTL has passed, though no expiry run has marked it yet: the requeued one stays.
        expect((await ttl.api.post(`/api/messages/${first}/requeue`)).status).toBe(204);
        expect((await ttl.api.dequeue('keys-sup-ttl')).body.messages.map((m: any) => m.id)).toEqual([first]);
        expect(await findMessage(ttl.api, 'keys-sup-ttl', second)).toMatchObject({ status: 'expired' });
      } finally {
        await ttl.close();
      }
    });

    it('leaves exactly one pending message per key after several redeliveries race with enqueues', async () => {
      const ids = [];
      for (let i = 0; i < 3; i++) {
        const id = await enqueueId(server.api, 'keys-sup-many', `v${i}`, { key: 'k' });
        ids.push(id);
        expect(await dequeueIds(server.api, 'keys-sup-many')).toEqual([id]);
      }
      const latest = await enqueueId(server.api, 'keys-sup-many', 'latest', { key: 'k' });
      for (const id of ids) await nack(server.api, id);
      const pending = await pendingWithKey(server, 'keys-sup-many', 'k');
      expect(pending.map((m) => m.id)).toEqual([latest]);
      expect(await listTopic(server.api, 'keys-sup-many')).toHaveLength(1);
    });
  });
});
