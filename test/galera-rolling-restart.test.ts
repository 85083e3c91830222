import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeGalera, startGaleraCluster, type GaleraCluster, type GaleraDatabase } from './helpers/galera.js';
import { drain, Ledger, longestGap } from './helpers/galera-load.js';
import { startChildServer, type ChildServer } from './helpers/server.js';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.js';

// A rolling restart of the whole cluster (an upgrade, a config change): each node in turn is taken out of the
// endpoint (the operator's switchover), stopped with SIGTERM and started again; it rejoins by IST before the
// next one goes. Two Conveyor processes keep producing and consuming through the endpoint the whole time.

const VISIBILITY_SECONDS = 8;
const RECOVERY_BOUND_MS = 15_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeGalera('rolling restart of all three nodes under load [galera]', () => {
  let cluster: GaleraCluster;
  let database: GaleraDatabase;
  let endpoint: TcpProxy;
  let a: ChildServer;
  let b: ChildServer;

  beforeAll(async () => {
    cluster = await startGaleraCluster();
    database = await cluster.createDatabase();
    endpoint = await startTcpProxy('127.0.0.1', cluster.nodes[0].port);
    const env = { CONVEYOR_DB_URL: `mysql://root@127.0.0.1:${endpoint.port}/${database.name}` };
    [a, b] = await Promise.all([startChildServer(env), startChildServer(env)]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await endpoint?.cut();
    await cluster?.stopAll();
  });

  it('every node restarted in turn: nothing confirmed is lost, no 500, no gap in service beyond seconds', async () => {
    const ledger = new Ledger('rolling', VISIBILITY_SECONDS);
    let producing = true;
    let consuming = true;
    const work = Promise.all([
      ledger.produceUntil(a.api, 'a', () => !producing),
      ledger.produceUntil(b.api, 'b', () => !producing),
      ledger.consumeUntil(a.api, a.api, () => !consuming),
      ledger.consumeUntil(b.api, b.api, () => !consuming),
      ledger.consumeUntil(a.api, b.api, () => !consuming),
    ]);
    await sleep(2_000);
    const startedAt = Date.now();
    const steps: string[] = [];
    for (const node of [0, 1, 2]) {
      const stepAt = Date.now();
      endpoint.switchTo(cluster.nodes[(node + 1) % 3].port);
      await cluster.stop(node);
      await cluster.restart(node);
      steps.push(`node${node + 1} ${Date.now() - stepAt} ms`);
      await sleep(1_000);
    }
    producing = false;
    await sleep(500);
    consuming = false;
    await work;
    await drain(ledger, [[a.api, a.api], [b.api, b.api]], VISIBILITY_SECONDS * 1000 + 10_000);
    console.log(`[galera rolling restart] ${ledger.summary()}; restarts: ${steps.join(', ')}; longest gap between successes ${longestGap(ledger.successes, startedAt)} ms`);

    expect(longestGap(ledger.successes, startedAt)).toBeLessThan(RECOVERY_BOUND_MS);
    expect(ledger.verdict()).toEqual({ failures: [], duplicates: [], redeliveredAfterAck: [], acksRefused: [], lost: [] });
    expect(ledger.count(500)).toBe(0);
    const statuses = await Promise.all([0, 1, 2].map((i) => cluster.status(i)));
    expect(statuses.map((s) => [s.wsrep_cluster_size, s.wsrep_local_state_comment])).toEqual(Array(3).fill(['3', 'Synced']));
    for (const server of [a, b]) {
      expect(server.process.exitCode).toBeNull();
      expect((await server.api.get('/readyz')).status).toBe(200);
      expect(server.output()).not.toMatch(/"msg":"unhandled error"/);
    }
  }, 120_000);
});
