import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineByName } from './helpers/engines.js';
import { manualClock, startTestServer, type TestServer } from './helpers/server.js';

/**
 * SQLite plans without measured statistics: for deliveries by message id and status it took
 * `deliveries_expiry (status, expires_at)` over the primary key and read every delivery in that status, of every
 * topic and group. Every statement on `deliveries` that the service runs for these operations must take the
 * primary key (or the claim's index), never deliveries_expiry, with thousands of deliveries pending elsewhere.
 */
describe('statements on deliveries by message id [sqlite]', () => {
  let server: TestServer;
  const clock = manualClock();
  const statements: Array<{ sql: string; bindings: unknown[] }> = [];
  const listener = (q: { sql: string; bindings?: unknown[] }) => statements.push({ sql: q.sql, bindings: q.bindings ?? [] });

  beforeAll(async () => {
    server = await startTestServer(engineByName.sqlite, { now: clock.now, overrides: { reapers: { mode: 'external' } } });
    const { api } = server;
    for (const group of ['g1', 'g2']) {
      expect((await api.post('/api/topics/backlog/consumer-groups', { consumer_group: group })).status).toBe(201);
      expect((await api.post('/api/topics/lines/consumer-groups', { consumer_group: group })).status).toBe(201);
    }
    // 3,000 deliveries pending on another topic: what a plan by status would read.
    for (let start = 0; start < 1500; start += 500) {
      const messages = Array.from({ length: 500 }, (_, i) => ({ topic: 'backlog', payload: `b${start + i}` }));
      expect((await api.post('/api/messages/batch', { messages })).status).toBe(201);
    }
    // Two messages on each of 100 ordering keys: a group's ack of the first ones opens the second ones.
    const keyed = Array.from({ length: 200 }, (_, i) => ({ topic: 'lines', payload: `l${i}`, ordering_key: `k${i % 100}` }));
    expect((await api.post('/api/messages/batch', { messages: keyed })).status).toBe(201);
    expect((await api.put('/api/topic-configs/lines', { message_ttl_seconds: 60 })).status).toBe(200);
    expect((await api.post('/api/messages', { topic: 'lines', payload: 'stale', key: 'holder' })).status).toBe(201);
  });

  afterAll(async () => {
    server?.db.off('query', listener);
    await server?.close();
  });

  it('take the primary key: a group ack that opens heads, a keyed upsert, a stale key holder, a purge', async () => {
    const { api } = server;
    server.db.on('query', listener);
    const heads = await api.dequeue('lines', { count: 100, consumer_group: 'g1' });
    expect(heads.body.messages).toHaveLength(100);
    const ids = heads.body.messages.map((m: any) => m.id);
    expect((await api.post('/api/messages/ack', { ids, consumer_group: 'g1' })).body.acked).toHaveLength(100);
    // The second message of each key is the head now.
    const next = await api.dequeue('lines', { count: 100, consumer_group: 'g1' });
    expect(next.body.messages.map((m: any) => m.payload).sort()).toEqual(Array.from({ length: 100 }, (_, i) => `l${i + 100}`).sort());
    // An upsert of a pending keyed message moves its groups' deliveries.
    expect((await api.post('/api/messages', { topic: 'lines', payload: 'upserted', key: 'holder', delay_seconds: 5 })).status).toBe(201);
    // A holder past its TTL is expired, its deliveries with it, and the key goes to a new message.
    clock.advance(61_000);
    expect((await api.post('/api/messages', { topic: 'lines', payload: 'fresh', key: 'holder' })).status).toBe(201);
    expect((await api.post('/api/topics/lines/purge', { statuses: ['pending'] })).status).toBe(200);
    server.db.off('query', listener);

    const onDeliveries = statements.filter((s) => /\bdeliveries\b/.test(s.sql) && /^\s*(update|delete|select)/i.test(s.sql));
    // What the operations above must have run, so the check below is not vacuous.
    for (const shape of [/UPDATE deliveries SET visible_at = \? WHERE consumer_group = \? AND status = 'pending' AND message_id IN/, /update `deliveries` set `visible_at`/, /update `deliveries` set `status` = \? where `message_id` = \? and `status` = \?/, /delete from `deliveries` where `consumer_group` = \? and `message_id` in/]) {
      expect(onDeliveries.some((s) => shape.test(s.sql)), String(shape)).toBe(true);
    }
    const byStatus: string[] = [];
    for (const s of onDeliveries) {
      const plan = (await server.db.raw(`EXPLAIN QUERY PLAN ${s.sql}`, s.bindings)) as Array<{ detail: string }>;
      if (plan.some((row) => row.detail.includes('deliveries_expiry'))) byStatus.push(`${s.sql}\n  ${plan.map((row) => row.detail).join('\n  ')}`);
    }
    expect(byStatus).toEqual([]);
  });
});
