import * as grpc from '@grpc/grpc-js';
import { expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { clockedSuite, expectGrpcError, sleep, StreamRecorder } from './helpers/grpc.js';
import { dequeueIds, enqueueId, findMessage, putTopicConfig } from './helpers/messages.js';
import { startTestServer } from './helpers/server.js';

const iso = (ms: number) => new Date(ms).toISOString();
const ms = (timestamp: { seconds: number; nanos: number }) => timestamp.seconds * 1000 + timestamp.nanos / 1e6;

/**
 * Delayed messages: stored pending at once (counted by max_depth, listed with their `available_at`), but no
 * dequeue, Subscribe stream or consumer group gets one before its time; without a delay nothing changes.
 */
describeEachEngine('delayed messages', (engine) => {
  const suite = clockedSuite(engine, { queue: { max_delay_seconds: 3600 } });
  const api = () => suite.server.api;

  it('delay_seconds over HTTP: listed pending with available_at, not dequeued before its time, dequeued at it', async () => {
    const start = suite.clock.now();
    const id = await enqueueId(api(), 'dm-http', 'later', { delay_seconds: 30 });
    expect(await findMessage(api(), 'dm-http', id)).toMatchObject({ status: 'pending', created_at: iso(start), available_at: iso(start + 30_000) });
    const now = await enqueueId(api(), 'dm-http', 'now');
    // A message without a delay flows past the delayed one.
    expect(await dequeueIds(api(), 'dm-http', { count: 10, visibility_timeout_seconds: 600 })).toEqual([now]);
    suite.clock.advance(29_999);
    expect(await dequeueIds(api(), 'dm-http', { count: 10 })).toEqual([]);
    suite.clock.advance(1);
    const res = await api().dequeue('dm-http', { count: 10, visibility_timeout_seconds: 60 });
    expect(res.body.messages.map((m: any) => m.id)).toEqual([id]);
    // The dequeue view's available_at is when the claim ends.
    expect(res.body.messages[0].available_at).toBe(iso(suite.clock.now() + 60_000));
  });

  it('deliver_at: not before that time; one in the past is available at once', async () => {
    const at = suite.clock.now() + 20_000;
    const id = await enqueueId(api(), 'dm-at', 'x', { deliver_at: new Date(at).toISOString().replace('Z', '+00:00') });
    expect(await findMessage(api(), 'dm-at', id)).toMatchObject({ available_at: iso(at) });
    const past = await enqueueId(api(), 'dm-at', 'y', { deliver_at: iso(suite.clock.now() - 60_000) });
    expect(await dequeueIds(api(), 'dm-at', { count: 10 })).toEqual([past]);
    suite.clock.advance(19_000);
    expect(await dequeueIds(api(), 'dm-at', { count: 10 })).toEqual([]);
    suite.clock.advance(1_000);
    expect(await dequeueIds(api(), 'dm-at', { count: 10 })).toEqual([id]);
  });

  it("the topic's delivery_delay_seconds applies unless the enqueue names a delay, 0 included", async () => {
    await putTopicConfig(api(), 'dm-topic', { delivery_delay_seconds: 15 });
    const defaulted = await enqueueId(api(), 'dm-topic', 'a');
    const now = await enqueueId(api(), 'dm-topic', 'b', { delay_seconds: 0 });
    const longer = await enqueueId(api(), 'dm-topic', 'c', { delay_seconds: 40 });
    expect(await dequeueIds(api(), 'dm-topic', { count: 10, visibility_timeout_seconds: 600 })).toEqual([now]);
    suite.clock.advance(15_000);
    expect(await dequeueIds(api(), 'dm-topic', { count: 10, visibility_timeout_seconds: 600 })).toEqual([defaulted]);
    suite.clock.advance(25_000);
    expect(await dequeueIds(api(), 'dm-topic', { count: 10 })).toEqual([longer]);
  });

  it('a batch enqueue takes a delay per message', async () => {
    const res = await api().post('/api/messages/batch', {
      messages: [
        { topic: 'dm-batch', payload: 'a', delay_seconds: 10 },
        { topic: 'dm-batch', payload: 'b' },
        { topic: 'dm-batch', payload: 'c', deliver_at: iso(suite.clock.now() + 5_000) },
      ],
    });
    expect(res.status, res.text).toBe(201);
    const [a, b, c] = res.body.ids;
    expect(await dequeueIds(api(), 'dm-batch', { count: 10 })).toEqual([b]);
    suite.clock.advance(5_000);
    expect(await dequeueIds(api(), 'dm-batch', { count: 10 })).toEqual([c]);
    suite.clock.advance(5_000);
    expect(await dequeueIds(api(), 'dm-batch', { count: 10 })).toEqual([a]);
  });

  it('over gRPC: Enqueue and EnqueueBatch take delay_seconds and deliver_at; BatchDequeue answers available_at', async () => {
    const { id } = await suite.client.call('Enqueue', { topic: 'dm-grpc', payload: Buffer.from('x'), delay_seconds: 10 });
    const at = suite.clock.now() + 20_000;
    const { ids } = await suite.client.call('EnqueueBatch', {
      requests: [
        { topic: 'dm-grpc', payload: Buffer.from('y'), deliver_at: { seconds: Math.floor(at / 1000), nanos: (at % 1000) * 1e6 } },
        { topic: 'dm-grpc', payload: Buffer.from('z'), delay_seconds: 0 },
      ],
    });
    expect((await suite.client.call('BatchDequeue', { topic: 'dm-grpc', count: 10 })).messages.map((m: any) => m.id)).toEqual([ids[1]]);
    suite.clock.advance(10_000);
    const second = await suite.client.call('BatchDequeue', { topic: 'dm-grpc', count: 10, visibility_timeout_seconds: 45 });
    expect(second.messages.map((m: any) => m.id)).toEqual([id]);
    expect(ms(second.messages[0].available_at)).toBe(suite.clock.now() + 45_000);
    suite.clock.advance(9_999);
    await expectGrpcError(suite.client.call('Dequeue', { topic: 'dm-grpc' }), grpc.status.NOT_FOUND);
    suite.clock.advance(1);
    expect((await suite.client.call('Dequeue', { topic: 'dm-grpc' })).id).toBe(ids[0]);
  });

  it('a keyed enqueue that overwrites a pending message replaces its delay too', async () => {
    const id = await enqueueId(api(), 'dm-key', 'v1', { key: 'k', delay_seconds: 60 });
    expect(await enqueueId(api(), 'dm-key', 'v2', { key: 'k' })).toBe(id);
    const [message] = (await api().dequeue('dm-key', {})).body.messages;
    expect(message).toMatchObject({ id, payload: 'v2' });
    expect((await api().post(`/api/messages/${id}/ack`)).status).toBe(204);

    const other = await enqueueId(api(), 'dm-key', 'w1', { key: 'j' });
    expect(await enqueueId(api(), 'dm-key', 'w2', { key: 'j', delay_seconds: 30 })).toBe(other);
    expect(await dequeueIds(api(), 'dm-key')).toEqual([]);
    suite.clock.advance(30_000);
    expect(await dequeueIds(api(), 'dm-key')).toEqual([other]);
  });

  it('consumer groups get a delayed message at its time, each its own delivery', async () => {
    for (const group of ['a', 'b']) expect((await api().post('/api/topics/dm-fan/consumer-groups', { consumer_group: group })).status).toBe(201);
    const id = await enqueueId(api(), 'dm-fan', 'x', { delay_seconds: 12 });
    expect(await dequeueIds(api(), 'dm-fan', { consumer_group: 'a' })).toEqual([]);
    suite.clock.advance(12_000);
    expect(await dequeueIds(api(), 'dm-fan', { consumer_group: 'a' })).toEqual([id]);
    expect(await dequeueIds(api(), 'dm-fan', { consumer_group: 'b' })).toEqual([id]);
  });

  it("a consumer group takes its deliveries in a topic's order: ready ones oldest first (an immediate retry back in its place), a delayed one after them", async () => {
    expect((await api().post('/api/topics/dm-order/consumer-groups', { consumer_group: 'g' })).status).toBe(201);
    const later = await enqueueId(api(), 'dm-order', 'later', { delay_seconds: 5 });
    const first = await enqueueId(api(), 'dm-order', 'first');
    const second = await enqueueId(api(), 'dm-order', 'second');
    suite.clock.advance(5_000);
    const one = { consumer_group: 'g', count: 1 };
    expect(await dequeueIds(api(), 'dm-order', one)).toEqual([first]);
    expect((await api().post(`/api/messages/${first}/nack`, { consumer_group: 'g' })).status).toBe(204);
    expect(await dequeueIds(api(), 'dm-order', one)).toEqual([first]);
    expect(await dequeueIds(api(), 'dm-order', one)).toEqual([second]);
    expect(await dequeueIds(api(), 'dm-order', one)).toEqual([later]);
  });

  it('a Subscribe stream is not pushed a delayed message before its time', async () => {
    const stream = new StreamRecorder(suite.client.subscribe({ topic: 'dm-sub' }));
    try {
      await sleep(300);
      const id = await enqueueId(api(), 'dm-sub', 'x', { delay_seconds: 5 });
      // Subscribe feeds look again at least every second: two looks pass without the message.
      await sleep(2_200);
      expect(stream.received).toEqual([]);
      suite.clock.advance(5_000);
      await stream.until(() => stream.received.length === 1, 5_000, 'the delayed message');
      expect(stream.received[0].id).toBe(id);
    } finally {
      stream.stream.cancel();
    }
  });

  it('counts under max_depth while it waits', async () => {
    await putTopicConfig(api(), 'dm-depth', { max_depth: 1 });
    await enqueueId(api(), 'dm-depth', 'x', { delay_seconds: 60 });
    expectErrorBody(await api().enqueue('dm-depth', 'y'), 429);
  });

  it('refuses what cannot be kept (400 / INVALID_ARGUMENT), storing nothing', async () => {
    await putTopicConfig(api(), 'dm-bad', { message_ttl_seconds: 10 });
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ delay_seconds: -1 }, /delay_seconds must be an integer from 0 to/],
      [{ delay_seconds: 1.5 }, /delay_seconds must be an integer/],
      [{ delay_seconds: '5' }, /delay_seconds must be an integer/],
      // Beyond queue.max_delay_seconds (3600 here).
      [{ delay_seconds: 3601 }, /delay_seconds must be an integer from 0 to 3600/],
      [{ deliver_at: iso(suite.clock.now() + 3_601_000) }, /deliver_at must be at most 3600 seconds ahead/],
      [{ deliver_at: 'tomorrow' }, /deliver_at must be an RFC 3339 time/],
      [{ deliver_at: '2026-02-30T00:00:00Z' }, /deliver_at must be an RFC 3339 time/],
      [{ delay_seconds: 1, deliver_at: iso(suite.clock.now() + 5_000) }, /delay_seconds and deliver_at cannot be used together/],
      // At or beyond the topic's TTL: it would expire unseen.
      [{ delay_seconds: 10 }, /TTL/],
    ];
    for (const [extra, message] of cases) {
      const res = await api().enqueue('dm-bad', 'x', extra);
      expectErrorBody(res, 400);
      expect(res.body.error).toMatch(message);
    }
    await expectGrpcError(suite.client.call('Enqueue', { topic: 'dm-bad', payload: Buffer.from('x'), delay_seconds: 3601 }), grpc.status.INVALID_ARGUMENT, /delay_seconds/);
    await expectGrpcError(
      suite.client.call('Enqueue', { topic: 'dm-bad', payload: Buffer.from('x'), delay_seconds: 1, deliver_at: { seconds: Math.floor(suite.clock.now() / 1000) + 5, nanos: 0 } }),
      grpc.status.INVALID_ARGUMENT,
      /together/,
    );
    const batch = await api().post('/api/messages/batch', { messages: [{ topic: 'dm-bad', payload: 'ok' }, { topic: 'dm-bad', payload: 'no', delay_seconds: 3601 }] });
    expectErrorBody(batch, 400);
    expect(batch.body.error).toMatch(/^messages\[1\]: delay_seconds/);
    expect((await api().get('/api/messages?topic=dm-bad')).body.total).toBe(0);
    // Just inside the TTL is kept.
    expect((await api().enqueue('dm-bad', 'x', { delay_seconds: 9 })).status).toBe(201);
  });
});

describeEachEngine('delayed messages on the real clock', (engine) => {
  it('a message delayed 1 s is dequeued about a second after its enqueue', async () => {
    const server = await startTestServer(engine);
    try {
      const sent = Date.now();
      const id = await enqueueId(server.api, 'dm-real', 'x', { delay_seconds: 1 });
      expect(await dequeueIds(server.api, 'dm-real')).toEqual([]);
      let got: string[] = [];
      while (got.length === 0 && Date.now() - sent < 5_000) {
        await sleep(50);
        got = await dequeueIds(server.api, 'dm-real');
      }
      expect(got).toEqual([id]);
      const waited = Date.now() - sent;
      expect(waited).toBeGreaterThanOrEqual(1_000);
      expect(waited).toBeLessThan(3_000);
    } finally {
      await server.close();
    }
  });
});
