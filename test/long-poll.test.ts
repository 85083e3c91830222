import * as grpc from '@grpc/grpc-js';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine, engineByName, type Engine, type TestDatabase } from './helpers/engines.js';
import { expectGrpcError, QueueClient, sleep } from './helpers/grpc.js';
import { enqueueId } from './helpers/messages.js';
import { metricValue, untilWaiting as waitingOn } from './helpers/metrics.js';
import { startTestServer, type ConfigOverrides, type TestServer } from './helpers/server.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Long polling: a dequeue with wait_seconds waits for a message instead of answering empty at once, woken by
 * enqueues (here, or on another instance through Redis), by the end of a delay or visibility timeout (the
 * lane's timer), and ended by its own end, the server's shutdown, or its caller leaving; it issues no
 * statement while idle, and server.max_waiting_dequeues bounds how many wait.
 *
 * MySQL runs with the Redis relay, as production does with several instances: without it a lane re-checks
 * once a second (tested apart below), which would also find what the timer path must find.
 */

/** Milliseconds from `from` until `promise` settles, with its value. */
async function timed<T>(promise: Promise<T>, from = performance.now()): Promise<{ value: T; ms: number }> {
  const value = await promise;
  return { value, ms: performance.now() - from };
}

/** A dequeue request of its own (fetch, so it can be aborted), answered with its status, body and headers. */
async function post(url: string, body: object, signal?: AbortSignal): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(`${url}/api/messages/dequeue`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' }, signal });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/** Resolves once the server reports `n` waiting dequeues. */
const untilWaiting = (server: TestServer, n: number, timeoutMs?: number) => waitingOn(server.api, n, timeoutMs);

/** Counts the statements that touch messages or deliveries (claims, expiry probes, next-moment reads) on the server's pool. */
function statementCounter(db: Knex): { count(): number; stop(): void; sql: string[] } {
  const sql: string[] = [];
  const listener = (q: { sql: string }) => {
    if (/\b(messages|deliveries)\b/i.test(q.sql)) sql.push(q.sql);
  };
  db.on('query', listener);
  return { count: () => sql.length, stop: () => void db.off('query', listener), sql };
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))];

function relayOf(engine: Engine): ConfigOverrides {
  return engine.name === 'mysql' ? { redis: { url: REDIS_URL } } : {};
}

