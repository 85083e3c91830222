import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeGalera } from './helpers/galera.js';
import { expectStillServing, loadThrough, startEndpointPair, type EndpointPair } from './helpers/galera-endpoint.js';
import { Ledger, longestGap } from './helpers/galera-load.js';

// A rolling restart of the whole cluster (an upgrade, a config change): each node in turn is taken out of the
// endpoint (the operator's switchover), stopped with SIGTERM and started again; it rejoins by IST before the
// next one goes. Two Conveyor processes keep producing and consuming through the endpoint the whole time.

const VISIBILITY_SECONDS = 8;
const RECOVERY_BOUND_MS = 15_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeGalera('rolling restart of all three nodes under load [galera]', () => {
  let pair: EndpointPair;

  beforeAll(async () => {
    pair = await startEndpointPair();
  }, 120_000);

  afterAll(async () => {
    await pair?.stop();
  });

  it('every node restarted in turn: nothing confirmed is lost, no 500, no gap in service beyond seconds', async () => {
    const { cluster, endpoint, a, b } = pair;
    const ledger = new Ledger('rolling', VISIBILITY_SECONDS);
    const load = loadThrough(ledger, pair, VISIBILITY_SECONDS);
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
    await load.stop();
    console.log(`[galera rolling restart] ${ledger.summary()}; restarts: ${steps.join(', ')}; longest gap between successes ${longestGap(ledger.successes, startedAt)} ms`);

    expect(longestGap(ledger.successes, startedAt)).toBeLessThan(RECOVERY_BOUND_MS);
    expect(ledger.verdict()).toEqual({ failures: [], duplicates: [], redeliveredAfterAck: [], acksRefused: [], lost: [] });
    expect(ledger.count(500)).toBe(0);
    const statuses = await Promise.all([0, 1, 2].map((i) => cluster.status(i)));
    expect(statuses.map((s) => [s.wsrep_cluster_size, s.wsrep_local_state_comment])).toEqual(Array(3).fill(['3', 'Synced']));
    await expectStillServing([a, b]);
  }, 180_000);
});
