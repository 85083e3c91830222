import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { claimSelectMysql, type ClaimRequest } from '../src/store/messages/claim.js';
import { overdueMessages, WITHOUT_DELIVERIES } from '../src/store/messages/settle.js';
import { joinTopicLinesStatements, lineHeadsStatement, nextInLineStatement, topicHandOverStatement, topicLinesHandOver } from '../src/store/ordering/lines.js';
import { joinUnjoinedStatements, UNJOINED_TOPICS, unjoinedLinesStatement } from '../src/store/ordering/unjoined.js';
import { newMessageRow, openingInsertSql, waitingInsertSql } from '../src/store/messages/insert.js';
import { openLinesStatement } from '../src/store/ordering/lines-first.js';
import { uuidv7 } from '../src/queue/message-ids.js';
import { engineByName } from './helpers/engines.js';
import { tablesOf } from './helpers/query-plans.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const mysqlUrl = inject('mysqlUrl');



/** A topic's first 30 lines (its own, by key) with their head rows, as the hand-over's statements name them. */
async function firstLines(server: TestServer, topic: string) {
  const heads = (await server.db('ordering_heads').where({ topic, consumer_group: '' }).orderBy('ordering_key').limit(30)) as Array<{ ordering_key: string; message_id: string }>;
  expect(heads).toHaveLength(30);
  return { heads, lines: heads.map((h) => ({ line: { topic, group: '', key: h.ordering_key }, id: h.message_id })) };
}

/** The ack's hand-over statements on MariaDB, one by one: its compound statement and its catch-up run them again, the catch-up after its lock. */
function handOverOf(lines: Array<{ line: { topic: string; group: string; key: string }; id: string }>, now: number, options: { ifGone?: boolean } = {}) {
  const { lock, handOver, close } = topicLinesHandOver(lines, now, options);
  return [lock, handOver, close];
}

/**
 * Pins the plan of the real claim SELECT (built by src/store/messages/claim.ts, not a copy): it must walk
 * messages_queue in order. A filesort or a full scan would lock every pending row of the topic under
 * FOR UPDATE SKIP LOCKED (architecture: mariadbd ran out of lock memory with a 300k backlog).
 */
