import mysql from 'mysql2/promise';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeGalera, startGaleraCluster, type GaleraCluster, type GaleraDatabase } from './helpers/galera.js';
import { drain, Ledger } from './helpers/galera-load.js';
import { startChildServer, type ChildServer } from './helpers/server.js';
import { createLogger } from '../src/log/logger.js';
import { recordGalera } from '../src/store/capabilities.js';
import { createDb } from '../src/store/db.js';
import { driverErrorOf } from '../src/store/errors.js';
import { runInOneTrip, runInTwoTrips, runStatements, type Statement } from '../src/store/statement.js';

// Multi-primary: two Conveyor processes on two different nodes of one Galera cluster, writing the same rows
// through both. Galera certifies conflicting commits and aborts one (1213); Conveyor retries, so clients see
// their requests succeed (or a 503 to retry), never a 500, a lost message or a double delivery.

const TOTAL = 20_000;
const VISIBILITY_SECONDS = 30;

describeGalera('multi-primary: two instances on two Galera nodes [galera]', () => {
  let cluster: GaleraCluster;
  let database: GaleraDatabase;
  let a: ChildServer;
  let b: ChildServer;

  beforeAll(async () => {
    cluster = await startGaleraCluster();
    database = await cluster.createDatabase();
    // No scheduled reaper runs: the reaper test below accounts for every run.
    const env = (node: number) => ({
      CONVEYOR_DB_URL: database.urlOn(node),
      CONVEYOR_QUEUE_EXPIRY_REAPER_INTERVAL: '0',
      CONVEYOR_QUEUE_ARCHIVE_REAPER_INTERVAL: '0',
    });
    // Started together on an empty database: both migrate at once, through different nodes.
    [a, b] = await Promise.all([startChildServer(env(0)), startChildServer(env(1))]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await cluster?.stopAll();
  });

  it(`${TOTAL} messages produced and consumed through both nodes: none lost, none delivered twice, no 500`, async () => {
    const ledger = new Ledger('multi', VISIBILITY_SECONDS);
    let produced = 0;
    const producing = () => produced < TOTAL;
    // Two producers per instance, batches of 100 and single enqueues 10 at a time, until TOTAL are confirmed.
    const producer = async (server: ChildServer, name: string, mode: 'batch' | 'single') => {
      while (producing()) {
        const size = mode === 'batch' ? 100 : 10;
        produced += size;
        await ledger.produce(server.api, ledger.nextPayloads(name, size), mode);
      }
    };
    const started = Date.now();
    const deadline = started + 150_000;
    const stop = () => Date.now() > deadline || (!producing() && ledger.allAcked());
    // Three consumers per instance, each acking and nacking through the instance it dequeued from (acks
    // through the other node: the next test).
    const work = Promise.all([
      producer(a, 'a-batch', 'batch'),
      producer(b, 'b-batch', 'batch'),
      producer(a, 'a-single', 'single'),
      producer(b, 'b-single', 'single'),
      ledger.consumeUntil(a.api, a.api, stop),
      ledger.consumeUntil(a.api, a.api, stop, 50),
      ledger.consumeUntil(a.api, a.api, stop, 100),
      ledger.consumeUntil(b.api, b.api, stop),
      ledger.consumeUntil(b.api, b.api, stop, 50),
      ledger.consumeUntil(b.api, b.api, stop, 100),
    ]);
    await work;
    const produceMs = Date.now() - started;
    await drain(ledger, [[a.api, a.api], [b.api, b.api]], 5_000);
    console.log(`[galera multi-primary] ${ledger.summary()}; all acked after ${produceMs} ms`);

    expect(ledger.confirmed.size).toBeGreaterThanOrEqual(TOTAL - 200);
    expect(ledger.verdict()).toEqual({ failures: [], duplicates: [], redeliveredAfterAck: [], acksRefused: [], lost: [] });
    expect(ledger.count(500)).toBe(0);
    for (const server of [a, b]) expect(server.output()).not.toMatch(/"msg":"unhandled error"/);
  }, 180_000);

  it("a transaction of several statements is all or nothing when another node's commit aborts it between two of them", async () => {
    // A node aborts a local transaction whose row another node's commit needs (a brute-force abort). Between two
    // statements sent in one text the abort went unreported: the rest of the text ran outside the transaction,
    // and COMMIT answered OK with only the later statements stored (how a claim handed a batch out twice).
    const db = createDb({ url: database.urlOn(0), poolSize: 2, logger: createLogger('silent') });
    const node0 = await mysql.createConnection(database.urlOn(0));
    const node1 = await mysql.createConnection(database.urlOn(1));
    recordGalera(db);
    try {
      await node1.query('CREATE TABLE abort_probe (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB');
      const write = (id: number): Statement => ({ sql: 'UPDATE abort_probe SET v = 1 WHERE id = ?', bindings: [id] });
      // The pause in which the other node's commit arrives; the test waits until the statement runs.
      const pause: Statement = { sql: 'DO SLEEP(2)', bindings: [] };
      const forms: Array<[string, () => Promise<unknown>]> = [
        ['runInOneTrip', () => runInOneTrip(db, [write(1), pause, write(2)])],
        ['runInTwoTrips', () => runInTwoTrips(db, [write(1), pause, write(2)], () => [write(3)])],
        ['runStatements in a transaction', () => db.transaction((trx) => runStatements(trx, [write(1), pause, write(2), write(3)]))],
      ];
      for (const [form, run] of forms) {
        await node1.query('DELETE FROM abort_probe');
        await node1.query('INSERT INTO abort_probe VALUES (1, 0), (2, 0), (3, 0)');
        // Node 0 has applied the rows before the transaction reads them.
        await node0.query('SET STATEMENT wsrep_sync_wait = 1 FOR SELECT COUNT(*) FROM abort_probe');
        const outcome = run().then(
          () => 'committed',
          (err) => `failed ${(driverErrorOf(err) as { errno?: number }).errno}`,
        );
        await expect
          .poll(async () => ((await node0.query("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE '%SLEEP(2)%' AND ID <> CONNECTION_ID()")) as any)[0][0].n, { timeout: 10_000, interval: 20 })
          .toBe(1);
        await node1.query('UPDATE abort_probe SET v = 2 WHERE id = 1');
        expect(await outcome, form).toBe('failed 1213');
        const [rows] = (await node0.query('SET STATEMENT wsrep_sync_wait = 1 FOR SELECT id, v FROM abort_probe ORDER BY id')) as any;
        expect(rows.map((r: { v: number }) => r.v), form).toEqual([2, 0, 0]);
      }
    } finally {
      await node1.query('DROP TABLE IF EXISTS abort_probe');
      await Promise.all([node0.end(), node1.end(), db.destroy()]);
    }
  }, 60_000);

  it('a message dequeued through one node is acked or nacked through the other at once (causal reads across nodes)', async () => {
    // A consumer behind a Service that balances over pods on different nodes: its ack may land on a node that
    // has not applied the claim yet (Galera applies other nodes' commits asynchronously). It must still find
    // the message, or the consumer's work is delivered again after the visibility timeout.
    const ledger = new Ledger('cross-node', VISIBILITY_SECONDS);
    let producing = true;
    // Writes through both nodes keep each node's appliers busy, as in production.
    const background = Promise.all([
      ledger.produceUntil(a.api, 'a', () => !producing, 10),
      ledger.produceUntil(b.api, 'b', () => !producing, 10),
    ]);
    try {
      for (let round = 0; round < 300; round++) {
        const [claimVia, settleVia] = round % 2 ? [a, b] : [b, a];
        await ledger.consumeOnce(claimVia.api, settleVia.api, 10, 0.2, settleVia.api);
      }
    } finally {
      producing = false;
      await background;
    }
    console.log(`[galera multi-primary, cross-node settlement] ${ledger.summary()}`);
    expect(ledger.deliveries.size).toBeGreaterThan(1000);
    expect(ledger.verdict().acksRefused).toEqual([]);
    expect(ledger.count(500)).toBe(0);
  }, 120_000);

  it("a group's delivery claimed through one node is nacked or acked through the other at once", async () => {
    const topic = 'cross-node-group';
    expect((await a.api.post(`/api/topics/${topic}/consumer-groups`, { consumer_group: 'g' })).status).toBe(201);
    // The registration must be in both instances' catalogs before their first dequeue with the group.
    await expect.poll(async () => (await b.api.get(`/api/topics/${topic}/consumer-groups`)).body.items?.length, { timeout: 10_000 }).toBe(1);
    const refused: string[] = [];
    let producing = true;
    // Other writes keep the second node's appliers busy, so the claim is often not applied there yet.
    const load = new Ledger('cross-node-group-load', VISIBILITY_SECONDS);
    const background = load.produceUntil(b.api, 'load', () => !producing, 5);
    try {
      for (let round = 0; round < 200; round++) {
        const [claimVia, settleVia] = round % 2 ? [a, b] : [b, a];
        expect((await claimVia.api.post('/api/messages', { topic, payload: `m${round}` })).status).toBe(201);
        const [message] = (await claimVia.api.dequeue(topic, { consumer_group: 'g', visibility_timeout_seconds: VISIBILITY_SECONDS })).body.messages;
        const settled =
          message.retry_count === 0
            ? await settleVia.api.post(`/api/messages/${message.id}/nack`, { consumer_group: 'g', error: 'again' })
            : await settleVia.api.post(`/api/messages/${message.id}/ack`, { consumer_group: 'g' });
        if (settled.status !== 204) {
          refused.push(`round ${round}: ${settled.status} ${settled.text}`);
          continue;
        }
        if (message.retry_count === 0) {
          // Claimed again where it was nacked (a dequeue elsewhere may not see the nack yet: dequeues do not wait
          // for their node to catch up), and acked through the other node.
          const [again] = (await settleVia.api.dequeue(topic, { consumer_group: 'g', visibility_timeout_seconds: VISIBILITY_SECONDS })).body.messages;
          expect(again?.id).toBe(message.id);
          const acked = await claimVia.api.post(`/api/messages/${again.id}/ack`, { consumer_group: 'g' });
          if (acked.status !== 204) refused.push(`round ${round} (ack): ${acked.status} ${acked.text}`);
        }
      }
    } finally {
      producing = false;
      await background;
    }
    expect(refused).toEqual([]);
  }, 120_000);

  it('reapers run from both instances at once never overlap: one run does the work, a fencing token per run', async () => {
    const topic = 'reap-me';
    expect((await a.api.put(`/api/topic-configs/${topic}`, { message_ttl_seconds: 1 })).status).toBe(200);
    const node3 = await mysql.createConnection(database.urlOn(2));
    // A third node applies the others' commits a moment after they answered: its reads wait for them (a
    // causal read), else the last run's token may not be there yet.
    await node3.query('SET SESSION wsrep_sync_wait = 1');
    const token = async (kind: string) => {
      const [rows] = await node3.query('SELECT token FROM leases WHERE name = ?', [`reaper:${kind}`]);
      return Number((rows as Array<{ token: number }>)[0]?.token ?? 0);
    };
    try {
      const ROUNDS = 3;
      const PER_ROUND = 2_500;
      const before = { expiry: await token('expiry'), delete: await token('delete') };
      let runs = { expiry: 0, delete: 0 };
      for (let round = 0; round < ROUNDS; round++) {
        for (let i = 0; i < PER_ROUND; i += 500) {
          const messages = Array.from({ length: 500 }, (_, j) => ({ topic, payload: `r${round}-${i + j}` }));
          // Through `a`, which applied the TTL when it answered the PUT (`b` learns it on its next refresh).
          expect((await a.api.post('/api/messages/batch', { messages })).status).toBe(201);
        }
        await new Promise((resolve) => setTimeout(resolve, 1_100));
        // Three runs of the expiry reaper from each instance at the same moment. If two ran at once (a lock
        // local to one node) both would find the expired rows and share them out; under one lease the first
        // run expires all of them and every later run finds nothing left.
        for (const [kind, field] of [['expiry', 'expired'], ['delete', 'deleted']] as const) {
          const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).api.post(`/api/admin/${kind}-reaper/run`)));
          expect(answers.map((r) => r.status)).toEqual(Array(6).fill(200));
          const counts = answers.map((r) => r.body[field]).sort((x, y) => y - x);
          expect(counts, `${kind} round ${round}`).toEqual([PER_ROUND, 0, 0, 0, 0, 0]);
          runs = { ...runs, [kind]: runs[kind] + answers.length };
        }
      }
      // Every run took the shared lease once: its fencing token rose by exactly the number of runs.
      expect({ expiry: (await token('expiry')) - before.expiry, delete: (await token('delete')) - before.delete }).toEqual(runs);
      for (const server of [a, b]) expect(server.output()).not.toMatch(/"msg":"unhandled error"/);
    } finally {
      await node3.end();
    }
  }, 60_000);
});