describeEachEngine('long polling', (engine) => {
  let server: TestServer;
  let client: QueueClient;
  beforeAll(async () => {
    // No in-process reapers: their sweeps would count as statements in the idle test.
    server = await startTestServer(engine, { overrides: { ...relayOf(engine), reapers: { mode: 'external' } } });
    client = new QueueClient(server.server.grpcPort);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it('HTTP: a waiting dequeue answers right after an enqueue on the same instance', async () => {
    const latencies: number[] = [];
    for (let i = 0; i < 7; i++) {
      const waiting = post(server.url, { topic: 'lp-http', wait_seconds: 10 });
      await untilWaiting(server, 1);
      const res = await server.api.enqueue('lp-http', `m${i}`);
      const committed = performance.now();
      expect(res.status).toBe(201);
      const { value, ms } = await timed(waiting, committed);
      expect(value.status).toBe(200);
      expect(value.body.messages.map((m: any) => m.id)).toEqual([res.body.id]);
      latencies.push(ms);
      await untilWaiting(server, 0);
    }
    console.log(`[long-poll ${engine.name}] HTTP same-instance wake-up after the enqueue's 201: ${latencies.map((l) => l.toFixed(1)).join(', ')} ms`);
    expect(percentile(latencies, 0.5), latencies.join(', ')).toBeLessThan(250);
    expect(Math.max(...latencies), latencies.join(', ')).toBeLessThan(500);
  });

  it('an enqueue here is handed to the waiting dequeue as it is stored: no claim, its visibility timeout', async () => {
    const waiting = post(server.url, { topic: 'lp-hand', count: 5, visibility_timeout_seconds: 120, wait_seconds: 10 });
    await untilWaiting(server, 1);
    const claimsBefore = await metricValue(server.api, 'conveyor_claims_total', { topic: 'lp-hand', result: 'found' });
    const id = await enqueueId(server.api, 'lp-hand', 'a');
    const answer = await waiting;
    expect(answer.body.messages.map((m: any) => m.id)).toEqual([id]);
    expect(await metricValue(server.api, 'conveyor_messages_handed_over_total', { topic: 'lp-hand' })).toBe(1);
    expect(await metricValue(server.api, 'conveyor_claims_total', { topic: 'lp-hand', result: 'found' })).toBe(claimsBefore);
    const [stored] = (await server.api.get('/api/messages?topic=lp-hand')).body.items;
    expect(stored).toMatchObject({ id, status: 'processing', retry_count: 0 });
    // Held for the waiting call's visibility timeout (120 s), not the server's default (30 s).
    expect(Date.parse(stored.available_at) - Date.now()).toBeGreaterThan(60_000);
    expect((await server.api.post(`/api/messages/${id}/ack`, {})).status).toBe(204);
  });

  it('a message that is not handed over wakes one waiting call: one claim, not one per waiting call', async () => {
    const aborts = new AbortController();
    const calls = Array.from({ length: 8 }, () => post(server.url, { topic: 'lp-one', count: 5, wait_seconds: 10 }, aborts.signal).catch(() => 'aborted'));
    await untilWaiting(server, 8);
    await sleep(200); // the last reads of the next moment have returned
    const claims = async (result: string) => (await metricValue(server.api, 'conveyor_claims_total', { topic: 'lp-one', result })) ?? 0;
    const [found, empty] = [await claims('found'), await claims('empty')];
    const counter = statementCounter(server.db);
    // A keyed message is stored pending (a later enqueue of its key may still replace it): it is claimed.
    const id = await enqueueId(server.api, 'lp-one', 'keyed', { key: 'k1' });
    await untilWaiting(server, 7);
    await sleep(200);
    counter.stop();
    expect(await claims('found')).toBe(found + 1);
    expect(await claims('empty')).toBe(empty);
    // Woken waiters that found nothing would each have read when their topic has something next.
    expect(counter.sql.filter((sql) => sql.includes('AS pending_at'))).toEqual([]);
    // The other seven still wait, idle: the next plain enqueue is handed to one of them.
    await enqueueId(server.api, 'lp-one', 'plain');
    await untilWaiting(server, 6);
    expect(await metricValue(server.api, 'conveyor_messages_handed_over_total', { topic: 'lp-one' })).toBe(1);
    expect(await claims('empty')).toBe(empty);
    aborts.abort();
    const answers = await Promise.all(calls);
    expect(answers.filter((a) => a !== 'aborted').map((a: any) => a.body.messages[0].id)).toContain(id);
    await untilWaiting(server, 0);
  });

  it('gRPC: Dequeue and BatchDequeue wait, and answer right after an enqueue', async () => {
    const latencies: number[] = [];
    for (let i = 0; i < 4; i++) {
      const waiting = client.call('Dequeue', { topic: 'lp-grpc', wait_seconds: 10 });
      await untilWaiting(server, 1);
      const id = await enqueueId(server.api, 'lp-grpc', `d${i}`);
      const { value, ms } = await timed(waiting);
      expect(value.id).toBe(id);
      latencies.push(ms);
      await untilWaiting(server, 0);
    }
    for (let i = 0; i < 4; i++) {
      const waiting = client.call('BatchDequeue', { topic: 'lp-grpc', count: 10, wait_seconds: 10 });
      await untilWaiting(server, 1);
      const res = await server.api.post('/api/messages/batch', { messages: [{ topic: 'lp-grpc', payload: 'a' }, { topic: 'lp-grpc', payload: 'b' }] });
      expect(res.status).toBe(201);
      const { value, ms } = await timed(waiting);
      expect(value.messages.map((m: any) => m.id)).toEqual(res.body.ids);
      latencies.push(ms);
      await untilWaiting(server, 0);
    }
    console.log(`[long-poll ${engine.name}] gRPC same-instance wake-up after the enqueue's 201: ${latencies.map((l) => l.toFixed(1)).join(', ')} ms`);
    expect(percentile(latencies, 0.5), latencies.join(', ')).toBeLessThan(250);
    expect(Math.max(...latencies), latencies.join(', ')).toBeLessThan(500);
  });

  it('a wait with nothing arriving answers empty after about wait_seconds (HTTP 200 [], Dequeue NOT_FOUND, BatchDequeue [])', async () => {
    const started = performance.now();
    const [http, unary, batch] = await Promise.all([
      timed(post(server.url, { topic: 'lp-quiet', wait_seconds: 1 }), started),
      timed(
        client.call('Dequeue', { topic: 'lp-quiet', wait_seconds: 1 }).then(
          () => 'answered',
          (err: grpc.ServiceError) => grpc.status[err.code],
        ),
        started,
      ),
      timed(client.call('BatchDequeue', { topic: 'lp-quiet', count: 5, wait_seconds: 1 }), started),
    ]);
    expect(http.value).toMatchObject({ status: 200, body: { messages: [] } });
    expect(unary.value).toBe('NOT_FOUND');
    expect(batch.value.messages).toEqual([]);
    for (const { ms } of [http, unary, batch]) {
      expect(ms).toBeGreaterThan(950);
      expect(ms).toBeLessThan(2500);
    }
    // Without wait_seconds (or with 0) nothing changes: an empty answer at once.
    const { value, ms } = await timed(post(server.url, { topic: 'lp-quiet', wait_seconds: 0 }));
    expect(value.body).toEqual({ messages: [] });
    expect(ms).toBeLessThan(500);
  });

  it('a nacked retry with a delay wakes a waiter when the delay ends (the timer, no signal)', async () => {
    const id = await enqueueId(server.api, 'lp-nack', 'x');
    expect((await server.api.dequeue('lp-nack')).body.messages[0].id).toBe(id);
    const waiting = timed(post(server.url, { topic: 'lp-nack', wait_seconds: 8 }));
    await untilWaiting(server, 1);
    const nackedAt = performance.now();
    expect((await server.api.post(`/api/messages/${id}/nack`, { delay_seconds: 1 })).status).toBe(204);
    const { value } = await waiting;
    const afterNack = performance.now() - nackedAt;
    expect(value.body.messages.map((m: any) => [m.id, m.retry_count])).toEqual([[id, 1]]);
    expect(afterNack).toBeGreaterThan(900);
    expect(afterNack).toBeLessThan(2500);
  });

  it('a message whose visibility timeout runs out wakes a waiter at that time', async () => {
    const id = await enqueueId(server.api, 'lp-expiry', 'x');
    const claimedAt = performance.now();
    expect((await server.api.dequeue('lp-expiry', { visibility_timeout_seconds: 1 })).body.messages[0].id).toBe(id);
    // The waiter comes after the claim, so only the end of that claim can bring the message back.
    const { value } = await timed(post(server.url, { topic: 'lp-expiry', wait_seconds: 8 }));
    const afterClaim = performance.now() - claimedAt;
    expect(value.body.messages.map((m: any) => [m.id, m.retry_count])).toEqual([[id, 1]]);
    expect(afterClaim).toBeGreaterThan(900);
    expect(afterClaim).toBeLessThan(2500);
  });

  it('consumer groups: a delayed enqueue and a group delivery nacked with a delay wake the group\'s waiters on time', async () => {
    for (const group of ['a', 'b']) expect((await server.api.post('/api/topics/lp-fan/consumer-groups', { consumer_group: group })).status).toBe(201);
    const enqueuedAt = performance.now();
    const id = await enqueueId(server.api, 'lp-fan', 'x', { delay_seconds: 1 });
    const [a, b] = await Promise.all(['a', 'b'].map((group) => post(server.url, { topic: 'lp-fan', consumer_group: group, wait_seconds: 8 })));
    expect(performance.now() - enqueuedAt).toBeGreaterThan(900);
    expect(performance.now() - enqueuedAt).toBeLessThan(2500);
    expect(a.body.messages.map((m: any) => m.id)).toEqual([id]);
    expect(b.body.messages.map((m: any) => m.id)).toEqual([id]);

    const waiting = timed(post(server.url, { topic: 'lp-fan', consumer_group: 'a', wait_seconds: 8 }));
    await untilWaiting(server, 1);
    const nackedAt = performance.now();
    expect((await server.api.post(`/api/messages/${id}/nack`, { consumer_group: 'a', delay_seconds: 1 })).status).toBe(204);
    const { value } = await waiting;
    expect(value.body.messages.map((m: any) => m.id)).toEqual([id]);
    expect(performance.now() - nackedAt).toBeGreaterThan(900);
    expect(performance.now() - nackedAt).toBeLessThan(2500);
  });

  it('a throughput-limited topic: a waiter that found the bucket empty gets the next message when a token comes', async () => {
    expect((await server.api.put('/api/topic-configs/lp-limited', { throughput_limit: 1 })).status).toBe(200);
    await sleep(500); // the catalog refresh (200 ms in tests) picks the limit up
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await enqueueId(server.api, 'lp-limited', `t${i}`));
    // Spend the bucket: dequeues at once until one finds no token.
    let taken = 0;
    while ((await server.api.dequeue('lp-limited')).body.messages.length > 0) taken++;
    expect(taken).toBeLessThan(4);
    const { value, ms } = await timed(post(server.url, { topic: 'lp-limited', wait_seconds: 8 }));
    expect(value.body.messages.map((m: any) => m.id)).toEqual([ids[taken]]);
    expect(ms).toBeLessThan(2500);
  });

  it('500 waiting calls on an idle server issue no statement on messages or deliveries; an enqueue still wakes one', async () => {
    expect((await server.api.post('/api/topics/lp-idle-fan/consumer-groups', { consumer_group: 'g' })).status).toBe(201);
    const counter = statementCounter(server.db);
    try {
      // The counter sees claims: a dequeue of an empty topic makes at least one.
      await server.api.dequeue('lp-idle-probe');
      expect(counter.count()).toBeGreaterThan(0);

      const aborts = new AbortController();
      const calls: Array<Promise<unknown>> = [];
      for (let i = 0; i < 400; i++) {
        const body = i % 4 === 3 ? { topic: 'lp-idle-fan', consumer_group: 'g', wait_seconds: 20 } : { topic: `lp-idle-${i % 10}`, wait_seconds: 20 };
        calls.push(post(server.url, body, aborts.signal).catch(() => 'aborted'));
      }
      const grpcCalls = Array.from({ length: 100 }, (_, i) => {
        const call = client.raw.BatchDequeue({ topic: `lp-idle-${i % 10}`, count: 5, wait_seconds: 20 }, client.metadata(), () => {});
        return call as grpc.ClientUnaryCall;
      });
      await untilWaiting(server, 500, 30_000);
      await sleep(200); // the last reads of the next moment have returned
      const before = counter.count();
      await sleep(2500);
      const idle = counter.sql.slice(before);
      expect(idle, `statements while idle:\n${idle.join('\n')}`).toEqual([]);

      // They are waiting for real: one enqueue is answered by one of them.
      const id = await enqueueId(server.api, 'lp-idle-3', 'wake');
      await untilWaiting(server, 499);
      expect(await metricValue(server.api, 'conveyor_long_poll_wakeups_total', { topic: 'lp-idle-3', reason: 'message' })).toBe(1);
      expect((await server.api.get(`/api/messages?topic=lp-idle-3`)).body.items.map((m: any) => [m.id, m.status])).toEqual([[id, 'processing']]);

      aborts.abort();
      for (const call of grpcCalls) call.cancel();
      await Promise.all(calls);
      await untilWaiting(server, 0);
      expect(await metricValue(server.api, 'conveyor_long_poll_wakeups_total', { topic: 'lp-idle-fan', reason: 'gone' })).toBe(100);
      expect(await metricValue(server.api, 'conveyor_long_poll_waits_total', { topic: 'lp-idle-fan' })).toBe(100);
    } finally {
      counter.stop();
    }
  }, 90_000);

  it('wait_seconds out of range or not an integer: 400 / INVALID_ARGUMENT, at once', async () => {
    for (const wait of [-1, 21, 1.5, '5', true, null]) {
      const res = await server.api.dequeue('lp-bad', { wait_seconds: wait });
      expectErrorBody(res, 400);
      expect(res.body.error).toBe('wait_seconds must be an integer from 0 to 20');
    }
    for (const method of ['Dequeue', 'BatchDequeue']) {
      for (const wait of [21, 2 ** 32 - 1]) {
        const { ms } = await timed(expectGrpcError(client.call(method, { topic: 'lp-bad', count: 1, wait_seconds: wait }), grpc.status.INVALID_ARGUMENT, /wait_seconds must be an integer from 0 to 20/));
        expect(ms).toBeLessThan(500);
      }
    }
  });
});

describeEachEngine('long polling: bound, disconnects and shutdown', (engine) => {
  it('server.max_waiting_dequeues: one more waiting call gets 429 with Retry-After (gRPC RESOURCE_EXHAUSTED); a call that finds a message is served', async () => {
    const server = await startTestServer(engine, { overrides: { ...relayOf(engine), server: { max_waiting_dequeues: 2 } } });
    const client = new QueueClient(server.server.grpcPort);
    try {
      const aborts = new AbortController();
      const first = post(server.url, { topic: 'lp-bound', wait_seconds: 20 }, aborts.signal).catch(() => 'aborted');
      const second = client.call('Dequeue', { topic: 'lp-bound-other', wait_seconds: 20 }).catch((err: grpc.ServiceError) => grpc.status[err.code]);
      await untilWaiting(server, 2);
      const refused = await post(server.url, { topic: 'lp-bound', wait_seconds: 5 });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.body.error).toMatch(/server\.max_waiting_dequeues/);
      await expectGrpcError(client.call('BatchDequeue', { topic: 'lp-bound', count: 1, wait_seconds: 5 }), grpc.status.RESOURCE_EXHAUSTED, /server\.max_waiting_dequeues/);
      // Not refused: a call without a wait, and one that finds a message at once.
      expect((await server.api.dequeue('lp-bound-third')).status).toBe(200);
      const id = await enqueueId(server.api, 'lp-bound-third', 'x');
      expect((await post(server.url, { topic: 'lp-bound-third', wait_seconds: 5 })).body.messages.map((m: any) => m.id)).toEqual([id]);

      aborts.abort();
      await first;
      await untilWaiting(server, 1);
      // The freed slot takes a new wait.
      const again = post(server.url, { topic: 'lp-bound', wait_seconds: 20 });
      await untilWaiting(server, 2);
      await enqueueId(server.api, 'lp-bound', 'y');
      expect((await again).body.messages).toHaveLength(1);
      await enqueueId(server.api, 'lp-bound-other', 'z');
      expect(typeof ((await second) as any).id).toBe('string');
    } finally {
      client.close();
      await server.close();
    }
  });

  it('a client that disconnects while waiting frees its slot at once (HTTP abort, gRPC cancel)', async () => {
    const server = await startTestServer(engine, { overrides: { ...relayOf(engine), server: { max_waiting_dequeues: 1 } } });
    const client = new QueueClient(server.server.grpcPort);
    try {
      const aborts = new AbortController();
      const gone = post(server.url, { topic: 'lp-gone', wait_seconds: 20 }, aborts.signal).catch(() => 'aborted');
      await untilWaiting(server, 1);
      expect((await post(server.url, { topic: 'lp-gone', wait_seconds: 1 })).status).toBe(429);
      aborts.abort();
      expect(await gone).toBe('aborted');
      await untilWaiting(server, 0, 1000);
      // A message enqueued now goes to the next waiter, not to the one that left.
      const next = post(server.url, { topic: 'lp-gone', wait_seconds: 10 });
      await untilWaiting(server, 1);
      const id = await enqueueId(server.api, 'lp-gone', 'x');
      expect((await next).body.messages.map((m: any) => m.id)).toEqual([id]);

      const call = client.raw.BatchDequeue({ topic: 'lp-gone', count: 1, wait_seconds: 20 }, client.metadata(), () => {}) as grpc.ClientUnaryCall;
      await untilWaiting(server, 1);
      call.cancel();
      await untilWaiting(server, 0, 1000);
      expect((await post(server.url, { topic: 'lp-gone', wait_seconds: 1 })).status).toBe(200);
      expect(await metricValue(server.api, 'conveyor_long_poll_wakeups_total', { topic: 'lp-gone', reason: 'gone' })).toBe(2);
    } finally {
      client.close();
      await server.close();
    }
  });

  it('shutdown answers every waiting call at once, empty, long before their wait ends', async () => {
    const server = await startTestServer(engine, { overrides: relayOf(engine) });
    const client = new QueueClient(server.server.grpcPort);
    try {
      const http = [0, 1, 2].map((i) => post(server.url, { topic: `lp-shut-${i}`, wait_seconds: 20 }));
      const unary = client.call('Dequeue', { topic: 'lp-shut-0', wait_seconds: 20 }).catch((err: grpc.ServiceError) => grpc.status[err.code]);
      const batch = client.call('BatchDequeue', { topic: 'lp-shut-1', count: 3, wait_seconds: 20 });
      await untilWaiting(server, 5);
      const started = performance.now();
      const closed = server.close();
      const answers = await Promise.all(http);
      expect(answers.map((a) => [a.status, a.body])).toEqual(answers.map(() => [200, { messages: [] }]));
      expect(await unary).toBe('NOT_FOUND');
      expect((await batch).messages).toEqual([]);
      expect(performance.now() - started).toBeLessThan(2000);
      await closed;
      expect(performance.now() - started).toBeLessThan(4000);
    } finally {
      client.close();
      await server.close();
    }
  });
});