(mysqlUrl ? describe : describe.skip)('claim query plan [mysql]', () => {
  let server: TestServer;
  const now = Date.now();

  beforeAll(async () => {
    server = await startTestServer(engineByName.mysql);
    const { api } = server;
    // Several topics and every status: the claim topic is neither alone nor the whole table.
    const plan: Array<[string, number]> = [
      ['orders', 2500],
      ['payments', 1500],
      ['emails', 800],
      ['audit.log', 300],
    ];
    for (const [topic, n] of plan) {
      for (let start = 0; start < n; start += 1000) {
        const messages = Array.from({ length: Math.min(1000, n - start) }, (_, i) => ({ topic, payload: `p${start + i}`, ...(i % 5 === 0 ? { key: `k${start + i}` } : {}) }));
        expect((await api.post('/api/messages/batch', { messages })).status).toBe(201);
      }
    }
    // An ordered topic: 1,000 keys of 2 messages, each key's first the head, the other waiting behind it.
    for (let i = 0; i < 2; i++) {
      const messages = Array.from({ length: 1000 }, (_, n) => ({ topic: 'ordered', payload: `o${i * 1000 + n}`, ordering_key: `key-${n}` }));
      expect((await api.post('/api/messages/batch', { messages })).status).toBe(201);
    }
    expect((await api.dequeue('orders', { count: 600 })).status).toBe(200);
    expect((await api.dequeue('payments', { count: 400 })).status).toBe(200);
    // Statuses the API reaches only with time (expiry) or repeated failure, set directly for the fixture.
    await server.db('messages').where({ topic: 'orders', status: 'pending' }).orderBy('id').limit(300).update({ status: 'expired' });
    await server.db('messages').where({ topic: 'emails', status: 'pending' }).orderBy('id').limit(200).update({ status: 'failed' });
    await server.db.raw('ANALYZE TABLE messages, ordering_heads');
  });
  afterAll(async () => {
    await server?.close();
  });

  const requests: Array<[string, ClaimRequest, number]> = [
    ['a large topic, one message', { topic: 'orders', limit: 1, now, visibleUntil: now + 30_000 }, 1],
    ['a large topic, a batch', { topic: 'orders', limit: 100, now, visibleUntil: now + 30_000 }, 100],
    ['a small topic, the maximum count', { topic: 'audit.log', limit: 1000, now, visibleUntil: now + 30_000 }, 1000],
    ['an empty topic', { topic: 'nothing-here', limit: 10, now, visibleUntil: now + 30_000 }, 10],
    ['an ordered topic: its waiting messages lie past the range', { topic: 'ordered', limit: 100, now, visibleUntil: now + 30_000 }, 100],
    ['a dead-letter topic, one consumer group', { topic: 'orders.dlq', limit: 10, now, visibleUntil: now + 30_000, consumerGroup: 'billing' }, 10],
  ];

  it.each(requests)('%s: walks messages_queue in order, no filesort, no full scan', async (_what, req, limit) => {
    const native = claimSelectMysql(server.db, req, limit).toSQL().toNative();
    expect(native.sql).toMatch(/for update skip locked/i);
    expect(native.sql).toMatch(/order by `visible_at` asc, `id` asc/i);

    const [classic] = (await server.db.raw(`EXPLAIN ${native.sql}`, native.bindings as any[])) as [Array<Record<string, unknown>>];
    expect(classic.length).toBeGreaterThan(0);
    for (const row of classic) {
      expect(String(row.Extra ?? '')).not.toMatch(/filesort/i);
      expect(String(row.Extra ?? '')).not.toMatch(/temporary/i);
      expect(row.type).not.toBe('ALL');
      expect(row.key).toBe('messages_queue');
    }

    const [json] = (await server.db.raw(`EXPLAIN FORMAT=JSON ${native.sql}`, native.bindings as any[])) as [Array<{ EXPLAIN: string }>];
    const text = json[0].EXPLAIN;
    expect(text).not.toMatch(/filesort/i);
    const tables = tablesOf(JSON.parse(text));
    expect(tables.length).toBeGreaterThan(0);
    for (const t of tables) {
      expect(t.access_type).not.toBe('ALL');
      expect(t.key).toBe('messages_queue');
    }
  });

  it("the probe for overdue messages before each claim walks messages_queue and looks a message's deliveries up by key", async () => {
    const native = overdueMessages(server.db, 'orders', now + 60_000).first('id').toSQL().toNative();
    const [json] = (await server.db.raw(`EXPLAIN FORMAT=JSON ${native.sql}`, native.bindings as any[])) as [Array<{ EXPLAIN: string }>];
    const tables = tablesOf(JSON.parse(json[0].EXPLAIN));
    expect(tables.find((t) => t.table_name === 'messages')).toMatchObject({ access_type: 'range', key: 'messages_queue' });
    // The NOT EXISTS that keeps fan-out messages out: one primary-key lookup per candidate row, never a scan.
    const deliveries = tables.find((t) => t.table_name === 'deliveries');
    expect(deliveries?.access_type).not.toBe('ALL');
    expect(deliveries?.key).toBe('PRIMARY');
    const overdue = await overdueMessages(server.db, 'orders', now + 60_000).count({ n: '*' });
    expect(Number(overdue[0].n)).toBe(600);
  });

  it("the next message of an ordering key's line is one seek into messages_ordering, not a walk of the topic", async () => {
    const native = nextInLineStatement({ topic: 'ordered', group: '', key: 'key-7' }, now, 'ordering_seq');
    const [json] = (await server.db.raw(`EXPLAIN FORMAT=JSON ${native.sql}`, native.bindings)) as [Array<{ EXPLAIN: string }>];
    const text = json[0].EXPLAIN;
    expect(text).not.toMatch(/filesort/i);
    expect(tablesOf(JSON.parse(text)).find((t) => t.table_name === 'messages')).toMatchObject({ key: 'messages_ordering' });
    // The claim takes only heads: one per key, whatever the backlog behind them.
    const claimed = (await claimSelectMysql(server.db, { topic: 'ordered', limit: 1000, now: Date.now(), visibleUntil: 0 }, 1000).clone().clearSelect().select('id', 'ordering_key')) as Array<{ ordering_key: string }>;
    expect(new Set(claimed.map((r) => r.ordering_key)).size).toBe(1000);
    expect(claimed).toHaveLength(1000);
  });

  it("the one-trip hand-over and join statements of ordering keys seek each line by its key, never a scan", async () => {
    const { lines } = await firstLines(server, 'ordered');
    // One line as well as many: a one-row `IN ((?, ?))` once made MariaDB's single-table UPDATE walk the primary key.
    const unjoined = lines.map((l) => ({ line: l.line, ids: [l.id] }));
    const ofTwoTopics = [...unjoined.slice(0, 5), ...unjoined.slice(0, 3).map((u) => ({ ...u, line: { ...u.line, topic: 'orders' } }))];
    const joins = [...joinUnjoinedStatements(unjoined, now), ...joinUnjoinedStatements(unjoined.slice(0, 1), now), ...joinUnjoinedStatements(ofTwoTopics, now)];
    // An ack flush may name lines of two topics: each topic's lines are their own range of the head rows.
    const twoTopics = [...lines.slice(0, 20), ...lines.slice(0, 5).map((l) => ({ ...l, line: { ...l.line, topic: 'orders' } }))];
    for (const statement of [...handOverOf(lines, now), ...handOverOf(twoTopics, now, { ifGone: true }), lineHeadsStatement(lines), ...joinTopicLinesStatements(lines), ...joins]) {
      const [json] = (await server.db.raw(`EXPLAIN FORMAT=JSON ${statement.sql}`, statement.bindings as any[])) as [Array<{ EXPLAIN: string }>];
      const text = json[0].EXPLAIN;
      for (const t of tablesOf(JSON.parse(text))) {
        // Heads by their whole primary key (range or eq_ref), messages by key: never a walk of every head.
        expect(['ALL', 'index'], `${t.table_name} in ${statement.sql}`).not.toContain(t.access_type);
        if (t.table_name === 'h') expect(Number(t.rows), statement.sql).toBeLessThanOrEqual(30);
        // Messages by id, or a line's first rows: never the topic's 2,000.
        if (t.table_name === 'm' || t.table_name === 'messages') expect(Number(t.rows), `${t.table_name} in ${statement.sql}`).toBeLessThanOrEqual(2 * lines.length);
      }
      // The join's INSERT sorts its batch's own rows into the lock order; nothing else sorts.
      if (!statement.sql.startsWith('INSERT')) expect(text, statement.sql).not.toMatch(/filesort/i);
    }
  });

  it("an ordered enqueue's INSERT reads each new row's head row by its whole primary key, never a scan", async () => {
    const { lines } = await firstLines(server, 'ordered');
    const rows = lines.map(({ line }) => newMessageRow({ id: uuidv7(), topic: line.topic, key: null, payload: Buffer.from('x'), metadata: '{}', maxRetries: 3, expiresAt: null, createdAt: now, orderingKey: line.key }));
    const sql = waitingInsertSql(rows.length, 1, true);
    const [json] = (await server.db.raw(`EXPLAIN FORMAT=JSON ${sql}`, [...rows.flatMap((r) => Object.values(r)), 'ordered'] as any[])) as [Array<{ EXPLAIN: string }>];
    const heads = tablesOf(JSON.parse(json[0].EXPLAIN)).find((t) => t.table_name === 'h');
    expect(heads).toMatchObject({ access_type: 'eq_ref', key: 'PRIMARY' });
  });

  it("an ordered enqueue that makes its head rows first reads each line's head row by primary key and probes the line in messages_ordering, never a scan", async () => {
    const { lines } = await firstLines(server, 'ordered');
    // Lines with heads and new ones, as a flush of a topic whose keys come and go names them.
    const named = [...lines.map((l) => l.line), ...Array.from({ length: 10 }, (_, i) => ({ topic: 'ordered', group: '', key: `new-${i}` }))];
    const rows = named.map((line) => newMessageRow({ id: uuidv7(), topic: line.topic, key: null, payload: Buffer.from('x'), metadata: '{}', maxRetries: 3, expiresAt: null, createdAt: now, orderingKey: line.key }));
    const open = openLinesStatement(named.map((line, i) => ({ line, ids: [String(rows[i].id)] })), ['ordered'], now);
    const [openPlan] = (await server.db.raw(`EXPLAIN FORMAT=JSON ${open.sql}`, open.bindings as any[])) as [Array<{ EXPLAIN: string }>];
    const tables = tablesOf(JSON.parse(openPlan[0].EXPLAIN));
    expect(tables.find((t) => t.table_name === 'h')).toMatchObject({ access_type: 'eq_ref', key: 'PRIMARY' });
    const probe = tables.find((t) => t.table_name === 'n');
    expect(probe).toMatchObject({ key: 'messages_ordering' });
    expect(['ref', 'range']).toContain(probe!.access_type);
    // The flush's own lines (a derived table of its values) are read whole; every table is looked into, never walked.
    for (const t of tables.filter((t) => !t.table_name?.startsWith('<derived'))) expect(['ALL', 'index'], `${t.table_name} in ${open.sql}`).not.toContain(t.access_type);
    const [insertPlan] = (await server.db.raw(`EXPLAIN FORMAT=JSON ${openingInsertSql(rows.length, 1, true)}`, [...rows.flatMap((r) => Object.values(r)), 'ordered'] as any[])) as [Array<{ EXPLAIN: string }>];
    expect(tablesOf(JSON.parse(insertPlan[0].EXPLAIN)).find((t) => t.table_name === 'h')).toMatchObject({ access_type: 'eq_ref', key: 'PRIMARY' });
  });

  it("the sweep for lines an interrupted enqueue left unjoined reads one index entry per topic, then the topic's unjoined range", async () => {
    const [topics] = (await server.db.raw(`EXPLAIN FORMAT=JSON ${UNJOINED_TOPICS.sql}`, UNJOINED_TOPICS.bindings as any[])) as [Array<{ EXPLAIN: string }>];
    const [scan] = tablesOf(JSON.parse(topics[0].EXPLAIN));
    expect(scan).toMatchObject({ key: 'messages_queue', access_type: 'range', using_index_for_group_by: true });
    const lines = unjoinedLinesStatement('ordered', now);
    const [json] = (await server.db.raw(`EXPLAIN FORMAT=JSON ${lines.sql}`, lines.bindings as any[])) as [Array<{ EXPLAIN: string }>];
    const [range] = tablesOf(JSON.parse(json[0].EXPLAIN));
    expect(range).toMatchObject({ key: 'messages_queue' });
    expect(['ref', 'range']).toContain(range.access_type);
    expect(range.used_key_parts).toEqual(['topic', 'status', 'visible_at']);
  });

  it("the ack's DELETE finds its rows by primary key and looks each one's deliveries up by key, never a scan", async () => {
    const ids = (await server.db('messages').where({ topic: 'orders' }).orderBy('id').limit(50).pluck('id')).map(String);
    const sql = `DELETE FROM messages WHERE id IN (${ids.map(() => '?').join(', ')}) AND status = 'processing' AND ${WITHOUT_DELIVERIES}`;
    const [json] = (await server.db.raw(`EXPLAIN FORMAT=JSON ${sql}`, ids)) as [Array<{ EXPLAIN: string }>];
    const tables = tablesOf(JSON.parse(json[0].EXPLAIN));
    expect(tables.find((t) => t.table_name === 'messages')).toMatchObject({ key: 'PRIMARY' });
    const deliveries = tables.find((t) => t.table_name === 'deliveries');
    expect(deliveries?.access_type).not.toBe('ALL');
    expect(deliveries?.key).toBe('PRIMARY');
  });

  it('the explained query is the one dequeue runs: it claims the oldest pending messages of the topic', async () => {
    const expected = (await server.db('messages').where({ topic: 'payments', status: 'pending' }).orderBy('id').limit(5).select('id')).map((r) => r.id);
    const claimed = (await server.api.dequeue('payments', { count: 5 })).body.messages.map((m: any) => m.id);
    expect(claimed).toEqual(expected);
  });
});

