import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { claimDeliveriesSelectMysql, claimDeliveriesSqlite, type GroupClaimRequest } from '../src/store/deliveries/claim.js';
import { engineByName } from './helpers/engines.js';
import { tablesOf } from './helpers/query-plans.js';
import type { Api } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const mysqlUrl = inject('mysqlUrl');


/**
 * A fan-out topic whose group 'billing' has deliveries that are not due: 300 of key 'A' waiting behind their
 * head (claimed, so the key is processing), and 200 delayed by ten minutes.
 */
async function notDue(api: Api): Promise<void> {
  expect((await api.post('/api/topics/lines/consumer-groups', { consumer_group: 'billing' })).status).toBe(201);
  const keyed = Array.from({ length: 301 }, (_, i) => ({ topic: 'lines', payload: `a${i}`, ordering_key: 'A' }));
  expect((await api.post('/api/messages/batch', { messages: keyed })).status).toBe(201);
  const head = await api.dequeue('lines', { count: 10, consumer_group: 'billing' });
  expect(head.body.messages.map((m: any) => m.payload)).toEqual(['a0']);
  const delayed = Array.from({ length: 200 }, (_, i) => ({ topic: 'lines', payload: `d${i}`, delay_seconds: 600 }));
  expect((await api.post('/api/messages/batch', { messages: delayed })).status).toBe(201);
}

/**
 * Pins the plan of the real group claim (src/store/deliveries/claim.ts): it must walk deliveries_visibility in
 * order, like the plain claim walks messages_queue; a filesort would lock every pending delivery of the group,
 * and a walk in message_id order would read every delivery not yet due on the way.
 */