(inject('mysqlUrl') ? describe : describe.skip)('long polling across instances [mysql]', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await engineByName.mysql.createDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('with Redis, an enqueue on instance B wakes a waiter on instance A promptly', async () => {
    const a = await startTestServer(engineByName.mysql, { database, overrides: { redis: { url: REDIS_URL } } });
    const b = await startTestServer(engineByName.mysql, { database, overrides: { redis: { url: REDIS_URL } } });
    const client = new QueueClient(a.server.grpcPort);
    try {
      await b.api.enqueue('lp-cross-warm-up', 'x');
      const latencies: number[] = [];
      for (let i = 0; i < 7; i++) {
        const waiting = i % 2 === 0 ? post(a.url, { topic: 'lp-cross', wait_seconds: 10 }).then((r) => r.body.messages[0]?.id) : client.call('Dequeue', { topic: 'lp-cross', wait_seconds: 10 }).then((m) => m.id);
        await untilWaiting(a, 1);
        // Spread over the phase of the fallback re-check, so a re-check cannot pass for a wake-up.
        await sleep(100 + i * 120);
        const res = await b.api.enqueue('lp-cross', `m${i}`);
        const committed = performance.now();
        expect(res.status).toBe(201);
        const { value, ms } = await timed(waiting, committed);
        expect(value).toBe(res.body.id);
        latencies.push(ms);
        await untilWaiting(a, 0);
      }
      console.log(`[long-poll mysql] cross-instance wake-up (Redis) after the enqueue's 201 on B: ${latencies.map((l) => l.toFixed(1)).join(', ')} ms`);
      expect(percentile(latencies, 0.5), latencies.join(', ')).toBeLessThan(250);
      expect(Math.max(...latencies), latencies.join(', ')).toBeLessThan(500);
    } finally {
      client.close();
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('without Redis, waiters of a topic share one re-check claim per second, which finds another instance\'s enqueue', async () => {
    const a = await startTestServer(engineByName.mysql, { database, overrides: { reapers: { mode: 'external' } } });
    const b = await startTestServer(engineByName.mysql, { database });
    const counter = statementCounter(a.db);
    try {
      const aborts = new AbortController();
      const calls = Array.from({ length: 200 }, () => post(a.url, { topic: 'lp-recheck', wait_seconds: 20 }, aborts.signal).catch(() => 'aborted'));
      await untilWaiting(a, 200);
      const before = counter.count();
      await sleep(3000);
      const statements = counter.count() - before;
      // One lane: about three re-checks in 3 s, each an expiry probe and a claim (begin, select, update or
      // commit), so a dozen or so statements; one per waiter would be hundreds.
      expect(statements).toBeGreaterThan(0);
      expect(statements).toBeLessThan(40);

      const id = await enqueueId(b.api, 'lp-recheck', 'x');
      const enqueuedAt = performance.now();
      await untilWaiting(a, 199, 3000);
      expect(performance.now() - enqueuedAt).toBeLessThan(2000);
      expect((await a.api.get('/api/messages?topic=lp-recheck')).body.items.map((m: any) => [m.id, m.status])).toEqual([[id, 'processing']]);
      aborts.abort();
      await Promise.all(calls);
    } finally {
      counter.stop();
      await Promise.all([a.close(), b.close()]);
    }
  });
});