/**
 * The end of a drain: few lines left, each on its last message, the tables small or believed small. With such
 * statistics MariaDB read every head row (a full scan), turned the hand-over's "is the head gone" check into
 * a scan of the messages' primary key, and began the hand-over's UPDATE with a full scan of the messages,
 * seeking each line's next message once per message and head row: 20-100 ms per statement in the bench's last
 * hand-overs. The statements name their indexes and their join order, and keep the check a lookup.
 */
(mysqlUrl ? describe : describe.skip)('hand-over query plan at the end of a drain [mysql]', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(engineByName.mysql);
    // Statistics of empty tables, kept while rows arrive (MariaDB's engine-independent ones, which only the next
    // ANALYZE renews): sizes as wrong as a drain's last hand-overs met, one message estimated in a table of 700.
    const [[{ version }]] = (await server.db.raw('SELECT VERSION() AS version')) as [[{ version: string }]];
    await server.db.raw(`ANALYZE TABLE messages, ordering_heads${/mariadb/i.test(version) ? ' PERSISTENT FOR ALL' : ''}`);
    const messages = Array.from({ length: 100 }, (_, n) => ({ topic: 'ending', payload: `e${n}`, ordering_key: `key-${n}` }));
    expect((await server.api.post('/api/messages/batch', { messages })).status).toBe(201);
    expect((await server.api.dequeue('ending', { count: 100 })).body.messages).toHaveLength(100);
  });

  afterAll(async () => {
    await server?.close();
  });

  it('reads the head rows by primary key and looks each head message up by id, never a scan', async () => {
    const { lines } = await firstLines(server, 'ending');
    for (const statement of [...handOverOf(lines, Date.now(), { ifGone: true }), lineHeadsStatement(lines), ...joinTopicLinesStatements(lines)]) {
      const [json] = (await server.db.raw(`EXPLAIN FORMAT=JSON ${statement.sql}`, statement.bindings as any[])) as [Array<{ EXPLAIN: string }>];
      const tables = tablesOf(JSON.parse(json[0].EXPLAIN));
      for (const t of tables) expect(['ALL', 'index'], `${t.table_name} in ${statement.sql}`).not.toContain(t.access_type);
      // The hand-over reads the head rows first and each one's next message from there, whatever the
      // statistics say of the tables' sizes (estimated at one message, MariaDB began with the messages).
      // (With the left join that finds heads whose message is gone in between, by id.)
      if (statement.sql.startsWith('UPDATE ordering_heads')) expect(tables.map((t) => t.table_name).filter((name) => name !== 'x').slice(0, 2)).toEqual(['h', 'm']);
      for (const t of tables.filter((t) => t.table_name === 'x')) expect(t).toMatchObject({ access_type: 'eq_ref', key: 'PRIMARY' });
    }
  });
});

