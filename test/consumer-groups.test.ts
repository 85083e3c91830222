import mysql from 'mysql2/promise';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine, type TestDatabase } from './helpers/engines.js';
import type { Api } from './helpers/http.js';
import { createDb } from '../src/store/db.js';
import { createLogger } from '../src/log/logger.js';
import { manualClock, startTestServer, type TestClock, type TestServer } from './helpers/server.js';

const register = (api: Api, topic: string, group: string) => api.post(`/api/topics/${topic}/consumer-groups`, { consumer_group: group });

async function dequeueGroup(api: Api, topic: string, group: string, extra: Record<string, unknown> = {}): Promise<any[]> {
  const res = await api.dequeue(topic, { consumer_group: group, count: 10, ...extra });
  expect(res.status, res.text).toBe(200);
  return res.body.messages;
}

const ack = (api: Api, id: string, group?: string) => api.post(`/api/messages/${id}/ack`, group === undefined ? undefined : { consumer_group: group });
const nack = (api: Api, id: string, group: string, error = 'boom') => api.post(`/api/messages/${id}/nack`, { consumer_group: group, error });

async function topicMessages(api: Api, topic: string): Promise<any[]> {
  const res = await api.get(`/api/messages?topic=${topic}&limit=200`);
  expect(res.status).toBe(200);
  return res.body.items;
}

