import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startGaleraCluster, type GaleraCluster } from '../test/helpers/galera-cluster.js';
import { CpuMeter } from './cpu.js';
import { mysqlDatabase, type BenchDatabase } from './databases.js';
import { BenchClient, type HttpResponse } from './http-client.js';
import { LatencyRecorder, type LatencySummary } from './latency.js';
import { loadAverage, machineInfo } from './machine.js';
import { makePayload } from './phases.js';
import { startService, type ServiceProcess } from './server-process.js';

/**
 * Galera benchmark (docs/ha-database.md): how many messages per second two Conveyor processes produce and
 * consume on a three-node MariaDB Galera cluster started on loopback, in the two ways a cluster can be used:
 *
 * - single-writer: both processes on the first node (what a primary Service, ProxySQL or MaxScale gives);
 * - multi-primary: one process on the first node, one on the second, writing the same rows through both.
 *
 * For reference, the same on the machine's plain MariaDB (MYSQL_URL, default mysql://root@127.0.0.1:3306) when
 * it answers. Each run gets a fresh database and fresh processes; the phases are bounded by count and time.
 * The topologies take turns `--repeat` times (on a shared machine one run alone says little) and the summary
 * gives each one's median.
 *
 *   npm run build && node dist/bench/galera.js [--count 20000] [--duration 30] [--repeat 3]
 */

const USAGE = 'usage: node dist/bench/galera.js [--count N] [--duration S] [--repeat N] [--no-plain] [--out FILE]';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    count: { type: 'string' },
    duration: { type: 'string' },
    repeat: { type: 'string' },
    'no-plain': { type: 'boolean' },
    out: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const count = Number(values.count ?? 20_000);
const durationMs = Number(values.duration ?? 30) * 1000;
const repeat = Number(values.repeat ?? 3);
if (!Number.isInteger(count) || count < 1 || !(durationMs > 0) || !Number.isInteger(repeat) || repeat < 1) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(2);
}
const outFile = values.out ?? fileURLToPath(new URL('../../bench/results/galera.json', import.meta.url));
/** Concurrent enqueue clients and consumers, split evenly over the two processes. */
const PRODUCERS = 64;
const CONSUMERS = 8;
const DEQUEUE_COUNT = 100;

interface PhaseFigures {
  messages: number;
  seconds: number;
  msgsPerSecond: number;
  /** 503 answers ("database busy, retry"), retried by the client. */
  busy: number;
  latency: Record<string, LatencySummary>;
  /** CPU seconds of the two services and of every database server process in the phase. */
  serviceCpuSeconds?: number;
  databaseCpuSeconds?: number;
}

interface TopologyResult {
  topology: string;
  database: string;
  produce?: PhaseFigures;
  consume?: PhaseFigures;
  /** conveyor_db_conflicts_total of both processes after the run (certification conflicts, lost connections). */
  conflicts?: Record<string, number>;
  error?: string;
}

