import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { claimDeliveriesSelectMysql, type GroupClaimRequest } from '../src/store/deliveries/claim.js';
import { engineByName } from './helpers/engines.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const mysqlUrl = inject('mysqlUrl');

/**
 * Pins the plan of the real group claim (src/store/deliveries/claim.ts): it must walk deliveries_claim in
 * order, like the plain claim walks messages_queue; a filesort would lock every pending delivery of the group.
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
    await server.db.raw('ANALYZE TABLE deliveries');
  });
  afterAll(async () => {
    await server?.close();
  });

  const requests: Array<[string, GroupClaimRequest]> = [
    ['one message', { topic: 'orders', group: 'billing', limit: 1, now, visibleUntil: now + 30_000 }],
    ['a batch', { topic: 'orders', group: 'audit', limit: 100, now, visibleUntil: now + 30_000 }],
    ['an unknown group', { topic: 'orders', group: 'nobody', limit: 10, now, visibleUntil: now + 30_000 }],
  ];

  it.each(requests)('%s: walks deliveries_claim in order, no filesort, no full scan', async (_what, req) => {
    const native = claimDeliveriesSelectMysql(server.db, req, req.limit).toSQL().toNative();
    expect(native.sql).toMatch(/order by `message_id`/i);
    const [rows] = (await server.db.raw(`EXPLAIN ${native.sql}`, native.bindings as any[])) as [Array<Record<string, unknown>>];
    for (const row of rows) {
      expect(String(row.Extra ?? '')).not.toMatch(/filesort|temporary/i);
      expect(row.type).not.toBe('ALL');
      expect(row.key).toBe('deliveries_claim');
    }
  });

  it('claims each group its own oldest pending messages', async () => {
    const oldest = (await server.db('messages').where({ topic: 'orders' }).orderBy('id').limit(3).select('id')).map((r) => r.id);
    expect((await server.api.dequeue('orders', { count: 3, consumer_group: 'search' })).body.messages.map((m: any) => m.id)).toEqual(oldest);
  });
});
