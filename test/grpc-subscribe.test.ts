import { status } from '@grpc/grpc-js';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { expectGrpcError, QueueClient, sleep, StreamRecorder } from './helpers/grpc.js';
import { metricValue } from './helpers/metrics.js';
import { startTestServer, type TestServer } from './helpers/server.js';

describeEachEngine('gRPC Subscribe', (engine) => {
  let server: TestServer;
  let client: QueueClient;
  let n = 0;
  const topic = () => `sub-${++n}`;
  const enqueue = (t: string, payload: string) => client.call('Enqueue', { topic: t, payload: Buffer.from(payload) });
  const streamsGauge = async (t: string) => {
    const line = (await server.api.get('/metrics')).text.split('\n').find((l) => l.startsWith('conveyor_subscribe_streams{') && l.includes(`topic="${t}"`));
    return line ? Number(line.split(' ').at(-1)) : 0;
  };

  let dbUrl: string;
  beforeAll(async () => {
    const started = await startTestServer(engine);
    server = started;
    dbUrl = started.database.url;
    client = new QueueClient(server.server.grpcPort);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it('pushes messages already waiting and then new ones as they are enqueued', async () => {
    const t = topic();
    const first = await enqueue(t, 'before');
    const rec = new StreamRecorder(client.subscribe({ topic: t }));
    await rec.until(() => rec.received.length === 1, 5000, 'the waiting message');
    expect(rec.received[0]).toMatchObject({ id: first.id, topic: t, retry_count: 0 });
    expect(rec.received[0].payload.toString()).toBe('before');
    expect(rec.received[0].created_at.seconds).toBeGreaterThan(0);

    const enqueuedAt = Date.now();
    const second = await enqueue(t, 'after');
    await rec.until(() => rec.received.length === 2, 5000, 'the new message');
    expect(rec.received[1].id).toBe(second.id);
    // Pushed on the enqueue's wake-up, not found by the 1 s fallback poll.
    expect(rec.receivedAt[1] - enqueuedAt).toBeLessThan(500);
    rec.stream.cancel();
  });

  it('holds at most 10 unacknowledged deliveries, and each unary Ack or Nack frees one slot', async () => {
    const t = topic();
    await client.call('EnqueueBatch', { requests: Array.from({ length: 15 }, (_, i) => ({ topic: t, payload: Buffer.from(`m${i}`) })) });
    const rec = new StreamRecorder(client.subscribe({ topic: t, visibility_timeout_seconds: 60 }));
    await rec.until(() => rec.received.length === 10, 5000, 'ten deliveries');
    await sleep(300);
    expect(rec.received).toHaveLength(10);
    expect((await server.api.get(`/api/messages?topic=${t}`)).body.items.filter((m: any) => m.status === 'pending')).toHaveLength(5);

    await client.call('Ack', { id: rec.received[0].id });
    await rec.until(() => rec.received.length === 11, 2000, 'a delivery after an ack');
    await client.call('Nack', { id: rec.received[1].id, error: 'retry me' });
    await rec.until(() => rec.received.length === 12, 2000, 'a delivery after a nack');
    await client.call('AckBatch', { ids: [rec.received[2].id, rec.received[3].id] });
    await rec.until(() => rec.received.length === 14, 2000, 'deliveries after an ack batch');
    await sleep(200);
    expect(rec.received).toHaveLength(14);
    rec.stream.cancel();
  });

  it('max_in_flight (extension) sets the window of one stream: 3 holds 3, 200 holds 200 and takes more as acks free slots', async () => {
    const small = topic();
    await client.call('EnqueueBatch', { requests: Array.from({ length: 5 }, (_, i) => ({ topic: small, payload: Buffer.from(`m${i}`) })) });
    const three = new StreamRecorder(client.subscribe({ topic: small, visibility_timeout_seconds: 60, max_in_flight: 3 }));
    await three.until(() => three.received.length === 3, 5000, 'three deliveries');
    await sleep(300);
    expect(three.received).toHaveLength(3);
    three.stream.cancel();

    const wide = topic();
    await client.call('EnqueueBatch', { requests: Array.from({ length: 250 }, (_, i) => ({ topic: wide, payload: Buffer.from(`m${i}`) })) });
    const rec = new StreamRecorder(client.subscribe({ topic: wide, visibility_timeout_seconds: 60, max_in_flight: 200 }));
    await rec.until(() => rec.received.length === 200, 5000, 'two hundred deliveries');
    await sleep(300);
    expect(rec.received).toHaveLength(200);
    await client.call('AckBatch', { ids: rec.received.slice(0, 50).map((m) => m.id) });
    await rec.until(() => rec.received.length === 250, 5000, 'the rest after an ack batch');
    expect(new Set(rec.received.map((m) => m.id)).size).toBe(250);
    rec.stream.cancel();
  });

  it('frees a slot when a delivery is neither acked nor nacked before its visibility timeout', async () => {
    const t = topic();
    await client.call('EnqueueBatch', { requests: Array.from({ length: 11 }, (_, i) => ({ topic: t, payload: Buffer.from(`m${i}`) })) });
    const rec = new StreamRecorder(client.subscribe({ topic: t, visibility_timeout_seconds: 1 }));
    await rec.until(() => rec.received.length === 10, 5000, 'ten deliveries');
    // After 1 s the ten unsettled deliveries no longer count, so the stream is served again (redeliveries).
    await rec.until(() => rec.received.length >= 20, 4000, 'deliveries after the visibility timeout');
    expect(rec.received.slice(10, 20).some((m) => m.retry_count === 1)).toBe(true);
    rec.stream.cancel();
  });

  it('a cancelled stream releases its waiter, and what it held comes back through the visibility timeout', async () => {
    const t = topic();
    const { id } = await enqueue(t, 'held');
    const first = new StreamRecorder(client.subscribe({ topic: t, visibility_timeout_seconds: 1 }));
    await first.until(() => first.received.length === 1, 5000, 'the delivery');
    await expect.poll(() => streamsGauge(t)).toBe(1);
    first.stream.cancel();
    await first.until(() => first.ended !== undefined, 2000, 'the cancellation');
    expect(first.ended!.code).toBe(status.CANCELLED);
    await expect.poll(() => streamsGauge(t)).toBe(0);

    const second = new StreamRecorder(client.subscribe({ topic: t }));
    await second.until(() => second.received.length === 1, 5000, 'the redelivery');
    expect(second.received[0].id).toBe(id);
    expect(second.received[0].retry_count).toBe(1);
    // The cancelled stream is no longer woken: only the live one sees the next message.
    await enqueue(t, 'next');
    await second.until(() => second.received.length === 2, 2000, 'the next message');
    expect(first.received).toHaveLength(1);
    second.stream.cancel();
  });

  it('delivers each message to one of several streams on the same topic', async () => {
    const t = topic();
    const a = new StreamRecorder(client.subscribe({ topic: t }));
    const b = new StreamRecorder(client.subscribe({ topic: t }));
    await expect.poll(() => streamsGauge(t)).toBe(2);
    const { ids } = await client.call('EnqueueBatch', { requests: Array.from({ length: 6 }, (_, i) => ({ topic: t, payload: Buffer.from(`m${i}`) })) });
    await expect.poll(() => a.received.length + b.received.length).toBe(6);
    const delivered = [...a.received, ...b.received].map((m) => m.id).sort();
    expect(delivered).toEqual([...ids].sort());
    a.stream.cancel();
    b.stream.cancel();
  });

  describe('several streams on one topic share one claim', () => {
    const open = async (t: string, count: number) => {
      const streams = Array.from({ length: count }, () => new StreamRecorder(client.subscribe({ topic: t, visibility_timeout_seconds: 60 })));
      await expect.poll(() => streamsGauge(t)).toBe(count);
      return streams;
    };
    const total = (streams: StreamRecorder[]) => streams.reduce((sum, s) => sum + s.received.length, 0);
    const enqueueBatch = async (t: string, count: number): Promise<string[]> =>
      (await client.call('EnqueueBatch', { requests: Array.from({ length: count }, (_, i) => ({ topic: t, payload: Buffer.from(`m${i}`) })) })).ids;

    it('delivers every message exactly once overall, and no stream ever holds more than 10 unacked', async () => {
      const t = topic();
      const streams = await open(t, 3);
      const acked = streams.map(() => 0);
      let mostHeld = 0;
      streams.forEach((s, i) => s.stream.on('data', () => (mostHeld = Math.max(mostHeld, s.received.length - acked[i]))));
      const ids = await enqueueBatch(t, 45);
      await expect.poll(() => total(streams)).toBe(30);
      await sleep(300);
      expect(streams.map((s) => s.received.length)).toEqual([10, 10, 10]);

      // Only the first stream frees its slots: it alone takes the next ten.
      acked[0] = 10;
      await client.call('AckBatch', { ids: streams[0].received.map((m) => m.id) });
      await expect.poll(() => total(streams)).toBe(40);
      await sleep(300);
      expect(streams.map((s) => s.received.length)).toEqual([20, 10, 10]);

      streams.forEach((s, i) => (acked[i] = s.received.length));
      await client.call('AckBatch', { ids: streams.flatMap((s) => s.received.slice(s === streams[0] ? 10 : 0).map((m) => m.id)) });
      await expect.poll(() => total(streams)).toBe(45);
      await sleep(300);
      const delivered = streams.flatMap((s) => s.received.map((m) => m.id));
      expect(delivered).toHaveLength(45);
      expect([...delivered].sort()).toEqual([...ids].sort());
      expect(mostHeld).toBeLessThanOrEqual(10);
      for (const s of streams) s.stream.cancel();
    });

    it('spreads a burst over the streams instead of giving it to whichever woke first', async () => {
      const t = topic();
      const streams = await open(t, 3);
      const ids = await enqueueBatch(t, 9);
      await expect.poll(() => total(streams)).toBe(9);
      for (const s of streams) expect(s.received.length).toBeGreaterThanOrEqual(1);
      expect(streams.flatMap((s) => s.received.map((m) => m.id)).sort()).toEqual([...ids].sort());
      for (const s of streams) s.stream.cancel();
    });

    it('keeps serving the remaining streams after one is cancelled', async () => {
      const t = topic();
      const [gone, ...staying] = await open(t, 3);
      gone.stream.cancel();
      await expect.poll(() => streamsGauge(t)).toBe(2);
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) {
        ids.push((await enqueue(t, `after-${i}`)).id);
        await expect.poll(() => total(staying)).toBe(i + 1);
      }
      expect(staying.flatMap((s) => s.received.map((m) => m.id)).sort()).toEqual([...ids].sort());
      expect(gone.received).toHaveLength(0);
      for (const s of staying) s.stream.cancel();
    });
  });

  describe('new messages go straight to a waiting stream', () => {
    const handedOver = (t: string) => metricValue(server.api, 'conveyor_messages_handed_over_total', { topic: t });
    const claims = (t: string, result: 'found' | 'empty') => metricValue(server.api, 'conveyor_claims_total', { topic: t, result });
    const statusOf = async (t: string, id: string) => (await server.api.get(`/api/messages?topic=${t}`)).body.items.find((m: any) => m.id === id)?.status;

    it('stores them claimed for the stream and hands them over without a claim; ack and nack work as usual', async () => {
      const t = topic();
      const rec = new StreamRecorder(client.subscribe({ topic: t, visibility_timeout_seconds: 60 }));
      // The stream's first claim finds the topic empty; from then on its feed waits with free slots.
      await expect.poll(() => claims(t, 'empty')).toBe(1);
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push((await enqueue(t, `direct-${i}`)).id);
      await rec.until(() => rec.received.length === 3, 5000, 'three deliveries');
      expect(rec.received.map((m) => m.id)).toEqual(ids);
      expect(await handedOver(t)).toBe(3);
      expect(await claims(t, 'found')).toBe(0);
      expect(await claims(t, 'empty')).toBe(1);
      // Held by the stream exactly as a claimed message is.
      expect(await statusOf(t, ids[0])).toBe('processing');

      await client.call('Ack', { id: ids[0] });
      expect(await statusOf(t, ids[0])).toBeUndefined();
      await client.call('Nack', { id: ids[1], error: 'again' });
      await rec.until(() => rec.received.length === 4, 5000, 'the redelivery');
      expect(rec.received[3]).toMatchObject({ id: ids[1], retry_count: 1 });
      // The retry was pending in the table, so it came through a claim.
      expect(await claims(t, 'found')).toBe(1);
      rec.stream.cancel();
    });

    // MySQL only: there two group commits of enqueues run at once, so a second one can reserve room on the stream
    // before the first one's hand-over backs it up; SQLite runs one at a time.
    if (engine.name === 'mysql') it('what was handed over while the client stopped reading reaches it when it reads again, not a visibility timeout later', async () => {
      const t = topic();
      const [u, v] = [topic(), topic()];
      for (const capped of [t, u, v]) expect((await server.api.put(`/api/topic-configs/${capped}`, { max_depth: 100_000 })).status).toBe(200);
      // A connection of its own (grpc-js shares one between clients of the same target otherwise): HTTP/2 flow
      // control stops this stream's writes while it does not read, and nothing else waits behind them.
      const reader = new QueueClient(server.server.grpcPort, undefined, { 'grpc.use_local_subchannel_pool': 1 });
      const rec = new StreamRecorder(reader.subscribe({ topic: t, visibility_timeout_seconds: 60, max_in_flight: 500 }));
      await expect.poll(() => claims(t, 'empty')).toBe(1);
      rec.stream.pause();
      // A capped topic's enqueue locks its configuration row: holding those locks holds each flush back after it
      // reserved its room, until the test lets it go.
      const locks = await Promise.all([t, u, v].map(async (capped) => {
        const conn = await mysql.createConnection(dbUrl);
        await conn.query('BEGIN');
        await conn.query('SELECT topic FROM topic_configs WHERE topic = ? FOR UPDATE', [capped]);
        return conn;
      }));
      const [onT, onU, onV] = locks;
      // The flushes held back behind one of the test's locks. InnoDB refreshes its lock tables only when they were
      // not read for 100 ms, so the polls are slower than that; naming the holder tells one wait from another,
      // so a poll cannot pass on a count left over from before a commit.
      const own = await Promise.all(locks.map(async (conn) => ((await conn.query('SELECT CONNECTION_ID() AS id')) as any)[0][0].id as number));
      const waitingOn = async (holder: number) =>
        Number(
          ((await onT.query(
            `SELECT COUNT(DISTINCT w.requesting_trx_id) AS n FROM information_schema.INNODB_LOCK_WAITS w
             JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id WHERE b.trx_mysql_thread_id = ?`,
            [own[holder]],
          )) as any)[0][0].n,
        );
      const flushesWaitingOn = (holder: number, n: number) => expect.poll(() => waitingOn(holder), { timeout: 10_000, interval: 150 }).toBe(n);
      // Enough for a wave of requests to reach the instance's queue, on a busy machine too (nothing to poll). A
      // request that arrives after both flushes wait on t goes in a third flush, after the stream backed up: in a
      // CI run on a machine half as fast, 600 ms left the second wave out (40 handed over, not 80).
      const settle = () => sleep(2_000);
      try {
        const filler = 'x'.repeat(16_000);
        const wave = (n: number, tag: string) => Array.from({ length: n }, (_, i) => enqueue(t, `${tag}-${i}-${filler}`));
        // Both flushes of the instance wait, one on u and one on v; 40 messages for t queue behind them.
        const held = [enqueue(u, 'u')];
        await flushesWaitingOn(1, 1);
        held.push(enqueue(v, 'v'));
        await flushesWaitingOn(2, 1);
        const first = wave(40, 'first');
        await settle();
        // u goes: the 40 go in one flush, which reserves 40 slots and waits on t. 40 more queue behind v.
        await onU.query('COMMIT');
        await flushesWaitingOn(0, 1);
        const second = wave(40, 'second');
        await settle();
        // v goes: the next 40 reserve theirs and wait on t too. Then t: both commit and hand over, and the first
        // hand-over's writes back the unread stream up before the second one's come.
        await onV.query('COMMIT');
        await flushesWaitingOn(0, 2);
        await onT.query('COMMIT');
        const ids = (await Promise.all([...first, ...second])).map((r) => r.id);
        await Promise.all(held);
        await sleep(200);
        expect(await handedOver(t)).toBe(80);
        rec.stream.resume();
        await rec.until(() => rec.received.length === ids.length, 10_000, 'every message');
        expect(rec.received.map((m) => m.id).sort()).toEqual([...ids].sort());
      } finally {
        for (const conn of locks) await conn.end().catch(() => {});
        rec.stream.cancel();
        reader.close();
      }
    });

    it('keyed messages and messages beyond the free slots are stored pending and claimed', async () => {
      const t = topic();
      const rec = new StreamRecorder(client.subscribe({ topic: t, visibility_timeout_seconds: 60 }));
      await expect.poll(() => claims(t, 'empty')).toBe(1);
      const keyed = await client.call('Enqueue', { topic: t, payload: Buffer.from('keyed'), key: 'k1' });
      await rec.until(() => rec.received.length === 1, 5000, 'the keyed message');
      expect(rec.received[0].id).toBe(keyed.id);
      expect(await handedOver(t)).toBe(0);
      expect(await claims(t, 'found')).toBe(1);

      const ids = (await Promise.all(Array.from({ length: 14 }, (_, i) => enqueue(t, `burst-${i}`)))).map((r) => r.id);
      await rec.until(() => rec.received.length === 10, 5000, 'ten deliveries');
      await sleep(300);
      expect(rec.received).toHaveLength(10);
      expect(await handedOver(t)).toBeLessThanOrEqual(9);
      const items = (await server.api.get(`/api/messages?topic=${t}`)).body.items;
      expect(items.filter((m: any) => m.status === 'pending').map((m: any) => m.id)).toHaveLength(5);
      expect(items.map((m: any) => m.id).sort()).toEqual([keyed.id, ...ids].sort());
      rec.stream.cancel();
    });
  });

  describe('errors', () => {
    it('ends with INVALID_ARGUMENT for a bad topic, visibility timeout or max_in_flight', async () => {
      const bad = new StreamRecorder(client.subscribe({ topic: 'no spaces allowed' }));
      await bad.until(() => bad.ended !== undefined, 5000, 'the error');
      expect(bad.ended!.code).toBe(status.INVALID_ARGUMENT);
      // Refused before it is counted: the open-streams gauge holds no series for a name no topic can have.
      expect((await server.api.get('/metrics')).text).not.toContain('no spaces allowed');
      const zero = new StreamRecorder(client.subscribe({ topic: topic(), visibility_timeout_seconds: 0 }));
      await zero.until(() => zero.ended !== undefined, 5000, 'the error');
      expect(zero.ended!.code).toBe(status.INVALID_ARGUMENT);
      for (const window of [0, 1001]) {
        const bad = new StreamRecorder(client.subscribe({ topic: topic(), max_in_flight: window }));
        await bad.until(() => bad.ended !== undefined, 5000, 'the error');
        expect({ code: bad.ended!.code, details: bad.ended!.details }).toEqual({ code: status.INVALID_ARGUMENT, details: `max_in_flight must be from 1 to 1000, got ${window}` });
      }
    });

    it('ends with FAILED_PRECONDITION for a consumer group that is not registered', async () => {
      const rec = new StreamRecorder(client.subscribe({ topic: topic(), consumer_group: 'ghost' }));
      await rec.until(() => rec.ended !== undefined, 5000, 'the error');
      expect(rec.ended!.code).toBe(status.FAILED_PRECONDITION);
    });
  });

  it('ends open streams with UNAVAILABLE on shutdown instead of hanging', async () => {
    const own = await startTestServer(engine);
    const ownClient = new QueueClient(own.server.grpcPort);
    const rec = new StreamRecorder(ownClient.subscribe({ topic: 'shutdown' }));
    await own.api.enqueue('shutdown', 'x');
    await rec.until(() => rec.received.length === 1, 5000, 'a delivery on the open stream');
    const started = Date.now();
    await own.close();
    expect(Date.now() - started).toBeLessThan(4000);
    await rec.until(() => rec.ended !== undefined, 2000, 'the stream end');
    expect(rec.ended!.code).toBe(status.UNAVAILABLE);
    await expectGrpcError(ownClient.call('Enqueue', { topic: 'shutdown', payload: Buffer.from('x') }, undefined), status.UNAVAILABLE);
    ownClient.close();
  });
});