(mysqlUrl ? describe : describe.skip)('group claim query plan [mysql]', () => {
  let server: TestServer;
  const now = Date.now();

  beforeAll(async () => {
    server = await startTestServer(engineByName.mysql, { overrides: { reapers: { mode: 'external' } } });
    const { api } = server;
    for (const group of ['billing', 'audit', 'search']) await api.post('/api/topics/orders/consumer-groups', { consumer_group: group });
    await api.post('/api/topics/emails/consumer-groups', { consumer_group: 'billing' });
    for (const [topic, n] of [
      ['orders', 1500],
      ['emails', 500],
    ] as const) {
      for (let start = 0; start < n; start += 500) {
        const messages = Array.from({ length: Math.min(500, n - start) }, (_, i) => ({ topic, payload: `p${start + i}` }));
        expect((await api.post('/api/messages/batch', { messages })).status).toBe(201);
      }
    }
    expect((await api.dequeue('orders', { count: 400, consumer_group: 'billing' })).status).toBe(200);
    await notDue(api);
    await server.db.raw('ANALYZE TABLE deliveries');
  });
  afterAll(async () => {
    await server?.close();
  });

  const requests: Array<[string, GroupClaimRequest]> = [
    ['one message', { topic: 'orders', group: 'billing', limit: 1, now, visibleUntil: now + 30_000 }],
    ['a batch', { topic: 'orders', group: 'audit', limit: 100, now, visibleUntil: now + 30_000 }],
    ['an unknown group', { topic: 'orders', group: 'nobody', limit: 10, now, visibleUntil: now + 30_000 }],
    ['a group with nothing due', { topic: 'lines', group: 'billing', limit: 10, now, visibleUntil: now + 30_000 }],
  ];

  it.each(requests)('%s: walks deliveries_visibility in order, no filesort, no full scan', async (_what, req) => {
    const native = claimDeliveriesSelectMysql(server.db, req, req.limit).toSQL().toNative();
    expect(native.sql).toMatch(/order by `visible_at` asc, `message_id` asc/i);
    const [rows] = (await server.db.raw(`EXPLAIN ${native.sql}`, native.bindings as any[])) as [Array<Record<string, unknown>>];
    for (const row of rows) {
      expect(String(row.Extra ?? '')).not.toMatch(/filesort|temporary/i);
      expect(row.type).toBe('range');
      expect(row.key).toBe('deliveries_visibility');
    }
  });

  it('reads none of the deliveries that are not due: waiting behind their key, delayed', async () => {
    const req = { topic: 'lines', group: 'billing', limit: 10, now: Date.now(), visibleUntil: Date.now() + 30_000 };
    const native = claimDeliveriesSelectMysql(server.db, req, req.limit).toSQL().toNative();
    // ANALYZE runs the statement and counts the rows each table gave (r_rows); its locks end with the transaction.
    const table = await server.db.transaction(async (trx) => {
      const [rows] = (await trx.raw(`ANALYZE FORMAT=JSON ${native.sql}`, native.bindings as any[])) as [Array<Record<string, string>>];
      return tablesOf(JSON.parse(Object.values(rows[0])[0]));
    });
    expect(table).toHaveLength(1);
    expect(table[0]).toMatchObject({ table_name: 'deliveries', key: 'deliveries_visibility', r_rows: 0 });
  });

  it('claims each group its own oldest pending messages', async () => {
    const oldest = (await server.db('messages').where({ topic: 'orders' }).orderBy('id').limit(3).select('id')).map((r) => r.id);
    expect((await server.api.dequeue('orders', { count: 3, consumer_group: 'search' })).body.messages.map((m: any) => m.id)).toEqual(oldest);
  });

  it('claims with a SELECT, then a guarded UPDATE, the mark of the messages and the read of the claimed rows', async () => {
    const texts: string[] = [];
    const listener = (q: { sql: string }) => void (/\b(deliveries|messages)\b/.test(q.sql) && texts.push(q.sql));
    server.db.on('query', listener);
    let claimed: any[];
    try {
      claimed = (await server.api.dequeue('emails', { count: 5, consumer_group: 'billing', visibility_timeout_seconds: 60 })).body.messages;
    } finally {
      server.db.off('query', listener);
    }
    expect(claimed.map((m) => m.payload)).toEqual(['p0', 'p1', 'p2', 'p3', 'p4']);
    // The claim's statements: its SELECT (sent with START TRANSACTION), then, sent with COMMIT, the UPDATE of the
    // deliveries (on MariaDB in a compound statement that fails the transaction if it took fewer rows than were
    // locked), the mark of their messages and the read of what was claimed.
    const claim = texts.slice(texts.findIndex((sql) => /for update skip locked$/.test(sql)));
    expect(claim).toHaveLength(4);
    expect(claim[0]).toMatch(/^select `message_id` from `deliveries` FORCE INDEX \(`deliveries_visibility`\)/);
    expect(claim[1]).toMatch(/^(BEGIN NOT ATOMIC )?UPDATE deliveries SET status = 'processing'/);
    if (claim[1].startsWith('BEGIN')) expect(claim[1]).toMatch(/IF ROW_COUNT\(\) < 5 THEN SIGNAL SQLSTATE '40001'/);
    expect(claim[2]).toMatch(/^UPDATE messages SET status = 'processing'/);
    expect(claim[3]).toMatch(/^select `m`.`id`[^]*inner join `deliveries` as `d`/);
    const delivery = await server.db('deliveries').where({ message_id: claimed[0].id, consumer_group: 'billing' }).first('status', 'visible_at');
    expect(delivery.status).toBe('processing');
    expect(Number(delivery.visible_at)).toBeGreaterThan(Date.now() + 50_000);
  });
});

describe('group claim query plan [sqlite]', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(engineByName.sqlite);
    await notDue(server.api);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('seeks deliveries_visibility up to now: no scan, no sort, nothing not due read', async () => {
    const now = Date.now();
    const claim = claimDeliveriesSqlite({ topic: 'lines', group: 'billing', limit: 10, now, visibleUntil: now + 30_000 }, 10);
    const plan = ((await server.db.raw(`EXPLAIN QUERY PLAN ${claim.sql}`, claim.bindings)) as Array<{ detail: string }>).map((r) => r.detail);
    expect(plan.some((d) => /SEARCH deliveries USING (COVERING )?INDEX deliveries_visibility \(topic=\? AND consumer_group=\? AND status=\? AND visible_at<\?\)/.test(d)), plan.join(' | ')).toBe(true);
    expect(plan.filter((d) => /TEMP B-TREE|^SCAN deliveries/.test(d)), plan.join(' | ')).toEqual([]);
  });
});