/**
 * SQLite's own statement for ordering keys' hand-over (src/store/ordering/lines.ts): its UPDATE finds the head
 * rows by their primary key and seeks each line's next message through messages_ordering. A SCAN of either
 * table would read every line, or every message, per batch.
 */
describe('ordering statements query plan [sqlite]', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(engineByName.sqlite);
    for (let i = 0; i < 3; i++) {
      const messages = Array.from({ length: 500 }, (_, n) => ({ topic: 'ordered', payload: `o${i * 500 + n}`, ordering_key: `key-${n}` }));
      expect((await server.api.post('/api/messages/batch', { messages })).status).toBe(201);
    }
  });

  afterAll(async () => {
    await server?.close();
  });

  it('hand the line over by one seek per line and read heads by key, never a scan', async () => {
    const { heads, lines } = await firstLines(server, 'ordered');
    const handOver = topicHandOverStatement('ordered', lines, Date.now(), 'rowid');
    const plan = ((await server.db.raw(`EXPLAIN QUERY PLAN ${handOver.sql}`, handOver.bindings as any[])) as Array<{ detail: string }>).map((r) => r.detail);
    expect(plan.filter((d) => /^SCAN /.test(d)), `${plan.join(' | ')} for ${handOver.sql}`).toEqual([]);
    expect(plan.some((d) => /ordering_heads.*USING (INDEX sqlite_autoindex_ordering_heads|PRIMARY KEY)/.test(d)), plan.join(' | ')).toBe(true);
    expect(plan.some((d) => /SEARCH n USING INDEX messages_ordering/.test(d)), plan.join(' | ')).toBe(true);
    // A line is in row order: the index gives it, nothing is sorted (the index is (topic, ordering_key)).
    expect(plan.filter((d) => /TEMP B-TREE/.test(d)), plan.join(' | ')).toEqual([]);
    for (const group of ['', 'g']) {
      const seek = nextInLineStatement({ topic: 'ordered', group, key: 'key-7' }, Date.now(), 'rowid');
      const seekPlan = ((await server.db.raw(`EXPLAIN QUERY PLAN ${seek.sql}`, seek.bindings as any[])) as Array<{ detail: string }>).map((r) => r.detail);
      expect(seekPlan.some((d) => /USING INDEX messages_ordering/.test(d)) && !seekPlan.some((d) => /TEMP B-TREE|^SCAN/.test(d)), seekPlan.join(' | ')).toBe(true);
    }
    // And it does what it says: each head that left (deleted, as by an ack) hands over to its key's second message.
    await server.db('messages').whereIn('id', heads.map((h) => h.message_id)).delete();
    const rows = (await server.db.raw(handOver.sql, handOver.bindings as any[])) as Array<{ ordering_key: string; message_id: string }>;
    expect(rows).toHaveLength(30);
    for (const r of rows) expect(r.message_id).not.toBe(heads.find((h) => h.ordering_key === r.ordering_key)!.message_id);
    expect(rows.every((r) => r.message_id !== '')).toBe(true);
  });

  it('keeps plain messages out of messages_ordering: an enqueue without an ordering key writes no entry there', async () => {
    // Leaf cells of the index, as SQLite's page statistics count them.
    const entries = async () => Number(((await server.db.raw("SELECT COALESCE(SUM(ncell), 0) AS n FROM dbstat WHERE name = 'messages_ordering' AND pagetype = 'leaf'")) as Array<{ n: number }>)[0].n);
    const before = await entries();
    const plain = Array.from({ length: 300 }, (_, n) => ({ topic: 'unordered', payload: `p${n}` }));
    expect((await server.api.post('/api/messages/batch', { messages: plain })).status).toBe(201);
    expect(await entries()).toBe(before);
    const ordered = Array.from({ length: 7 }, (_, n) => ({ topic: 'unordered', payload: `q${n}`, ordering_key: 'k' }));
    expect((await server.api.post('/api/messages/batch', { messages: ordered })).status).toBe(201);
    expect(await entries()).toBe(before + 7);
  });
});