/** Sends until the status is one of `ok`; 503 is retried (counted), anything else ends the run. */
async function send(client: BenchClient, path: string, body: unknown, ok: number, busy: { n: number }): Promise<HttpResponse> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const res = await client.post(path, body);
    if (res.status === ok) return res;
    if (res.status !== 503) throw new Error(`${path}: HTTP ${res.status} ${res.body.slice(0, 200)}`);
    busy.n++;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${path}: still 503 after 100 attempts`);
}

async function timed(pids: { services: number[]; databases: number[] }, work: (latency: (kind: string) => LatencyRecorder, busy: { n: number }) => Promise<number>): Promise<PhaseFigures> {
  const recorders = new Map<string, LatencyRecorder>();
  const latency = (kind: string) => recorders.get(kind) ?? recorders.set(kind, new LatencyRecorder()).get(kind)!;
  const busy = { n: 0 };
  const meter = new CpuMeter([...pids.services, ...pids.databases]);
  const started = performance.now();
  const messages = await work(latency, busy);
  const seconds = (performance.now() - started) / 1000;
  const cpu = meter.elapsed();
  const sum = (xs: Array<number | undefined>) => (xs.length > 0 && xs.every((x) => x !== undefined) ? Math.round(xs.reduce<number>((a, b) => a + b!, 0) * 100) / 100 : undefined);
  return {
    messages,
    seconds: Math.round(seconds * 1000) / 1000,
    msgsPerSecond: Math.round(messages / seconds),
    busy: busy.n,
    latency: Object.fromEntries([...recorders].map(([kind, r]) => [kind, r.summary()])),
    serviceCpuSeconds: sum(cpu.slice(0, pids.services.length)),
    databaseCpuSeconds: sum(cpu.slice(pids.services.length)),
  };
}

/** `PRODUCERS` clients, half on each process, single-message enqueues back to back until `total` or the deadline. */
function producePhase(clients: BenchClient[], pids: { services: number[]; databases: number[] }, topic: string, total: number): Promise<PhaseFigures> {
  const payloads = Array.from({ length: 64 }, (_, i) => makePayload(256, i));
  return timed(pids, async (latency, busy) => {
    const deadline = performance.now() + durationMs;
    let issued = 0;
    let stored = 0;
    const worker = async (client: BenchClient) => {
      while (issued < total && performance.now() < deadline) {
        const n = issued++;
        await latency('enqueue').time(() => send(client, '/api/messages', { topic, payload: payloads[n % payloads.length] }, 201, busy));
        stored++;
      }
    };
    await Promise.all(Array.from({ length: PRODUCERS }, (_, i) => worker(clients[i % clients.length])));
    return stored;
  });
}

/** `CONSUMERS` consumers, half on each process: dequeue 100, ack them in one batch, until `expected` are acked. */
function consumePhase(clients: BenchClient[], pids: { services: number[]; databases: number[] }, topic: string, expected: number): Promise<PhaseFigures> {
  return timed(pids, async (latency, busy) => {
    const deadline = performance.now() + durationMs;
    let acked = 0;
    const consumer = async (client: BenchClient) => {
      while (acked < expected && performance.now() < deadline) {
        const res = await latency('dequeue').time(() => send(client, '/api/messages/dequeue', { topic, count: DEQUEUE_COUNT }, 200, busy));
        const ids = (JSON.parse(res.body) as { messages: Array<{ id: string }> }).messages.map((m) => m.id);
        if (ids.length === 0) return;
        const ack = await latency('ack-batch').time(() => send(client, '/api/messages/ack', { ids }, 200, busy));
        acked += (JSON.parse(ack.body) as { acked: string[] }).acked.length;
      }
    };
    await Promise.all(Array.from({ length: CONSUMERS }, (_, i) => consumer(clients[i % clients.length])));
    return acked;
  });
}

async function conflicts(services: ServiceProcess[]): Promise<Record<string, number>> {
  const totals: Record<string, number> = {};
  for (const service of services) {
    const text = await (await fetch(`http://127.0.0.1:${service.port}/metrics`)).text();
    for (const match of text.matchAll(/^conveyor_db_conflicts_total\{[^}]*kind="(\w+)"[^}]*\} (\d+)/gm)) totals[match[1]] = (totals[match[1]] ?? 0) + Number(match[2]);
  }
  return totals;
}

/** One topology: a fresh database on `serverUrl`, one service per URL in `ports` (same database), warm-up, two phases. */
async function runTopology(topology: string, serverUrl: string, ports: number[], databasePids: number[]): Promise<TopologyResult> {
  let db: BenchDatabase;
  try {
    db = await mysqlDatabase(serverUrl);
  } catch (err) {
    return { topology, database: 'unavailable', error: (err as Error).message };
  }
  const services: ServiceProcess[] = [];
  const clients: BenchClient[] = [];
  try {
    for (const port of ports) {
      const url = new URL(db.url);
      url.port = String(port);
      // One at a time: the first migrates the empty database.
      services.push(await startService(url.href, [], { CONVEYOR_QUEUE_EXPIRY_REAPER_INTERVAL: '0' }));
      clients.push(new BenchClient(services.at(-1)!.port, PRODUCERS));
    }
    const pids = { services: services.map((s) => s.pid), databases: databasePids };
    await consumePhase(clients, pids, 'bench.warmup', (await producePhase(clients, pids, 'bench.warmup', 2_000)).messages);
    const produce = await producePhase(clients, pids, 'bench.galera', count);
    const consume = await consumePhase(clients, pids, 'bench.galera', produce.messages);
    return { topology, database: db.version, produce, consume, conflicts: await conflicts(services) };
  } catch (err) {
    return { topology, database: db.version, error: (err as Error).message };
  } finally {
    for (const client of clients) client.close();
    await Promise.all(services.map((s) => s.stop()));
    await db.drop().catch(() => undefined);
  }
}

