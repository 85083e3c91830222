import mysql from 'mysql2/promise';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { engineByName } from './helpers/engines.js';
import { describeGalera, type GaleraCluster, type GaleraDatabase } from './helpers/galera.js';
import { expectStillServing, loadThrough, startEndpointPair, type EndpointPair } from './helpers/galera-endpoint.js';
import { Ledger, longestGap } from './helpers/galera-load.js';
import type { ApiResponse } from './helpers/http.js';
import { startTestServer } from './helpers/server.js';

// Failover: two Conveyor processes reach the cluster through one endpoint (a TCP proxy standing in for the
// operator's primary Service). Under load the node behind it is SIGKILLed and the endpoint moves to another
// node; later the dead node restarts and rejoins by IST. Conveyor is never restarted.

const VISIBILITY_SECONDS = 8;
/** The promise: requests succeed again within this long of the kill (Galera evicts a dead node after 5 s). */
const RECOVERY_BOUND_MS = 15_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeGalera('failover: the endpoint node is killed under load [galera]', () => {
  let pair: EndpointPair;
  let cluster: GaleraCluster;
  let database: GaleraDatabase;

  beforeAll(async () => {
    pair = await startEndpointPair();
    ({ cluster, database } = pair);
  }, 120_000);

  afterAll(async () => {
    await pair?.stop();
  });

  it('SIGKILL of the node, endpoint switched: nothing confirmed is lost, no 500, requests succeed again within seconds', async () => {
    const { endpoint, a, b } = pair;
    const ledger = new Ledger('failover', VISIBILITY_SECONDS);
    const load = loadThrough(ledger, pair, VISIBILITY_SECONDS);
    await sleep(3_000);

    const killedAt = Date.now();
    await cluster.kill(0);
    endpoint.switchTo(cluster.nodes[1].port);
    // The first request sent after the kill that succeeds.
    let recoveredAt = 0;
    while (!recoveredAt && Date.now() - killedAt < 30_000) {
      const res = await a.api.enqueue('failover-probe', 'probe');
      if (res.status === 201) recoveredAt = Date.now();
      else await sleep(50);
    }
    await sleep(2_000);

    const restartedAt = Date.now();
    await cluster.restart(0);
    const rejoinMs = Date.now() - restartedAt;
    await sleep(1_000);
    await load.stop();
    console.log(
      `[galera failover] ${ledger.summary()}; first success ${recoveredAt - killedAt} ms after the kill, ` +
        `longest gap between successes ${longestGap(ledger.successes, killedAt)} ms, node rejoined in ${rejoinMs} ms`,
    );

    expect(recoveredAt, 'no request succeeded within 30 s of the kill').toBeGreaterThan(0);
    expect(recoveredAt - killedAt).toBeLessThan(RECOVERY_BOUND_MS);
    expect(longestGap(ledger.successes, killedAt)).toBeLessThan(RECOVERY_BOUND_MS);
    expect(ledger.verdict()).toEqual({ failures: [], duplicates: [], redeliveredAfterAck: [], acksRefused: [], lost: [] });
    expect(ledger.count(500)).toBe(0);
    // The restarted node caught up by incremental state transfer, and all three agree.
    expect(cluster.logTail(0, 400)).toMatch(/IST received/);
    const statuses = await Promise.all([0, 1, 2].map((i) => cluster.status(i)));
    expect(statuses.map((s) => s.wsrep_cluster_size)).toEqual(['3', '3', '3']);
    await expectStillServing([a, b]);
  }, 120_000);

  it('a node cut off from the cluster (wsrep_ready OFF): /readyz and requests answer 503 on the instance using it, until it rejoins', async () => {
    const cutOff = 2;
    const direct = await startTestServer(engineByName.mysql, { database: { url: database.urlOn(cutOff), drop: async () => {} } });
    const admin = await mysql.createConnection(cluster.nodes[cutOff].url);
    const until = async (what: string, check: () => Promise<boolean>, limitMs: number) => {
      const deadline = Date.now() + limitMs;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`${what}: not within ${limitMs} ms`);
        await sleep(200);
      }
    };
    try {
      expect((await direct.api.get('/readyz')).status).toBe(200);
      // A network partition: the node leaves the primary component (after evs.suspect_timeout, 5 s).
      await admin.query("SET GLOBAL wsrep_provider_options = 'gmcast.isolate=1'");
      await until('node non-primary', async () => (await cluster.status(cutOff)).wsrep_ready === 'OFF', 20_000);
      const ready = await direct.api.get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.error).toMatch(/wsrep_ready/);
      const refused: ApiResponse[] = [await direct.api.enqueue('cut-off', 'x'), await direct.api.dequeue('cut-off')];
      for (const res of refused) {
        // The node refuses with 1047; the store's retries run out: "retry", with Retry-After.
        expect({ status: res.status, error: res.body?.error }).toEqual({ status: 503, error: 'database busy, retry' });
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      }
      await admin.query("SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0'");
      await until('ready again', async () => (await direct.api.get('/readyz')).status === 200, 30_000);
      expect((await direct.api.enqueue('cut-off', 'back')).status).toBe(201);
    } finally {
      await admin.end();
      await direct.close();
    }
  }, 60_000);
});
