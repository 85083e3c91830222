import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { engineByName } from './helpers/engines.js';
import { statementsOf, tablesOf } from './helpers/query-plans.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const mysqlUrl = inject('mysqlUrl');
const KEYS = 1000;



/**
 * The head rows of the lines a batch touches are read by the whole primary key, whatever the table's
 * statistics say: a read of a topic's (or group's) every head row and a test of each against the lines (an OR
 * of them, as MariaDB planned it with statistics of a smaller table) cost 12 ms for 200 lines of a topic with
 * 1,000 keys, and a locking read locked every row it read.
 */
(mysqlUrl ? describe : describe.skip)('reads of ordering heads [mysql]', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(engineByName.mysql, { overrides: { reapers: { mode: 'external' } } });
    const { api } = server;
    expect((await api.post('/api/topics/wide-fan/consumer-groups', { consumer_group: 'g1' })).status).toBe(201);
    // Statistics taken while the table was empty, as a new deployment's are for a while: InnoDB takes them again
    // in the background after a tenth of the rows changed, at most once in ten seconds (this ANALYZE was one).
    await server.db.raw('ANALYZE TABLE ordering_heads');
    for (const topic of ['wide', 'wide-fan']) {
      const messages = Array.from({ length: KEYS }, (_, i) => ({ topic, payload: `p${i}`, ordering_key: `k${i}` }));
      expect((await api.post('/api/messages/batch', { messages })).status).toBe(201);
    }
  });
  afterAll(async () => {
    await server?.close();
  });

  it('a batch enqueue of 200 keys and a group ack read only their lines of a topic with 1,000 keys, by primary key', async () => {
    const { api } = server;
    const texts: Array<{ sql: string; bindings: unknown[] }> = [];
    const listener = (q: { sql: string; bindings?: unknown[] }) => void texts.push({ sql: q.sql, bindings: q.bindings ?? [] });
    server.db.on('query', listener);
    try {
      // 200 messages behind 200 existing heads of each topic (and the group's lines): a statement's worth of lines,
      // as many as MariaDB plans by the index's statistics instead of a look into it per line. With a
      // deduplication key among them, as the batch goes through a transaction that joins the lines it stored.
      for (const topic of ['wide', 'wide-fan']) {
        const messages = Array.from({ length: 200 }, (_, i) => ({ topic, payload: `q${i}`, ordering_key: `k${i}`, ...(i === 0 ? { key: 'once' } : {}) }));
        expect((await api.post('/api/messages/batch', { messages })).status).toBe(201);
      }
      // A group ack of ten heads hands ten lines over.
      const claimed = (await api.dequeue('wide-fan', { count: 10, consumer_group: 'g1' })).body.messages.map((m: any) => m.id);
      expect(claimed).toHaveLength(10);
      const acked = await api.post('/api/messages/ack', { ids: claimed, consumer_group: 'g1' });
      expect(acked.status, JSON.stringify(acked.body)).toBe(200);
      expect(acked.body.acked).toHaveLength(10);
    } finally {
      server.db.off('query', listener);
    }
    const reads = texts.flatMap(statementsOf).filter((s) => /^SELECT [^]* FROM ordering_heads\b/.test(s.sql));
    // The enqueues' joins (one per topic) and the ack's hand-over: each must have been read for the check to mean anything.
    expect(reads.length).toBeGreaterThanOrEqual(3);
    for (const read of reads) {
      const lines = read.bindings.length / 3;
      // The primary key named, and the lines as its values: the plan below then holds whatever the statistics say.
      expect(read.sql).toMatch(/FROM ordering_heads h FORCE INDEX \(PRIMARY\) WHERE \(topic, consumer_group, ordering_key\) IN \(\(\?, \?, \?\)/);
      const table = await server.db.transaction(async (trx) => {
        const [rows] = (await trx.raw(`ANALYZE FORMAT=JSON ${read.sql}`, read.bindings as any[])) as [Array<Record<string, string>>];
        return tablesOf(JSON.parse(Object.values(rows[0])[0]));
      });
      expect(table).toHaveLength(1);
      expect(table[0], read.sql.slice(0, 120)).toMatchObject({ key: 'PRIMARY', access_type: 'range' });
      expect(Number(table[0].r_rows)).toBeLessThanOrEqual(lines);
    }
  });
});