describeEachEngine('consumer groups', (engine) => {
  let server: TestServer & { database: TestDatabase };
  let api: Api;
  let clock: TestClock;
  beforeEach(async () => {
    clock = manualClock();
    server = await startTestServer(engine, { now: clock.now, overrides: { queue: { dlq_threshold: 2, max_retries: 5 }, reapers: { mode: 'external' } } });
    api = server.api;
  });
  afterEach(async () => {
    await server?.close();
  });

  it('registers, lists and unregisters groups with the status codes of the spec', async () => {
    const created = await register(api, 'orders', 'billing');
    expect(created.status).toBe(201);
    expect(created.text).toBe('');
    expect((await register(api, 'orders', 'audit')).status).toBe(201);
    expectErrorBody(await register(api, 'orders', 'billing'), 409);
    expect((await api.get('/api/topics/orders/consumer-groups')).body).toEqual({ items: ['audit', 'billing'] });
    expect((await api.get('/api/topics/other/consumer-groups')).body).toEqual({ items: [] });

    expectErrorBody(await api.post('/api/topics/orders/consumer-groups', {}), 400);
    expectErrorBody(await register(api, 'orders', 'bad name!'), 400);
    expectErrorBody(await register(api, 'orders', ''), 400);
    expectErrorBody(await register(api, 'orders.dlq', 'billing'), 400);

    expect((await api.delete('/api/topics/orders/consumer-groups/audit')).status).toBe(204);
    expectErrorBody(await api.delete('/api/topics/orders/consumer-groups/audit'), 404);
    expect((await api.get('/api/topics/orders/consumer-groups')).body).toEqual({ items: ['billing'] });
  });

  it('gives every group every message; each acks on its own and the message leaves after the last ack', async () => {
    await register(api, 'fan', 'a');
    await register(api, 'fan', 'b');
    const { id } = (await api.enqueue('fan', 'hello', { metadata: { k: 'v' } })).body;

    const [forA] = await dequeueGroup(api, 'fan', 'a');
    const [forB] = await dequeueGroup(api, 'fan', 'b');
    expect(forA).toMatchObject({ id, payload: 'hello', status: 'processing', retry_count: 0, metadata: { k: 'v' } });
    expect(forB).toMatchObject({ id, payload: 'hello', status: 'processing' });
    // Each group holds its own delivery: nothing more for either until the visibility timeout.
    expect(await dequeueGroup(api, 'fan', 'a')).toEqual([]);

    expect((await ack(api, id, 'a')).status).toBe(204);
    expectErrorBody(await ack(api, id, 'a'), 404);
    expect((await topicMessages(api, 'fan')).map((m) => m.id)).toEqual([id]);
    expect((await ack(api, id, 'b')).status).toBe(204);
    expect(await topicMessages(api, 'fan')).toEqual([]);
  });

  it('does not let a slow group hold back a fast one', async () => {
    await register(api, 'speed', 'fast');
    await register(api, 'speed', 'slow');
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await api.enqueue('speed', `m${i}`)).body.id);

    for (const message of await dequeueGroup(api, 'speed', 'fast')) expect((await ack(api, message.id, 'fast')).status).toBe(204);
    const later = (await api.enqueue('speed', 'm3')).body.id;
    expect((await dequeueGroup(api, 'speed', 'fast')).map((m) => m.id)).toEqual([later]);

    expect((await dequeueGroup(api, 'speed', 'slow', { count: 2 })).map((m) => m.id)).toEqual(ids.slice(0, 2));
    expect((await dequeueGroup(api, 'speed', 'slow')).map((m) => m.id)).toEqual([ids[2], later]);
  });

  it('refuses calls without a group on a fan-out topic (400) and groups the topic does not have (422)', async () => {
    await register(api, 'strict', 'g');
    const { id } = (await api.enqueue('strict', 'x')).body;
    const noGroup = await api.dequeue('strict');
    expectErrorBody(noGroup, 400);
    expect(noGroup.body.error).toBe('consumer_group is required');
    expectErrorBody(await api.dequeue('strict', { consumer_group: 'nope' }), 422);
    expectErrorBody(await api.dequeue('plain', { consumer_group: 'g' }), 422);

    await dequeueGroup(api, 'strict', 'g');
    expectErrorBody(await ack(api, id), 400);
    expectErrorBody(await api.post(`/api/messages/${id}/nack`, { error: 'x' }), 400);
    expectErrorBody(await api.post('/api/messages/ack', { ids: [id] }), 400);
    expectErrorBody(await ack(api, id, 'nope'), 422);
    expectErrorBody(await nack(api, id, 'nope'), 422);
    // A batch naming one message on a topic without that group acks none of it.
    const other = (await api.enqueue('also', 'y')).body.id;
    await api.post('/api/topics/also/consumer-groups', { consumer_group: 'h' });
    expectErrorBody(await api.post('/api/messages/ack', { ids: [id, other], consumer_group: 'g' }), 422);
    expect((await ack(api, id, 'g')).status).toBe(204);
  });

  it('acks a batch for one group', async () => {
    await register(api, 'batch', 'g1');
    await register(api, 'batch', 'g2');
    const first = (await api.enqueue('batch', 'a')).body.id;
    const second = (await api.enqueue('batch', 'b')).body.id;
    await dequeueGroup(api, 'batch', 'g1');
    const res = await api.post('/api/messages/ack', { ids: [first, second, 'not-a-uuid'], consumer_group: 'g1' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ acked: [first, second], not_found: ['not-a-uuid'] });
    // g2 still has both.
    expect((await dequeueGroup(api, 'batch', 'g2')).map((m) => m.id)).toEqual([first, second]);
  });

  it('adopts the pending messages of a topic when a group registers', async () => {
    const before = (await api.enqueue('late', 'old')).body.id;
    expect((await register(api, 'late', 'g')).status).toBe(201);
    const after = (await api.enqueue('late', 'new')).body.id;
    expect((await dequeueGroup(api, 'late', 'g')).map((m) => m.id)).toEqual([before, after]);
  });

  it('keeps retries, visibility and dead letters per group; a requeued dead letter goes back to its group only', async () => {
    await register(api, 'work', 'flaky');
    await register(api, 'work', 'steady');
    const { id } = (await api.enqueue('work', 'job')).body;

    // flaky: one nack (retry), then a visibility expiry: the second attempt reaches dlq_threshold 2.
    await dequeueGroup(api, 'work', 'flaky');
    expect((await nack(api, id, 'flaky', 'first')).status).toBe(204);
    const [again] = await dequeueGroup(api, 'work', 'flaky', { visibility_timeout_seconds: 1 });
    expect(again).toMatchObject({ id, retry_count: 1 });
    const [steady] = await dequeueGroup(api, 'work', 'steady');
    expect(steady).toMatchObject({ id, retry_count: 0 });
    clock.advance(1500);
    expect(await dequeueGroup(api, 'work', 'flaky')).toEqual([]);

    const dead = await topicMessages(api, 'work.dlq');
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({
      payload: 'job',
      original_topic: 'work',
      retry_count: 2,
      last_error: 'visibility timeout expired',
      metadata: { consumer_group: 'flaky' },
    });
    expect(dead[0].id).not.toBe(id);
    // steady is unaffected and finishes; the message leaves because flaky's part went to the DLQ.
    expect((await ack(api, id, 'steady')).status).toBe(204);
    expect(await topicMessages(api, 'work')).toEqual([]);

    expect((await api.dequeue('work.dlq', { consumer_group: 'steady' })).body.messages).toEqual([]);
    const [letter] = (await api.dequeue('work.dlq', { consumer_group: 'flaky' })).body.messages;
    expect(letter.id).toBe(dead[0].id);
    expectErrorBody(await nack(api, letter.id, 'steady'), 404);
    expect((await nack(api, letter.id, 'flaky', 'still broken')).status).toBe(204);

    expect((await api.post(`/api/messages/${letter.id}/requeue`)).status).toBe(204);
    expect(await dequeueGroup(api, 'work', 'steady')).toEqual([]);
    const [back] = await dequeueGroup(api, 'work', 'flaky');
    expect(back).toMatchObject({ id: letter.id, payload: 'job', retry_count: 0, metadata: {} });
    expect((await ack(api, letter.id, 'flaky')).status).toBe(204);
    expect(await topicMessages(api, 'work')).toEqual([]);
  });

  it("requeues a group's dead letter as a plain message once its topic has no group left: no group named in it any more", async () => {
    await api.put('/api/topic-configs/orphaned', { max_retries: 1 });
    await register(api, 'orphaned', 'a');
    const { id } = (await api.enqueue('orphaned', 'x', { metadata: { orig: '1' } })).body;
    expect((await dequeueGroup(api, 'orphaned', 'a')).map((m) => m.id)).toEqual([id]);
    expect((await nack(api, id, 'a')).status).toBe(204);
    const [dead] = await topicMessages(api, 'orphaned.dlq');
    expect(dead.metadata).toEqual({ orig: '1', consumer_group: 'a' });
    expect((await api.delete('/api/topics/orphaned/consumer-groups/a')).status).toBe(204);

    expect((await api.post(`/api/messages/${dead.id}/requeue`)).status).toBe(204);
    const [back] = (await api.dequeue('orphaned')).body.messages;
    expect(back).toMatchObject({ id: dead.id, metadata: { orig: '1' } });
    // Dead-lettered again as a plain message, it goes to every group the topic has by then, not only "a".
    expect((await api.post(`/api/messages/${dead.id}/nack`, { error: 'e' })).status).toBe(204);
    await register(api, 'orphaned', 'a');
    await register(api, 'orphaned', 'b');
    expect((await api.post(`/api/messages/${dead.id}/requeue`)).status).toBe(204);
    expect((await dequeueGroup(api, 'orphaned', 'a')).map((m) => m.id)).toEqual([dead.id]);
    expect((await dequeueGroup(api, 'orphaned', 'b')).map((m) => m.id)).toEqual([dead.id]);
  });

  it('requeues a plain dead letter to every group once its topic has turned fan-out', async () => {
    await api.put('/api/topic-configs/turned', { max_retries: 1 });
    const { id } = (await api.enqueue('turned', 'x')).body;
    await api.dequeue('turned');
    expect((await api.post(`/api/messages/${id}/nack`, { error: 'e' })).status).toBe(204);
    expect((await topicMessages(api, 'turned.dlq')).map((m) => m.id)).toEqual([id]);

    await register(api, 'turned', 'a');
    await register(api, 'turned', 'b');
    expect((await api.post(`/api/messages/${id}/requeue`)).status).toBe(204);
    expect((await dequeueGroup(api, 'turned', 'a')).map((m) => m.id)).toEqual([id]);
    expect((await dequeueGroup(api, 'turned', 'b')).map((m) => m.id)).toEqual([id]);
  });

  it('hands a message a plain consumer holds to the groups when the topic turns fan-out', async () => {
    const { id } = (await api.enqueue('switch', 'x')).body;
    await api.dequeue('switch');
    await register(api, 'switch', 'g');
    // The plain consumer can no longer finish it; the group gets it instead (at least once).
    expectErrorBody(await ack(api, id), 400);
    expect((await dequeueGroup(api, 'switch', 'g')).map((m) => m.id)).toEqual([id]);
    expect((await ack(api, id, 'g')).status).toBe(204);
    expect(await topicMessages(api, 'switch')).toEqual([]);
  });

  /** A second instance that refreshes its catalog hourly: a registration made after its start stays unknown to it. */
  const startStaleInstance = () =>
    startTestServer(engine, {
      now: clock.now,
      database: server.database,
      overrides: { queue: { dlq_threshold: 2, max_retries: 5, config_refresh_interval: '1h' }, reapers: { mode: 'external' } },
    });

  it("an instance that does not know the topic's group yet leaves what the group has started alone", async () => {
    const stale = await startStaleInstance();
    try {
      const { id } = (await api.enqueue('late-fan', 'x')).body;
      expect((await stale.api.get('/api/topics/late-fan/consumer-groups')).status).toBe(200);
      expect((await register(api, 'late-fan', 'billing')).status).toBe(201);
      expect((await dequeueGroup(api, 'late-fan', 'billing')).map((m) => m.id)).toEqual([id]);

      // Taken as a plain topic there: its dequeue must not treat the group's claim as an overdue plain one.
      expect((await stale.api.dequeue('late-fan')).body.messages).toEqual([]);
      expect(await topicMessages(api, 'late-fan')).toEqual([expect.objectContaining({ id, status: 'processing', retry_count: 0 })]);
      expect((await ack(api, id, 'billing')).status).toBe(204);
      expect(await topicMessages(api, 'late-fan')).toEqual([]);
    } finally {
      await stale.close();
    }
  });

  it("an instance that does not know the topic's group yet cannot ack or nack away what the group still needs", async () => {
    const stale = await startStaleInstance();
    try {
      const acked = (await api.enqueue('late-ack', 'a')).body.id;
      const nacked = (await api.enqueue('late-ack', 'b')).body.id;
      expect((await register(api, 'late-ack', 'billing')).status).toBe(201);
      // Still a plain topic there: its consumer gets the messages (once more than needed, at least once)...
      expect((await stale.api.dequeue('late-ack', { count: 2 })).body.messages.map((m: any) => m.id).sort()).toEqual([acked, nacked].sort());
      // ...but cannot settle them: they are the group's.
      expectErrorBody(await stale.api.post(`/api/messages/${acked}/ack`), 404);
      expectErrorBody(await stale.api.post(`/api/messages/${nacked}/nack`, { error: 'e' }), 404);
      expect(await topicMessages(api, 'late-ack.dlq')).toEqual([]);
      expect((await dequeueGroup(api, 'late-ack', 'billing', { count: 2 })).map((m) => m.id).sort()).toEqual([acked, nacked].sort());
      for (const id of [acked, nacked]) expect((await ack(api, id, 'billing')).status).toBe(204);
      expect(await topicMessages(api, 'late-ack')).toEqual([]);

      // Nor purge a message row the group has not finished: its purge goes per group, as on the instance that knows.
      const kept = (await api.enqueue('late-ack', 'c')).body.id;
      expect((await stale.api.dequeue('late-ack')).body.messages.map((m: any) => m.id)).toEqual([kept]);
      expect((await stale.api.post('/api/topics/late-ack/purge', { statuses: ['processing'] })).body).toEqual({ deleted: 0 });
      expect((await dequeueGroup(api, 'late-ack', 'billing')).map((m) => m.id)).toEqual([kept]);
    } finally {
      await stale.close();
    }
  });

  it("fails one group's delivery (no retries, no DLQ) while the other group still finishes the message", async () => {
    await api.put('/api/topic-configs/once', { max_retries: 0 });
    await register(api, 'once', 'x');
    await register(api, 'once', 'y');
    const { id } = (await api.enqueue('once', 'f')).body;
    await dequeueGroup(api, 'once', 'x');
    expect((await nack(api, id, 'x', 'bad')).status).toBe(204);
    expect(await topicMessages(api, 'once.dlq')).toEqual([]);
    const stats = (await api.get('/api/stats')).body.consumer_groups.filter((t: any) => t.topic === 'once');
    expect(stats).toContainEqual({ topic: 'once', consumer_group: 'x', status: 'failed', count: 1 });
    expect(await dequeueGroup(api, 'once', 'x')).toEqual([]);
    expect((await dequeueGroup(api, 'once', 'y')).map((m) => m.id)).toEqual([id]);
    expect((await ack(api, id, 'y')).status).toBe(204);
    expect(await topicMessages(api, 'once')).toEqual([]);
  });

  it("dead-letters one group's delivery without touching the other group", async () => {
    await api.put('/api/topic-configs/fragile', { max_retries: 1 });
    await register(api, 'fragile', 'x');
    await register(api, 'fragile', 'y');
    const { id } = (await api.enqueue('fragile', 'f')).body;
    await dequeueGroup(api, 'fragile', 'x');
    // max_retries 1 is also the dead-letter threshold: one failed attempt dead-letters x's delivery.
    expect((await nack(api, id, 'x')).status).toBe(204);
    expect((await topicMessages(api, 'fragile.dlq'))[0]).toMatchObject({ metadata: { consumer_group: 'x' } });
    expect((await dequeueGroup(api, 'fragile', 'y')).map((m) => m.id)).toEqual([id]);
  });

  it('unregistering a group drops its deliveries and completes what no group still needs', async () => {
    await register(api, 'drop', 'keep');
    await register(api, 'drop', 'gone');
    const acked = (await api.enqueue('drop', 'one')).body.id;
    const open = (await api.enqueue('drop', 'two')).body.id;
    await dequeueGroup(api, 'drop', 'keep', { count: 1 });
    expect((await ack(api, acked, 'keep')).status).toBe(204);

    expect((await api.delete('/api/topics/drop/consumer-groups/gone')).status).toBe(204);
    expect((await topicMessages(api, 'drop')).map((m) => m.id)).toEqual([open]);
    expectErrorBody(await api.dequeue('drop', { consumer_group: 'gone' }), 422);
    expect((await dequeueGroup(api, 'drop', 'keep')).map((m) => m.id)).toEqual([open]);

    // The last group goes: nothing needs the message any more, and the topic is a plain topic again.
    expect((await api.delete('/api/topics/drop/consumer-groups/keep')).status).toBe(204);
    expect(await topicMessages(api, 'drop')).toEqual([]);
    const plain = (await api.enqueue('drop', 'three')).body.id;
    expect((await api.dequeue('drop')).body.messages.map((m: any) => m.id)).toEqual([plain]);
  });

  // MySQL only: SQLite clears 20,000 deliveries before a client can see the group gone, so nothing would be tested.
  if (engine.name === 'mysql') it("unregistering a topic's last group leaves the plain messages enqueued while it clears the backlog", async () => {
    await register(api, 'turning', 'last');
    for (let i = 0; i < 20; i++) {
      const batch = await api.post('/api/messages/batch', { messages: Array.from({ length: 1000 }, (_, j) => ({ topic: 'turning', payload: `b${i}-${j}` })) });
      expect(batch.status, batch.text).toBe(201);
    }
    let unregistered = false;
    const deleting = api.delete('/api/topics/turning/consumer-groups/last').then((res) => ((unregistered = true), res));
    // Once the group is gone the topic is plain: what is enqueued now gets no delivery and belongs to nobody's clean-up.
    await expect.poll(async () => (await api.get('/api/topics/turning/consumer-groups')).body.items.length, { interval: 5 }).toBe(0);
    const plain: string[] = [];
    while (!unregistered && plain.length < 200) plain.push((await api.enqueue('turning', 'plain')).body.id);
    expect((await deleting).status).toBe(204);
    expect(plain.length).toBeGreaterThan(0);
    const left = new Set<string>();
    for (let offset = 0; ; offset += 200) {
      const page = (await api.get(`/api/messages?topic=turning&limit=200&offset=${offset}`)).body.items;
      for (const m of page) left.add(m.id);
      if (page.length < 200) break;
    }
    expect(plain.filter((id) => !left.has(id))).toEqual([]);
    expect(left.size).toBe(plain.length);
  }, 120_000);

  // MySQL only: on SQLite an enqueue's transaction holds the write lock from its start, so a registration or
  // an unregistration never runs while an enqueue is between reading the groups and committing.
  if (engine.name === 'mysql') {
    /**
     * Holds an enqueue between its read of the topic's groups and its insert: on a topic with a max_depth the
     * enqueue locks the topic's configuration row to count, which this connection holds until released. A
     * registration or an unregistration touches neither that row nor the enqueue's message, so it runs through.
     */
    async function heldEnqueue(topic: string) {
      expect((await api.put(`/api/topic-configs/${topic}`, { max_depth: 1000 })).status).toBe(200);
      const conn = await mysql.createConnection(server.database.url);
      await conn.beginTransaction();
      await conn.query('SELECT topic FROM topic_configs WHERE topic = ? FOR UPDATE', [topic]);
      const enqueued = api.enqueue(topic, 'raced');
      const waiting = async () => {
        const [rows] = await conn.query(
          `SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
           WHERE t.trx_state = 'LOCK WAIT' AND p.DB = DATABASE()`,
        );
        return Number((rows as Array<{ n: number }>)[0].n);
      };
      const deadline = Date.now() + 10_000;
      while ((await waiting()) === 0) {
        if (Date.now() > deadline) throw new Error('the enqueue never waited for the held configuration row');
        // Not faster: InnoDB refreshes what INNODB_TRX shows only when it was last read over 100 ms ago.
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
      return {
        release: async () => {
          await conn.rollback();
          await conn.end();
          const res = await enqueued;
          expect(res.status, res.text).toBe(201);
          return res.body.id;
        },
      };
    }

    it('gives a message whose enqueue raced the first group registration its delivery in the next expiry run', async () => {
      const held = await heldEnqueue('raced');
      expect((await register(api, 'raced', 'g')).status).toBe(201);
      const id = await held.release();
      // Stored after both of the registration's adoptions, from a read of the groups before its commit.
      expect(await dequeueGroup(api, 'raced', 'g')).toEqual([]);
      expect((await api.post('/api/admin/expiry-reaper/run')).status).toBe(200);
      expect((await dequeueGroup(api, 'raced', 'g')).map((m) => m.id)).toEqual([id]);
      expect((await ack(api, id, 'g')).status).toBe(204);
      expect(await topicMessages(api, 'raced')).toEqual([]);
    });

    it('gives a message whose enqueue raced a second group registration that group\'s delivery in the next expiry run', async () => {
      await register(api, 'growing', 'first');
      const held = await heldEnqueue('growing');
      expect((await register(api, 'growing', 'second')).status).toBe(201);
      const id = await held.release();
      // The enqueue read only the first group: the second's adoptions ran before its commit.
      expect(await dequeueGroup(api, 'growing', 'second')).toEqual([]);
      expect((await api.post('/api/admin/expiry-reaper/run')).status).toBe(200);
      for (const group of ['first', 'second']) {
        expect((await dequeueGroup(api, 'growing', group)).map((m) => m.id)).toEqual([id]);
        expect((await ack(api, id, group)).status).toBe(204);
      }
      expect(await topicMessages(api, 'growing')).toEqual([]);
    });

    it('gives such a message its delivery when the next expiry run comes hours later', async () => {
      expect((await api.post('/api/admin/expiry-reaper/run')).status).toBe(200);
      const held = await heldEnqueue('late-run');
      expect((await register(api, 'late-run', 'g')).status).toBe(201);
      const id = await held.release();
      // No expiry run for two hours (an hourly CronJob that failed once, a database away): the registration is
      // older than the repair's hour by then, but not older than the run before it.
      clock.advance(2 * 3600_000);
      expect((await api.post('/api/admin/expiry-reaper/run')).status).toBe(200);
      expect((await dequeueGroup(api, 'late-run', 'g')).map((m) => m.id)).toEqual([id]);
    });

    it("finishes a message whose enqueue raced a group's unregistration once the remaining groups are done", async () => {
      await register(api, 'parting', 'stays');
      await register(api, 'parting', 'leaves');
      const held = await heldEnqueue('parting');
      expect((await api.delete('/api/topics/parting/consumer-groups/leaves')).status).toBe(204);
      const id = await held.release();
      const [message] = await dequeueGroup(api, 'parting', 'stays');
      expect(message.id).toBe(id);
      expect((await ack(api, id, 'stays')).status).toBe(204);
      // The delivery of the group that left keeps it until the expiry run drops it.
      expect((await topicMessages(api, 'parting')).map((m) => m.id)).toEqual([id]);
      expect((await api.post('/api/admin/expiry-reaper/run')).status).toBe(200);
      expect(await topicMessages(api, 'parting')).toEqual([]);
    });
  }

  // MySQL only, as the one above: SQLite clears the backlog before the group can be registered again.
  if (engine.name === 'mysql') it('a group registered again while its former registration is still being cleared keeps what it adopted', async () => {
    await register(api, 'again', 'g');
    for (let i = 0; i < 20; i++) {
      const batch = await api.post('/api/messages/batch', { messages: Array.from({ length: 1000 }, (_, j) => ({ topic: 'again', payload: `b${i}-${j}` })) });
      expect(batch.status, batch.text).toBe(201);
    }
    const messagesOf = async () => (await api.get('/api/stats')).body.topics.filter((t: any) => t.topic === 'again').reduce((sum: number, t: any) => sum + t.count, 0);
    let unregistered = false;
    const deleting = api.delete('/api/topics/again/consumer-groups/g').then((res) => ((unregistered = true), res));
    await expect.poll(async () => (await api.get('/api/topics/again/consumer-groups')).body.items.length, { interval: 5 }).toBe(0);
    expect(unregistered, 'the clean-up is still running when the group comes back').toBe(false);
    expect((await register(api, 'again', 'g')).status).toBe(201);
    const adopted = await messagesOf();
    expect(adopted).toBeGreaterThan(2000);
    expect((await deleting).status).toBe(204);
    // The former registration's clean-up stops at the new one: what the group adopted stays, and is its to take
    // (a batch already under way when it came back may still finish).
    const left = await messagesOf();
    expect(left).toBeGreaterThanOrEqual(adopted - 1000);
    const pending = (await api.get('/api/stats')).body.consumer_groups.filter((s: any) => s.topic === 'again' && s.consumer_group === 'g' && s.status === 'pending');
    expect(pending.map((s: any) => s.count)).toEqual([left]);
  }, 120_000);

  it('upserts a keyed message only while no group has taken it', async () => {
    await register(api, 'keyed', 'a');
    await register(api, 'keyed', 'b');
    const first = (await api.enqueue('keyed', 'v1', { key: 'k' })).body.id;
    expect((await api.enqueue('keyed', 'v2', { key: 'k' })).body.id).toBe(first);
    expect((await dequeueGroup(api, 'keyed', 'a'))[0]).toMatchObject({ id: first, payload: 'v2' });
    const second = (await api.enqueue('keyed', 'v3', { key: 'k' })).body.id;
    expect(second).not.toBe(first);
    expect((await dequeueGroup(api, 'keyed', 'b')).map((m) => [m.id, m.payload])).toEqual([
      [first, 'v2'],
      [second, 'v3'],
    ]);
  });

  it('caps a fan-out topic at max_depth messages that some group still has pending', async () => {
    await api.put('/api/topic-configs/capped', { max_depth: 2 });
    await register(api, 'capped', 'fast');
    await register(api, 'capped', 'slow');
    const ids = [(await api.enqueue('capped', '1')).body.id, (await api.enqueue('capped', '2')).body.id];
    for (const m of await dequeueGroup(api, 'capped', 'fast')) await ack(api, m.id, 'fast');
    expectErrorBody(await api.enqueue('capped', '3'), 429);
    // Taken by every group (not acked yet): no group has them pending any more, as a dequeued plain message.
    expect((await dequeueGroup(api, 'capped', 'slow')).map((m) => m.id)).toEqual(ids);
    const third = (await api.enqueue('capped', '3')).body.id;
    expect((await api.enqueue('capped', '4')).status).toBe(201);
    expectErrorBody(await api.enqueue('capped', '5'), 429);
    // A nack returns a delivery to pending: it counts again.
    for (const m of await dequeueGroup(api, 'capped', 'fast')) await ack(api, m.id, 'fast');
    for (const m of await dequeueGroup(api, 'capped', 'slow')) if (m.id !== third) await ack(api, m.id, 'slow');
    expect((await nack(api, third, 'slow')).status).toBe(204);
    expect((await api.enqueue('capped', '5')).status).toBe(201);
    expectErrorBody(await api.enqueue('capped', '6'), 429);
  });

  it('expires deliveries per group and counts fan-out deliveries in /api/stats', async () => {
    await api.put('/api/topic-configs/ttl', { message_ttl_seconds: 10 });
    await register(api, 'ttl', 'quick');
    await register(api, 'ttl', 'late');
    const { id } = (await api.enqueue('ttl', 'x')).body;
    await dequeueGroup(api, 'ttl', 'quick');

    const stats = (await api.get('/api/stats')).body;
    // The message counts once in `topics` (the spec's list); its deliveries are listed apart, per group.
    expect(stats.topics.filter((s: any) => s.topic === 'ttl')).toEqual([{ topic: 'ttl', status: 'processing', count: 1 }]);
    expect(stats.consumer_groups.filter((s: any) => s.topic === 'ttl')).toEqual([
      { topic: 'ttl', consumer_group: 'late', status: 'pending', count: 1 },
      { topic: 'ttl', consumer_group: 'quick', status: 'processing', count: 1 },
    ]);

    clock.advance(11_000);
    // Past its TTL the message is never handed out, even before the reaper marks it.
    expect(await dequeueGroup(api, 'ttl', 'late')).toEqual([]);
    expect((await api.post('/api/admin/expiry-reaper/run')).body).toEqual({ expired: 1 });
    expect((await ack(api, id, 'quick')).status).toBe(204);
    // quick acked, late's TTL ran out: the message stays as expired for the delete reaper.
    expect((await topicMessages(api, 'ttl')).map((m) => [m.id, m.status])).toEqual([[id, 'expired']]);
    expect((await api.post('/api/admin/delete-reaper/run')).body).toEqual({ deleted: 1 });
    expect(await topicMessages(api, 'ttl')).toEqual([]);
  });

  it("archives a message one group acked and another's TTL expired once, however often it is settled again", async () => {
    await api.put('/api/topic-configs/ttl-log', { message_ttl_seconds: 10, replayable: true });
    await register(api, 'ttl-log', 'done');
    await register(api, 'ttl-log', 'late');
    const { id } = (await api.enqueue('ttl-log', 'x')).body;
    await dequeueGroup(api, 'ttl-log', 'done');
    expect((await ack(api, id, 'done')).status).toBe(204);
    clock.advance(11_000);
    expect((await api.post('/api/admin/expiry-reaper/run')).body).toEqual({ expired: 1 });
    const logged = async () => (await api.get('/api/topics/ttl-log/message-log')).body.items.map((e: any) => e.id);
    expect(await logged()).toEqual([id]);

    // Each of these settles the expired message again: none may archive it twice (a 500, and on MySQL an expiry
    // run failing on every later run while the dropped group's deliveries stayed behind).
    expect((await api.post('/api/admin/expiry-reaper/run')).body).toEqual({ expired: 0 });
    expect((await api.delete('/api/topics/ttl-log/consumer-groups/late')).status).toBe(204);
    expect((await api.post('/api/admin/expiry-reaper/run')).status).toBe(200);
    const purged = await api.post('/api/topics/ttl-log/purge', { statuses: ['expired'] });
    expect(purged.status, purged.text).toBe(200);
    expect(await topicMessages(api, 'ttl-log')).toEqual([]);
    expect(await logged()).toEqual([id]);
  });

  it('archives a message a group acked before it was unregistered, whichever way the other groups finish it', async () => {
    await api.put('/api/topic-configs/gone-log', { replayable: true, max_retries: 1 });
    for (const group of ['done', 'failing', 'last']) await register(api, 'gone-log', group);
    const { id } = (await api.enqueue('gone-log', 'x')).body;
    await dequeueGroup(api, 'gone-log', 'done');
    expect((await ack(api, id, 'done')).status).toBe(204);
    // The group that acked goes first; the others then dead-letter the message and drop it with their group.
    expect((await api.delete('/api/topics/gone-log/consumer-groups/done')).status).toBe(204);
    expect((await api.post('/api/admin/expiry-reaper/run')).status).toBe(200);
    await dequeueGroup(api, 'gone-log', 'failing');
    expect((await nack(api, id, 'failing')).status).toBe(204);
    expect((await topicMessages(api, 'gone-log.dlq')).map((m) => m.metadata.consumer_group)).toEqual(['failing']);
    expect((await topicMessages(api, 'gone-log')).map((m) => m.id)).toEqual([id]);
    expect((await api.delete('/api/topics/gone-log/consumer-groups/last')).status).toBe(204);

    expect(await topicMessages(api, 'gone-log')).toEqual([]);
    expect((await api.get('/api/topics/gone-log/message-log')).body.items.map((e: any) => e.id)).toEqual([id]);
    // The acked delivery kept for the log is bookkeeping: never counted as the unregistered group's.
    expect((await api.get('/api/stats')).body.consumer_groups.filter((g: any) => g.topic === 'gone-log')).toEqual([]);
  });

  it('completes and archives each message exactly once when groups ack it at the same time', async () => {
    await api.put('/api/topic-configs/race', { replayable: true });
    await register(api, 'race', 'left');
    await register(api, 'race', 'right');
    const messages = Array.from({ length: 40 }, (_, i) => ({ topic: 'race', payload: `m${i}` }));
    expect((await api.post('/api/messages/batch', { messages })).status).toBe(201);
    const left = await dequeueGroup(api, 'race', 'left', { count: 40 });
    const right = await dequeueGroup(api, 'race', 'right', { count: 40 });
    expect(left).toHaveLength(40);
    expect(right).toHaveLength(40);
    const acks = await Promise.all([...left.map((m) => ack(api, m.id, 'left')), ...right.map((m) => ack(api, m.id, 'right'))]);
    expect(acks.every((r) => r.status === 204)).toBe(true);
    expect(await topicMessages(api, 'race')).toEqual([]);
    const logged = (await api.get('/api/topics/race/message-log?limit=200')).body;
    expect(logged.total).toBe(40);
    expect(new Set(logged.items.map((e: any) => e.id)).size).toBe(40);
  });

  it('purges per group on a fan-out topic', async () => {
    await register(api, 'purge', 'a');
    await register(api, 'purge', 'b');
    const taken = (await api.enqueue('purge', 'one')).body.id;
    await api.enqueue('purge', 'two');
    await dequeueGroup(api, 'purge', 'a', { count: 1 });
    expect((await ack(api, taken, 'a')).status).toBe(204);
    // Every group's pending deliveries go: 'two' (nobody started it) and 'one' (a acked it, b had it pending).
    expect((await api.post('/api/topics/purge/purge', { statuses: ['pending'] })).body).toEqual({ deleted: 2 });
    expect(await topicMessages(api, 'purge')).toEqual([]);
    expect(await dequeueGroup(api, 'purge', 'b')).toEqual([]);
  });

  it('a purge counts only the messages it removed, not those it left expired for the delete reaper', async () => {
    await api.put('/api/topic-configs/purge-ttl', { message_ttl_seconds: 10 });
    await register(api, 'purge-ttl', 'a');
    await register(api, 'purge-ttl', 'c');
    const { id } = (await api.enqueue('purge-ttl', 'x')).body;
    await dequeueGroup(api, 'purge-ttl', 'c', { visibility_timeout_seconds: 300 });
    clock.advance(11_000);
    // a's pending delivery expires; c still holds its own.
    expect((await api.post('/api/admin/expiry-reaper/run')).body).toEqual({ expired: 1 });
    expect((await api.post('/api/topics/purge-ttl/purge', { statuses: ['processing'] })).body).toEqual({ deleted: 0 });
    expect((await topicMessages(api, 'purge-ttl')).map((m) => [m.id, m.status])).toEqual([[id, 'expired']]);
  });

  it("an unregistration cut short after the group went (the process died) is finished by the next expiry run", async () => {
    await register(api, 'cut-short', 'g');
    const ids = [(await api.enqueue('cut-short', 'a')).body.id, (await api.enqueue('cut-short', 'b')).body.id];
    // What a process killed right after removing the group row leaves: the row gone, its deliveries still there.
    const db = createDb({ url: server.database.url, poolSize: 1, logger: createLogger('silent') });
    try {
      expect(await db('consumer_groups').where({ topic: 'cut-short', consumer_group: 'g' }).delete()).toBe(1);
      await db('settings').where({ name: 'catalog' }).increment('revision', 1);
    } finally {
      await db.destroy();
    }
    await expect.poll(async () => (await api.get('/api/topics/cut-short/consumer-groups')).body.items).toEqual([]);
    expect((await api.post('/api/admin/expiry-reaper/run')).status).toBe(200);
    // The topic's last group is gone: what it left is finished, as a complete unregistration would have done.
    expect((await topicMessages(api, 'cut-short')).filter((m) => ids.includes(m.id))).toEqual([]);
  });

  it("a purge of processing takes one group's claimed deliveries, never the pending copies of the others", async () => {
    await register(api, 'purge-claimed', 'a');
    await register(api, 'purge-claimed', 'b');
    const id = (await api.enqueue('purge-claimed', 'one')).body.id;
    // a's claim makes the message row processing; b has not started it.
    expect((await dequeueGroup(api, 'purge-claimed', 'a')).map((m) => m.id)).toEqual([id]);
    expect((await api.post('/api/topics/purge-claimed/purge', { statuses: ['processing'] })).body).toEqual({ deleted: 0 });
    expect(await dequeueGroup(api, 'purge-claimed', 'a')).toEqual([]);
    expect((await dequeueGroup(api, 'purge-claimed', 'b')).map((m) => m.id)).toEqual([id]);
    expect((await ack(api, id, 'b')).status).toBe(204);
    expect(await topicMessages(api, 'purge-claimed')).toEqual([]);
  });
});
