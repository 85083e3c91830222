import { expect } from 'vitest';
import { startGaleraCluster, type GaleraCluster, type GaleraDatabase } from './galera-cluster.js';
import { drain, type Ledger } from './galera-load.js';
import { startChildServer, type ChildServer } from './server.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A cluster and two Conveyor processes that reach it through one endpoint, a TCP proxy standing in for the
 * operator's primary Service: the failover and rolling-restart suites move it from node to node.
 */
export interface EndpointPair {
  cluster: GaleraCluster;
  database: GaleraDatabase;
  endpoint: TcpProxy;
  a: ChildServer;
  b: ChildServer;
  stop(): Promise<void>;
}

export async function startEndpointPair(): Promise<EndpointPair> {
  const cluster = await startGaleraCluster();
  const database = await cluster.createDatabase();
  const endpoint = await startTcpProxy('127.0.0.1', cluster.nodes[0].port);
  const env = { CONVEYOR_DB_URL: `mysql://root@127.0.0.1:${endpoint.port}/${database.name}` };
  const [a, b] = await Promise.all([startChildServer(env), startChildServer(env)]);
  return {
    cluster,
    database,
    endpoint,
    a,
    b,
    stop: async () => {
      await Promise.all([a.stop(), b.stop()]);
      await endpoint.cut();
      await cluster.stopAll();
    },
  };
}

/**
 * Producers on both instances, a consumer on each and one that dequeues through `a` and acks through `b`,
 * until `stop`: producing ends first, consuming half a second later, then consumers drain what is left
 * (until none has been acknowledged for the visibility timeout plus 10 s).
 */
export function loadThrough(ledger: Ledger, { a, b }: Pick<EndpointPair, 'a' | 'b'>, visibilitySeconds: number): { stop(): Promise<void> } {
  let producing = true;
  let consuming = true;
  const work = Promise.all([
    ledger.produceUntil(a.api, 'a', () => !producing),
    ledger.produceUntil(b.api, 'b', () => !producing),
    ledger.consumeUntil(a.api, a.api, () => !consuming),
    ledger.consumeUntil(b.api, b.api, () => !consuming),
    ledger.consumeUntil(a.api, b.api, () => !consuming),
  ]);
  return {
    stop: async () => {
      producing = false;
      await sleep(500);
      consuming = false;
      await work;
      await drain(ledger, [[a.api, a.api], [b.api, b.api]], visibilitySeconds * 1000 + 10_000);
    },
  };
}

/** Conveyor rode through it: the same processes, ready, no unhandled error. */
export async function expectStillServing(servers: ChildServer[]): Promise<void> {
  for (const server of servers) {
    expect(server.process.exitCode).toBeNull();
    expect((await server.api.get('/readyz')).status).toBe(200);
    expect(server.output()).not.toMatch(/"msg":"unhandled error"/);
  }
}
