import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MAX_DEQUEUE_COUNT } from '../src/queue/bounds.js';
import { engineByName } from './helpers/engines.js';
import { statementsOf, tablesOf } from './helpers/query-plans.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const mysqlUrl = inject('mysqlUrl');


/**
 * A batch of the most ids an ack takes (1,000) is read and written by its ids: MariaDB turns an IN list of
 * 1,000 values into a join with a table of them, and planned it as a scan of the whole table, locking every
 * row a locking read or a write read, in no fixed order. The service's sessions keep the list a list.
 */
(mysqlUrl ? describe : describe.skip)('statements on a batch of 1,000 ids [mysql]', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(engineByName.mysql, { overrides: { reapers: { mode: 'external' } } });
    const { api } = server;
    expect((await api.post('/api/topics/wide-fan/consumer-groups', { consumer_group: 'g1' })).status).toBe(201);
    for (const topic of ['wide', 'wide-fan']) {
      for (let start = 0; start < 3000; start += 1000) {
        const messages = Array.from({ length: 1000 }, (_, i) => ({ topic, payload: `p${start + i}` }));
        expect((await api.post('/api/messages/batch', { messages })).status).toBe(201);
      }
    }
  });
  afterAll(async () => {
    await server?.close();
  });

  it('an ack of 1,000 on a topic and on a group reads each table by an index, through no table made of the ids', async () => {
    const { api } = server;
    const texts: Array<{ sql: string; bindings: unknown[] }> = [];
    const listener = (q: { sql: string; bindings?: unknown[] }) => void texts.push({ sql: q.sql, bindings: q.bindings ?? [] });
    for (const [topic, group] of [['wide', undefined], ['wide-fan', 'g1']] as const) {
      const claimed = (await api.dequeue(topic, { count: MAX_DEQUEUE_COUNT, ...(group ? { consumer_group: group } : {}) })).body.messages.map((m: any) => m.id);
      expect(claimed).toHaveLength(MAX_DEQUEUE_COUNT);
      server.db.on('query', listener);
      try {
        const acked = await api.post('/api/messages/ack', { ids: claimed, ...(group ? { consumer_group: group } : {}) });
        expect(acked.status).toBe(200);
        expect(acked.body.acked).toHaveLength(MAX_DEQUEUE_COUNT);
      } finally {
        server.db.off('query', listener);
      }
    }
    const byIds = texts.flatMap(statementsOf).filter((s) => s.bindings.length >= MAX_DEQUEUE_COUNT && /^(select|update|delete)\b/i.test(s.sql));
    // The topic's DELETE, and the group's locks, statuses and acked mark at least.
    expect(byIds.length).toBeGreaterThanOrEqual(4);
    for (const s of byIds) {
      // EXPLAIN plans without running the statement, as the service's own session would.
      const [rows] = (await server.db.raw(`EXPLAIN FORMAT=JSON ${s.sql}`, s.bindings as any[])) as [Array<Record<string, string>>];
      const tables = tablesOf(JSON.parse(Object.values(rows[0])[0]));
      // The statement's own table by a range of an index (its primary key, or the topic's processing messages
      // in messages_queue, as the statistics have it); a subquery's (the DELETE's look for deliveries) by key
      // per row; and no table made of the list's values.
      expect(tables[0], s.sql.slice(0, 100)).toMatchObject({ access_type: 'range' });
      for (const t of tables) {
        expect(String(t.table_name), s.sql.slice(0, 100)).toMatch(/^[a-z_]+$/);
        expect(['range', 'ref', 'eq_ref'], `${t.table_name}: ${s.sql.slice(0, 100)}`).toContain(t.access_type);
      }
    }
  });
});