/** Markdown rows for docs/ha-database.md: the median of each topology's runs. */
function medians(results: TopologyResult[]): string {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  const rows = ['| topology | produce msg/s | consume msg/s | enqueue p99 ms | dequeue p99 ms | 503s | conflicts | runs |', '|---|---:|---:|---:|---:|---:|---:|---:|'];
  for (const topology of [...new Set(results.map((r) => r.topology))]) {
    const ok = results.filter((r) => r.topology === topology && !r.error);
    if (ok.length === 0) continue;
    const conflicts = ok.map((r) => Object.values(r.conflicts ?? {}).reduce((a, b) => a + b, 0));
    rows.push(
      `| ${topology} | ${median(ok.map((r) => r.produce!.msgsPerSecond))} | ${median(ok.map((r) => r.consume!.msgsPerSecond))} | ` +
        `${median(ok.map((r) => r.produce!.latency.enqueue?.p99Ms ?? 0))} | ${median(ok.map((r) => r.consume!.latency.dequeue?.p99Ms ?? 0))} | ` +
        `${median(ok.map((r) => r.produce!.busy + r.consume!.busy))} | ${median(conflicts)} | ${ok.length} |`,
    );
  }
  return rows.join('\n');
}

function line(r: TopologyResult): string {
  if (r.error) return `${r.topology.padEnd(15)} FAILED: ${r.error}`;
  const phase = (name: string, p: PhaseFigures, kind: string) =>
    `${name} ${String(p.msgsPerSecond).padStart(5)} msg/s (${kind} p50 ${p.latency[kind]?.p50Ms} ms p99 ${p.latency[kind]?.p99Ms} ms, 503×${p.busy})`;
  return `${r.topology.padEnd(15)} ${phase('produce', r.produce!, 'enqueue')}  ${phase('consume', r.consume!, 'dequeue')}  conflicts ${JSON.stringify(r.conflicts)}`;
}

async function main(): Promise<void> {
  setTimeout(() => {
    process.stderr.write(`bench: gave up after ${repeat * 10} minutes\n`);
    process.exit(1);
  }, repeat * 10 * 60_000).unref();
  const machine = machineInfo();
  process.stdout.write(`machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.os}, Node ${machine.node}, load ${machine.loadAverage ?? '?'}\n`);
  const results: TopologyResult[] = [];
  const report = (r: TopologyResult) => (results.push(r), process.stdout.write(`${line(r)}\n`));
  let cluster: GaleraCluster | undefined;
  try {
    cluster = await startGaleraCluster();
    const nodePids = cluster.nodes.map((n) => n.pid!);
    const [first, second] = cluster.nodes;
    const plain = new URL(process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306');
    for (let round = 0; round < repeat; round++) {
      report(await runTopology('single-writer', first.url, [first.port, first.port], nodePids));
      report(await runTopology('multi-primary', first.url, [first.port, second.port], nodePids));
      if (!values['no-plain']) report(await runTopology('plain MariaDB', plain.href, [Number(plain.port || 3306), Number(plain.port || 3306)], []));
    }
  } finally {
    await cluster?.stopAll();
  }
  process.stdout.write(`\n${medians(results)}\n`);
  mkdirSync(dirname(outFile), { recursive: true });
  writeFileSync(outFile, `${JSON.stringify({ date: new Date().toISOString(), machine: { ...machine, loadAverageAfter: loadAverage() }, count, repeat, results }, null, 2)}\n`);
  process.stdout.write(`results: ${outFile}\n`);
  if (results.some((r) => r.error)) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${(err as Error).message}\n`);
  process.exit(1);
});
