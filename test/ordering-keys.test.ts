import type { Knex } from 'knex';
import { expect, inject, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { clockedSuite, sleep, StreamRecorder } from './helpers/grpc.js';
import { enqueueId, findMessage, putTopicConfig } from './helpers/messages.js';
import type { Api } from './helpers/http.js';
import type { TestDatabase } from './helpers/engines.js';
import { captureLogger } from './helpers/log-capture.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { parseMetrics, valueOf } from './helpers/metrics.js';
import { BEHIND_HEAD, UNJOINED } from '../src/store/ordering/lines.js';
import { newMessageRow } from '../src/store/messages/insert.js';
import { uuidv7 } from '../src/queue/message-ids.js';

const payloads = async (api: Api, topic: string, extra: Record<string, unknown> = {}) =>
  ((await api.dequeue(topic, { count: 100, visibility_timeout_seconds: 600, ...extra })).body.messages as any[]).map((m) => m.payload);

const enqueueAll = async (api: Api, topic: string, items: Array<[string, string | null]>) => {
  const ids: Record<string, string> = {};
  for (const [payload, orderingKey] of items) ids[payload] = await enqueueId(api, topic, payload, orderingKey === null ? {} : { ordering_key: orderingKey });
  return ids;
};

/**
 * `request` sent while the transaction `hold` has opened holds its locks: the request must still be waiting
 * 400 ms later; then the transaction commits, and the request's answer is returned.
 */
async function sentWhileHeld<T>(db: Knex, hold: (trx: Knex.Transaction) => Promise<void>, request: () => Promise<T>): Promise<T> {
  const trx = await db.transaction();
  let answered = false;
  let sent: Promise<T>;
  try {
    await hold(trx);
    sent = request().then((res) => ((answered = true), res));
    await sleep(400);
    expect(answered).toBe(false);
    await trx.commit();
  } catch (err) {
    await trx.rollback();
    throw err;
  }
  return sent;
}

/**
 * Ordering keys: the messages of one key are delivered one at a time, in enqueue order; only the key's head
 * (its oldest live message) can be claimed, and only while no consumer holds it. Messages without a key
 * never wait for one.
 */
describeEachEngine('ordering keys', (engine) => {
  const suite = clockedSuite(engine);
  const api = () => suite.server.api;

  it('one message per key at a time, in enqueue order; messages without a key flow freely', async () => {
    const ids = await enqueueAll(api(), 'ok-basic', [
      ['a1', 'A'],
      ['b1', 'B'],
      ['a2', 'A'],
      ['free1', null],
      ['a3', 'A'],
      ['b2', 'B'],
      ['free2', null],
    ]);
    expect(await payloads(api(), 'ok-basic')).toEqual(['a1', 'b1', 'free1', 'free2']);
    expect(await payloads(api(), 'ok-basic')).toEqual([]);
    const lines = (await api().get('/api/stats')).body.ordering.filter((l: any) => l.topic === 'ok-basic');
    expect(lines).toEqual([{ topic: 'ok-basic', consumer_group: '', keys: 2, waiting_keys: 2 }]);
    const waiting = await findMessage(api(), 'ok-basic', ids.a2);
    expect(waiting).toMatchObject({ status: 'pending', ordering_key: 'A', available_at: null });
    expect((await api().post(`/api/messages/${ids.a1}/ack`)).status).toBe(204);
    expect(await payloads(api(), 'ok-basic')).toEqual(['a2']);
    // A nack with retries left keeps the head: the key waits for its retry.
    expect((await api().post(`/api/messages/${ids.b1}/nack`, { error: 'busy' })).status).toBe(204);
    expect(await payloads(api(), 'ok-basic')).toEqual(['b1']);
    expect((await api().post(`/api/messages/${ids.b1}/ack`)).status).toBe(204);
    expect((await api().post(`/api/messages/${ids.a2}/ack`)).status).toBe(204);
    expect(await payloads(api(), 'ok-basic')).toEqual(['a3', 'b2']);
  });

  it.each([
    ['case', 'Acct-1', 'acct-1'],
    ['a trailing space', 'acct-1', 'acct-1 '],
    ['an accent', 'cafe', 'café'],
  ])('compares ordering keys exactly: keys differing in %s are two lines', async (what, first, second) => {
    const topic = `ok-exact-${what.replace(/ /g, '-')}`;
    await enqueueAll(api(), topic, [
      ['x1', first],
      ['y1', second],
      ['x2', first],
      ['y2', second],
    ]);
    expect(await payloads(api(), topic)).toEqual(['x1', 'y1']);
    const listed = (await api().get(`/api/messages?topic=${topic}&status=processing`)).body.items.map((m: any) => [m.payload, m.ordering_key]);
    expect(listed.sort()).toEqual([
      ['x1', first],
      ['y1', second],
    ]);
  });

  it('an ack batch hands on the keys with a next message and closes the others; the last ack of a key closes its line', async () => {
    const keysOf = async () => (await api().get('/api/stats')).body.ordering.filter((l: any) => l.topic === 'ok-close').map((l: any) => l.keys);
    const ids = await enqueueAll(api(), 'ok-close', [
      ['a1', 'A'],
      ['b1', 'B'],
      ['a2', 'A'],
    ]);
    expect(await payloads(api(), 'ok-close')).toEqual(['a1', 'b1']);
    expect(await keysOf()).toEqual([2]);
    // One batch: A goes on to a2, B has nothing left and closes.
    expect((await api().post('/api/messages/ack', { ids: [ids.a1, ids.b1] })).body).toEqual({ acked: [ids.a1, ids.b1], not_found: [] });
    expect(await keysOf()).toEqual([1]);
    expect(await payloads(api(), 'ok-close')).toEqual(['a2']);
    expect((await api().post(`/api/messages/${ids.a2}/ack`)).status).toBe(204);
    expect(await keysOf()).toEqual([]);
    // A closed line opens again with the next message of its key.
    await enqueueAll(api(), 'ok-close', [['b2', 'B']]);
    expect(await payloads(api(), 'ok-close')).toEqual(['b2']);
  });

  it('the dequeue view and the list carry the ordering key, independent of the dedup key', async () => {
    const id = await enqueueId(api(), 'ok-view', 'x', { ordering_key: 'order-7', key: 'dedup-1' });
    expect(await findMessage(api(), 'ok-view', id)).toMatchObject({ ordering_key: 'order-7', key: 'dedup-1' });
    const [message] = (await api().dequeue('ok-view', {})).body.messages;
    expect(message).toMatchObject({ id, ordering_key: 'order-7', key: 'dedup-1' });
    const plain = await enqueueId(api(), 'ok-view', 'y');
    expect(await findMessage(api(), 'ok-view', plain)).toMatchObject({ ordering_key: null });
  });

  it('a dead-lettered head hands the key on; its requeue goes to the back of the line', async () => {
    await putTopicConfig(api(), 'ok-dlq', { max_retries: 1 });
    const ids = await enqueueAll(api(), 'ok-dlq', [
      ['d1', 'K'],
      ['d2', 'K'],
      ['d3', 'K'],
    ]);
    expect(await payloads(api(), 'ok-dlq')).toEqual(['d1']);
    expect((await api().post(`/api/messages/${ids.d1}/nack`, { error: 'bad' })).status).toBe(204);
    expect(await findMessage(api(), 'ok-dlq.dlq', ids.d1)).toMatchObject({ ordering_key: 'K', original_topic: 'ok-dlq' });
    expect(await payloads(api(), 'ok-dlq')).toEqual(['d2']);
    expect((await api().post(`/api/messages/${ids.d1}/requeue`)).status).toBe(204);
    expect(await findMessage(api(), 'ok-dlq', ids.d1)).toMatchObject({ status: 'pending', available_at: null });
    expect((await api().post(`/api/messages/${ids.d2}/ack`)).status).toBe(204);
    expect(await payloads(api(), 'ok-dlq')).toEqual(['d3']);
    expect((await api().post(`/api/messages/${ids.d3}/ack`)).status).toBe(204);
    expect(await payloads(api(), 'ok-dlq')).toEqual(['d1']);
  });

  it('a head whose visibility timeout runs out is retried first; the key never has two messages out', async () => {
    const ids = await enqueueAll(api(), 'ok-vis', [
      ['v1', 'K'],
      ['v2', 'K'],
    ]);
    expect(await payloads(api(), 'ok-vis', { visibility_timeout_seconds: 5 })).toEqual(['v1']);
    suite.clock.advance(5_000);
    const again = (await api().dequeue('ok-vis', { count: 10 })).body.messages;
    expect(again.map((m: any) => [m.payload, m.retry_count])).toEqual([['v1', 1]]);
    expect((await api().post(`/api/messages/${ids.v1}/ack`)).status).toBe(204);
    expect(await payloads(api(), 'ok-vis')).toEqual(['v2']);
  });

  it('a delayed head holds its key until its time; a backed-off retry too', async () => {
    await putTopicConfig(api(), 'ok-delay', { retry_backoff_seconds: 10 });
    const first = await enqueueId(api(), 'ok-delay', 'late', { ordering_key: 'K', delay_seconds: 20 });
    await enqueueId(api(), 'ok-delay', 'next', { ordering_key: 'K' });
    expect(await payloads(api(), 'ok-delay')).toEqual([]);
    suite.clock.advance(20_000);
    expect(await payloads(api(), 'ok-delay')).toEqual(['late']);
    expect((await api().post(`/api/messages/${first}/nack`)).status).toBe(204);
    expect(await payloads(api(), 'ok-delay')).toEqual([]);
    suite.clock.advance(11_000);
    expect(await payloads(api(), 'ok-delay')).toEqual(['late']);
  });

  it('a message later in line keeps its own delay once it is the head', async () => {
    const first = await enqueueId(api(), 'ok-delay2', 'first', { ordering_key: 'K' });
    await enqueueId(api(), 'ok-delay2', 'second', { ordering_key: 'K', delay_seconds: 30 });
    expect(await payloads(api(), 'ok-delay2')).toEqual(['first']);
    expect((await api().post(`/api/messages/${first}/ack`)).status).toBe(204);
    expect(await payloads(api(), 'ok-delay2')).toEqual([]);
    suite.clock.advance(30_000);
    expect(await payloads(api(), 'ok-delay2')).toEqual(['second']);
  });

  it('a dedup-key upsert of a waiting message keeps its place in the line', async () => {
    const head = await enqueueId(api(), 'ok-upsert', 'h', { ordering_key: 'K' });
    const waiting = await enqueueId(api(), 'ok-upsert', 'w1', { ordering_key: 'K', key: 'dk' });
    await enqueueId(api(), 'ok-upsert', 'last', { ordering_key: 'K' });
    expect(await enqueueId(api(), 'ok-upsert', 'w2', { ordering_key: 'K', key: 'dk' })).toBe(waiting);
    expect(await payloads(api(), 'ok-upsert')).toEqual(['h']);
    expect((await api().post(`/api/messages/${head}/ack`)).status).toBe(204);
    expect(await payloads(api(), 'ok-upsert')).toEqual(['w2']);
  });

  it('consumer groups keep each key in order per group, independently', async () => {
    for (const group of ['g1', 'g2']) expect((await api().post('/api/topics/ok-fan/consumer-groups', { consumer_group: group })).status).toBe(201);
    const ids = await enqueueAll(api(), 'ok-fan', [
      ['f1', 'K'],
      ['f2', 'K'],
      ['f3', 'K'],
    ]);
    expect(await payloads(api(), 'ok-fan', { consumer_group: 'g1' })).toEqual(['f1']);
    expect(await payloads(api(), 'ok-fan', { consumer_group: 'g2' })).toEqual(['f1']);
    const lines = (await api().get('/api/stats')).body.ordering.filter((l: any) => l.topic === 'ok-fan');
    expect(lines).toEqual([
      { topic: 'ok-fan', consumer_group: 'g1', keys: 1, waiting_keys: 1 },
      { topic: 'ok-fan', consumer_group: 'g2', keys: 1, waiting_keys: 1 },
    ]);
    expect((await api().post(`/api/messages/${ids.f1}/ack`, { consumer_group: 'g1' })).status).toBe(204);
    expect(await payloads(api(), 'ok-fan', { consumer_group: 'g1' })).toEqual(['f2']);
    expect(await payloads(api(), 'ok-fan', { consumer_group: 'g2' })).toEqual([]);
    expect((await api().post(`/api/messages/${ids.f2}/ack`, { consumer_group: 'g1' })).status).toBe(204);
    expect(await payloads(api(), 'ok-fan', { consumer_group: 'g1' })).toEqual(['f3']);
    expect((await api().post(`/api/messages/${ids.f1}/ack`, { consumer_group: 'g2' })).status).toBe(204);
    expect(await payloads(api(), 'ok-fan', { consumer_group: 'g2' })).toEqual(['f2']);
  });

  it('a group registered on a backlog takes each key in order from its first message', async () => {
    const ids = await enqueueAll(api(), 'ok-adopt', [
      ['x1', 'K'],
      ['x2', 'K'],
      ['y1', 'J'],
    ]);
    expect((await api().post('/api/topics/ok-adopt/consumer-groups', { consumer_group: 'late' })).status).toBe(201);
    expect(await payloads(api(), 'ok-adopt', { consumer_group: 'late' })).toEqual(['x1', 'y1']);
    expect((await api().post(`/api/messages/${ids.x1}/ack`, { consumer_group: 'late' })).status).toBe(204);
    expect(await payloads(api(), 'ok-adopt', { consumer_group: 'late' })).toEqual(['x2']);
  });

  it('a purge or an expiry of the head hands the key on', async () => {
    const ids = await enqueueAll(api(), 'ok-purge', [
      ['p1', 'K'],
      ['p2', 'K'],
    ]);
    expect(await payloads(api(), 'ok-purge')).toEqual(['p1']);
    expect((await api().post('/api/topics/ok-purge/purge', { statuses: ['processing'] })).status).toBe(200);
    expect(await payloads(api(), 'ok-purge')).toEqual(['p2']);
    expect(ids.p1).toBeDefined();

    await putTopicConfig(api(), 'ok-ttl', { message_ttl_seconds: 10 });
    await enqueueId(api(), 'ok-ttl', 't1', { ordering_key: 'K' });
    suite.clock.advance(5_000);
    await enqueueId(api(), 'ok-ttl', 't2', { ordering_key: 'K' });
    suite.clock.advance(6_000);
    expect((await api().post('/api/admin/expiry-reaper/run')).status).toBe(200);
    expect(await payloads(api(), 'ok-ttl')).toEqual(['t2']);
  });

  it('a line left on a head that is gone (its instance died between ack and hand-over) moves on at the expiry reaper\'s sweep, in order', async () => {
    const ids = await enqueueAll(api(), 'ok-stale', [
      ['s1', 'K'],
      ['s2', 'K'],
    ]);
    expect(await payloads(api(), 'ok-stale')).toEqual(['s1']);
    // The ack's DELETE committed, its hand-over never ran.
    await suite.server.db('messages').where({ id: ids.s1 }).delete();
    expect(await payloads(api(), 'ok-stale')).toEqual([]);
    // An enqueue of the key joins the line behind s2 and does not look at the head.
    await enqueueId(api(), 'ok-stale', 's3', { ordering_key: 'K' });
    expect(await payloads(api(), 'ok-stale')).toEqual([]);
    expect((await api().post('/api/admin/expiry-reaper/run')).status).toBe(200);
    expect(await payloads(api(), 'ok-stale')).toEqual(['s2']);
  });

  /**
   * An ack through an instance that did not hand the message out deletes it, then hands its line on in a
   * transaction of its own. Where that second transaction fails (here: a head row held locked past the
   * instance's lock wait, every retry), the messages are acked all the same: the ack says so instead of an
   * error that its client would retry into "not found", a warning names the topic (never the key), and the
   * expiry reaper's sweep hands the line on. MariaDB only: on SQLite the lock would hold the DELETE too.
   */
  it.skipIf(engine.name !== 'mysql')('an ack whose hand-over fails after its commit answers acked, warns, and the sweep hands the line on', async () => {
    const ids = await enqueueAll(api(), 'ok-handon', [
      ['h1', 'Secret-K'],
      ['h2', 'Secret-K'],
    ]);
    expect(await payloads(api(), 'ok-handon')).toEqual(['h1']);
    const log = captureLogger('warn');
    const database = (suite.server as TestServer & { database: TestDatabase }).database;
    const other = await startTestServer(engine, { database, overrides: { db: { lock_wait_timeout: '1s' } }, logger: log.logger, now: suite.clock.now });
    const holder = await suite.server.db.transaction();
    try {
      await holder.raw('SELECT message_id FROM ordering_heads WHERE topic = ? FOR UPDATE', ['ok-handon']);
      expect((await other.api.post(`/api/messages/${ids.h1}/ack`, {})).status).toBe(204);
    } finally {
      await holder.rollback();
      await other.server.close();
    }
    const warning = log.lines.find((l) => l.msg?.includes('could not be handed on'));
    expect(warning).toMatchObject({ level: 'warn', topics: ['ok-handon'], err: { type: 'DatabaseBusy' } });
    expect(log.text()).not.toContain('Secret-K');
    expect(await findMessage(api(), 'ok-handon', ids.h1)).toBeUndefined();
    expect(await payloads(api(), 'ok-handon')).toEqual([]);
    expect((await api().post('/api/admin/expiry-reaper/run')).status).toBe(200);
    expect(await payloads(api(), 'ok-handon')).toEqual(['h2']);
  }, 60_000);

  /**
   * MariaDB stores an ordered flush in one statement: a message whose line has no head is stored UNJOINED and
   * its line joined right after the commit. An instance that dies in between leaves the line without a head:
   * nothing of the key is claimable, so order holds, until the next enqueue of the key or the expiry reaper's
   * sweep joins it, from its first message.
   */
  const unjoined = async (topic: string, ids: string[]) => {
    await suite.server.db('ordering_heads').where({ topic }).delete();
    await suite.server.db('messages').whereIn('id', ids).update({ visible_at: UNJOINED });
  };

  it.skipIf(engine.name !== 'mysql')('a line an interrupted enqueue left unjoined waits, in order, until the expiry reaper joins it', async () => {
    const ids = await enqueueAll(api(), 'ok-unjoined', [
      ['u1', 'K'],
      ['u2', 'K'],
      ['v1', 'V'],
    ]);
    await unjoined('ok-unjoined', [ids.u1, ids.u2, ids.v1]);
    expect(await payloads(api(), 'ok-unjoined')).toEqual([]);
    // An enqueue joins its own lines a moment after its commit: the sweep leaves messages younger than 10 s.
    expect((await api().post('/api/admin/expiry-reaper/run')).status).toBe(200);
    expect(await payloads(api(), 'ok-unjoined')).toEqual([]);
    suite.clock.advance(11_000);
    expect((await api().post('/api/admin/expiry-reaper/run')).status).toBe(200);
    const first = (await api().dequeue('ok-unjoined', { count: 10 })).body.messages as any[];
    expect(first.map((m) => m.payload).sort()).toEqual(['u1', 'v1']);
    expect((await api().post(`/api/messages/${first.find((m) => m.payload === 'u1').id}/ack`, {})).status).toBe(204);
    expect(await payloads(api(), 'ok-unjoined')).toEqual(['u2']);
  });

  it.skipIf(engine.name !== 'mysql')("the next enqueue of a key joins what an interrupted enqueue left, from the line's first message", async () => {
    const ids = await enqueueAll(api(), 'ok-rejoin', [
      ['r1', 'K'],
      ['r2', 'K'],
    ]);
    await unjoined('ok-rejoin', [ids.r1, ids.r2]);
    await enqueueId(api(), 'ok-rejoin', 'r3', { ordering_key: 'K' });
    for (const next of ['r1', 'r2', 'r3']) {
      const [m] = (await api().dequeue('ok-rejoin', { count: 10 })).body.messages as any[];
      expect(m.payload).toBe(next);
      expect((await api().post(`/api/messages/${m.id}/ack`, {})).status).toBe(204);
    }
    expect(await payloads(api(), 'ok-rejoin')).toEqual([]);
  });

  it.skipIf(engine.name !== 'mysql')('a hand-over that reaches a message still unjoined makes it the head and claimable', async () => {
    const ids = await enqueueAll(api(), 'ok-reach', [
      ['h1', 'K'],
      ['h2', 'K'],
    ]);
    await suite.server.db('messages').where({ id: ids.h2 }).update({ visible_at: UNJOINED });
    expect(await payloads(api(), 'ok-reach')).toEqual(['h1']);
    expect((await api().post(`/api/messages/${ids.h1}/ack`, {})).status).toBe(204);
    expect(await payloads(api(), 'ok-reach')).toEqual(['h2']);
  });

  it.skipIf(engine.name !== 'mysql')('a topic whose flushes open lines makes their head rows first; once its lines have heads a flush is one statement, and lines without a head are joined before it answers', async () => {
    const statements: string[] = [];
    const listener = (q: { sql: string }) => void statements.push(q.sql);
    suite.server.db.on('query', listener);
    const batch = async (messages: Array<[string, string]>) => {
      statements.length = 0;
      const res = await api().post('/api/messages/batch', { messages: messages.map(([payload, key]) => ({ topic: 'ok-flush', payload, ordering_key: key })) });
      expect(res.status).toBe(201);
      return statements.filter((sql) => /\b(messages|ordering_heads)\b/.test(sql));
    };
    try {
      // A new topic's keys are new: their head rows, then the messages, in one transaction, each line's first message open.
      const opening = await batch([
        ['a1', 'A'],
        ['b1', 'B'],
      ]);
      expect(opening).toHaveLength(2);
      expect(opening[0]).toMatch(/^INSERT INTO ordering_heads/);
      expect(opening[1]).toMatch(/^INSERT INTO messages/);
      // Flushes that open nothing turn the topic to the one statement within a few flushes.
      let flushes = 0;
      let headed: string[] = [];
      do {
        flushes++;
        headed = await batch([
          [`a${flushes + 1}`, 'A'],
          [`b${flushes + 1}`, 'B'],
        ]);
      } while (headed.length > 1 && flushes < 10);
      expect(flushes).toBeLessThanOrEqual(5);
      // Lines A and B have heads: the INSERT is all, and its answer says that no row was stored UNJOINED.
      expect(headed).toHaveLength(1);
      expect(headed[0]).toMatch(/^INSERT INTO messages/);
      // New lines C and D beside A: joined (a head row each) before the batch is answered; A keeps its head.
      // The join names A too, and passes it over: its message is not unjoined and its line has a head.
      const mixed = await batch([
        ['a9', 'A'],
        ['c1', 'C'],
        ['c2', 'C'],
        ['d1', 'D'],
      ]);
      expect(mixed[0]).toMatch(/^INSERT INTO messages/);
      expect(mixed.slice(1).some((sql) => sql.startsWith('INSERT INTO ordering_heads'))).toBe(true);
    } finally {
      suite.server.db.off('query', listener);
    }
    // Nothing is left UNJOINED, and each line has one claimable head, in order.
    expect(await suite.server.db('messages').where({ topic: 'ok-flush', visible_at: UNJOINED }).count({ n: '*' })).toEqual([{ n: 0 }]);
    expect((await payloads(api(), 'ok-flush')).sort()).toEqual(['a1', 'b1', 'c1', 'd1']);
    const heads = await suite.server.db('ordering_heads').where({ topic: 'ok-flush' }).orderBy('ordering_key').pluck('ordering_key');
    expect(heads).toEqual(['A', 'B', 'C', 'D']);
  });

  it.skipIf(engine.name !== 'mysql')('a flush that makes its head rows first leaves a line with messages waiting and no head row to the join, which opens its first message', async () => {
    // An interrupted enqueue left K's messages UNJOINED; L is new. The topic is new, so the flush makes head rows first.
    const ids = await enqueueAll(api(), 'ok-open-left', [
      ['k1', 'K'],
      ['k2', 'K'],
    ]);
    await unjoined('ok-open-left', [ids.k1, ids.k2]);
    const statements: string[] = [];
    const listener = (q: { sql: string }) => void statements.push(q.sql);
    suite.server.db.on('query', listener);
    try {
      const res = await api().post('/api/messages/batch', {
        messages: [
          { topic: 'ok-open-left', payload: 'k3', ordering_key: 'K' },
          { topic: 'ok-open-left', payload: 'l1', ordering_key: 'L' },
        ],
      });
      expect(res.status).toBe(201);
    } finally {
      suite.server.db.off('query', listener);
    }
    const stored = statements.filter((sql) => /\b(messages|ordering_heads)\b/.test(sql));
    expect(stored[0]).toMatch(/^INSERT INTO ordering_heads/);
    expect(stored[1]).toMatch(/^INSERT INTO messages/);
    // L was empty: its head row came first. K had messages waiting: the join after the commit made k1 its head.
    expect(await suite.server.db('ordering_heads').where({ topic: 'ok-open-left' }).orderBy('ordering_key').pluck('message_id')).toEqual([ids.k1, expect.any(String)]);
    for (const next of [['k1', 'l1'], ['k2'], ['k3']]) {
      const got = (await api().dequeue('ok-open-left', { count: 10 })).body.messages as any[];
      expect(got.map((m) => m.payload).sort()).toEqual(next);
      for (const m of got) expect((await api().post(`/api/messages/${m.id}/ack`, {})).status).toBe(204);
    }
  });

  it.skipIf(engine.name !== 'mysql')("an enqueue waits for a hand-over that holds its line's head row, and joins the line that hand-over closed", async () => {
    await enqueueId(api(), 'ok-wait', 'w1', { ordering_key: 'K' });
    const trx = await suite.server.db.transaction();
    let answered = false;
    let enqueue: Promise<unknown> | undefined;
    try {
      // A hand-over's lock of the head row, which then finds no next message and closes the line.
      await trx('ordering_heads').where({ topic: 'ok-wait', consumer_group: '', ordering_key: 'K' }).forUpdate().first();
      enqueue = enqueueId(api(), 'ok-wait', 'w2', { ordering_key: 'K' }).then(() => (answered = true));
      await sleep(400);
      expect(answered).toBe(false);
      await trx('messages').where({ topic: 'ok-wait' }).delete();
      await trx('ordering_heads').where({ topic: 'ok-wait' }).delete();
      await trx.commit();
    } catch (err) {
      await trx.rollback();
      throw err;
    }
    await enqueue;
    expect(await payloads(api(), 'ok-wait')).toEqual(['w2']);
  });

  it.skipIf(engine.name !== 'mysql')("an ack's hand-over that waits for an enqueue holding a line's head row hands the line to that enqueue's message", async () => {
    const ids = await enqueueAll(api(), 'ok-waited', [
      ['a1', 'A'],
      ['k1', 'K'],
      ['a2', 'A'],
    ]);
    expect((await payloads(api(), 'ok-waited')).sort()).toEqual(['a1', 'k1']);
    const res = await sentWhileHeld(
      suite.server.db,
      async (trx) => {
        // An enqueue of K mid-flight: it read the line's head row under a shared lock and stored its message
        // waiting behind that head, and has not committed yet.
        await trx('ordering_heads').where({ topic: 'ok-waited', consumer_group: '', ordering_key: 'K' }).forShare().first();
        const id = uuidv7(suite.clock.now() + 1);
        await trx('messages').insert({ ...newMessageRow({ id, topic: 'ok-waited', key: null, payload: Buffer.from('k2'), metadata: '{}', maxRetries: 3, expiresAt: null, createdAt: suite.clock.now(), orderingKey: 'K' }) });
      },
      // One ack batch for both heads: its hand-over reads line A first, then waits for K's row, in a statement
      // whose first read came before k2 was committed.
      () => api().post('/api/messages/ack', { ids: [ids.a1, ids.k1] }),
    );
    expect(res.status).toBe(200);
    expect([...res.body.acked].sort()).toEqual([ids.a1, ids.k1].sort());
    // K's line went to k2, not closed over it: both keys go on.
    expect((await payloads(api(), 'ok-waited')).sort()).toEqual(['a2', 'k2']);
  });

  it.skipIf(engine.name !== 'mysql')("a group's ack batch goes in four round trips after its grant check; its hand-over, waiting for an enqueue that holds a line's head row, hands the line to that enqueue's message", async () => {
    expect((await api().post('/api/topics/ok-gwait/consumer-groups', { consumer_group: 'g1' })).status).toBe(201);
    const ids = await enqueueAll(api(), 'ok-gwait', [
      ['a1', 'A'],
      ['b1', 'B'],
      ['k1', 'K'],
      ['a2', 'A'],
      ['b2', 'B'],
    ]);
    expect((await payloads(api(), 'ok-gwait', { consumer_group: 'g1' })).sort()).toEqual(['a1', 'b1', 'k1']);
    const statements: string[] = [];
    const listener = (q: { sql: string }) => void (/\b(messages|deliveries|ordering_heads)\b/.test(q.sql) && statements.push(q.sql));
    suite.server.db.on('query', listener);
    const res = await sentWhileHeld(
      suite.server.db,
      async (trx) => {
        // An enqueue of K mid-flight: it holds the group line's head row (its upsert locks it) and has stored its
        // message with the group's delivery waiting behind the head, and has not committed yet.
        await trx('ordering_heads').where({ topic: 'ok-gwait', consumer_group: 'g1', ordering_key: 'K' }).forUpdate().first();
        const id = uuidv7(suite.clock.now() + 1);
        await trx('messages').insert({ ...newMessageRow({ id, topic: 'ok-gwait', key: null, payload: Buffer.from('k2'), metadata: '{}', maxRetries: 3, expiresAt: null, createdAt: suite.clock.now(), orderingKey: 'K' }) });
        await trx('deliveries').insert({ message_id: id, topic: 'ok-gwait', consumer_group: 'g1', status: 'pending', retry_count: 0, last_error: '', visible_at: BEHIND_HEAD, expires_at: null });
      },
      // The ack locks the messages, reads their deliveries, then sends the acked mark, the head rows' locks and
      // the lines' seeks as one text: it waits there for K's row, and K's seek, a statement after the lock, must
      // see k2 once the enqueue commits (a seek that read before it would close K's line over k2).
      () => api().post('/api/messages/ack', { ids: [ids.a1, ids.b1, ids.k1], consumer_group: 'g1' }),
    ).finally(() => suite.server.db.off('query', listener));
    expect(res.status).toBe(200);
    expect([...res.body.acked].sort()).toEqual([ids.a1, ids.b1, ids.k1].sort());
    // The ack's statements: the messages' topics (for the caller's grants), then its transaction: the messages'
    // locks, their deliveries, and the hand-over's two texts, the second with the settle's writes. (The
    // enqueue's own ran on the test's transaction before them.) A Galera node gets every statement on its own
    // (an abort between two statements of one text would go unreported there).
    const ackStatements = statements.filter((sql) => !/^insert into `(messages|deliveries)`/.test(sql) && !/^select .* from `ordering_heads`.* for update$/.test(sql));
    if (inject('mysqlOnly') === true) {
      expect(ackStatements.filter((sql) => sql.includes(';\n'))).toEqual([]);
      expect(ackStatements.length).toBeGreaterThan(5);
      expect((await payloads(api(), 'ok-gwait', { consumer_group: 'g1' })).sort()).toEqual(['a2', 'b2', 'k2']);
      return;
    }
    expect(ackStatements).toHaveLength(5);
    expect(ackStatements[1]).toMatch(/^select .* from `messages` .* for update$/);
    expect(ackStatements[3]).toMatch(/^UPDATE deliveries SET status = 'acked'[^]*FOR UPDATE;\n[^]*UNION ALL/);
    // The seeks in parentheses, not as derived tables, which MariaDB materialises one temporary table each.
    expect(ackStatements[3]).toMatch(/;\n\(SELECT m\.topic[^]*LIMIT 1\) UNION ALL \(SELECT m\.topic/);
    expect(ackStatements[3]).not.toMatch(/SELECT \* FROM \(/);
    expect(ackStatements[4]).toMatch(/^INSERT INTO ordering_heads [^]*;\nUPDATE deliveries SET visible_at[^]*;\nDELETE FROM deliveries [^]*;\nDELETE FROM messages /);
    expect((await payloads(api(), 'ok-gwait', { consumer_group: 'g1' })).sort()).toEqual(['a2', 'b2', 'k2']);
  });

  it('concurrent enqueues of new keys and of keys with a backlog: each line gets one head, its first message, and no flush deadlocks', async () => {
    const deadlocks = async () => valueOf(parseMetrics((await api().get('/metrics')).text), 'conveyor_db_conflicts_total', { kind: 'deadlock' }) ?? 0;
    const before = await deadlocks();
    // 600 keys, each first enqueued by a request of its own; 64 requests in flight, so the service commits
    // them in concurrent flushes that create new lines beside each other, then add to lines that have a head.
    const keys = 600;
    for (let wave = 0; wave < 2; wave++) {
      const sent = Array.from({ length: keys }, (_, k) => k);
      const statuses = await Promise.all(
        Array.from({ length: 64 }, async (_, worker) => {
          const seen: number[] = [];
          for (let k = worker; k < keys; k += 64) seen.push((await api().enqueue('ok-concurrent', `w${wave}-k${sent[k]}`, { ordering_key: `key-${sent[k]}` })).status);
          return seen;
        }),
      );
      expect(new Set(statuses.flat())).toEqual(new Set([201]));
    }
    const claimed: string[] = [];
    for (let batch = await payloads(api(), 'ok-concurrent'); batch.length > 0; batch = await payloads(api(), 'ok-concurrent')) claimed.push(...batch);
    expect(claimed.sort()).toEqual(Array.from({ length: keys }, (_, k) => `w0-k${k}`).sort());
    expect(await deadlocks()).toBe(before);
  });

  it('over gRPC: Enqueue takes ordering_key, Dequeue and Subscribe carry it, one at a time per key', async () => {
    const first = await suite.client.call('Enqueue', { topic: 'ok-grpc', payload: Buffer.from('g1'), ordering_key: 'K' });
    await suite.client.call('EnqueueBatch', { requests: [{ topic: 'ok-grpc', payload: Buffer.from('g2'), ordering_key: 'K' }] });
    const got = await suite.client.call('BatchDequeue', { topic: 'ok-grpc', count: 10, visibility_timeout_seconds: 600 });
    expect(got.messages.map((m: any) => [m.payload.toString(), m.ordering_key])).toEqual([['g1', 'K']]);
    await suite.client.call('Ack', { id: first.id });

    const stream = new StreamRecorder(suite.client.subscribe({ topic: 'ok-grpc', max_in_flight: 10 }));
    try {
      await stream.until(() => stream.received.length === 1, 5_000, 'the next head');
      expect(stream.received[0]).toMatchObject({ ordering_key: 'K' });
      expect(stream.received[0].payload.toString()).toBe('g2');
      await suite.client.call('Enqueue', { topic: 'ok-grpc', payload: Buffer.from('g3'), ordering_key: 'K' });
      await sleep(1_500);
      expect(stream.received).toHaveLength(1);
      await suite.client.call('Ack', { id: stream.received[0].id });
      await stream.until(() => stream.received.length === 2, 5_000, 'the third message');
      expect(stream.received[1].payload.toString()).toBe('g3');
    } finally {
      stream.stream.cancel();
    }
  });

  it('the message log keeps the ordering key, and a replay re-enqueues with it, in the log order', async () => {
    await putTopicConfig(api(), 'ok-replay', { replayable: true });
    const ids = await enqueueAll(api(), 'ok-replay', [
      ['r1', 'K'],
      ['r2', 'K'],
    ]);
    for (const payload of ['r1', 'r2']) {
      expect(await payloads(api(), 'ok-replay')).toEqual([payload]);
      expect((await api().post(`/api/messages/${ids[payload]}/ack`)).status).toBe(204);
    }
    const log = (await api().get('/api/topics/ok-replay/message-log')).body.items;
    expect(log.map((e: any) => e.ordering_key)).toEqual(['K', 'K']);
    expect((await api().post('/api/topics/ok-replay/replay', {})).body.enqueued).toBe(2);
    expect(await payloads(api(), 'ok-replay')).toEqual(['r1']);
  });

  it('refuses an ordering key that is not 1-255 bytes of UTF-8 text', async () => {
    for (const bad of ['', 'é'.repeat(128), 7]) {
      const res = await api().enqueue('ok-bad', 'x', { ordering_key: bad });
      expectErrorBody(res, 400);
      expect(res.body.error).toMatch(/ordering_key must be/);
    }
    expect((await api().enqueue('ok-bad', 'x', { ordering_key: 'é'.repeat(127) })).status).toBe(201);
  });
});
