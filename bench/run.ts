import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { authEnv, BenchToken, type AuthMode } from './auth.js';
import { findProcess } from './cpu.js';
import { grpcPhases, grpcPortOf, parsePhases } from './grpc.js';
import { mysqlDatabase, sqliteDatabase, type BenchDatabase, type Engine } from './databases.js';
import { BenchClient, expectStatus } from './http-client.js';
import { loadAverage, machineInfo } from './machine.js';
import { dequeueAckPhase, enqueuePhase, pipelinePhase, preload, type PhaseResult, type Processes } from './phases.js';
import { referenceCosts, type ReferenceCosts } from './reference.js';
import { longPollPhase } from './long-poll.js';
import { formatRatios, orderingPhases, type OrderingRatios } from './ordering.js';
import { sqsPhases } from './sqs.js';
import { SERVICE_NODE_ARGS, startService } from './server-process.js';
import { startTraceSink, type TraceSink } from './trace-sink.js';
import { redisAnswers } from './redis.js';

const USAGE = `usage: npm run bench -- [options]

  --engine sqlite|mysql   engines to run, repeatable or comma-separated (BENCH_ENGINES; default both)
  --auth on|off|both      authentication of the service (BENCH_AUTH; default both, on first: production runs with it)
  --transport http|grpc|sqs|both  transports to measure per engine (BENCH_TRANSPORT; default both: HTTP, gRPC and
                          the SQS-compatible API's two phases)
  --count N               messages per phase (BENCH_COUNT; default 20000)
  --duration S            time limit per phase in seconds (BENCH_DURATION; default 30)
  --concurrency N         concurrent enqueue clients (default 64)
  --consumers N           concurrent consumers (default 8)
  --dequeue-count N       messages per dequeue (default 100)
  --ack-concurrency N     per-message acks in flight per consumer (default 8)
  --ack single|batch|both|none  dequeue+ack variants to run (default both; none: enqueue only)
  --payload-bytes N       payload size (default 256)
  --warmup N              unmeasured enqueue+ack round first, so the JIT is warm (default 2000; 0 skips)
  --ordering-rounds N     paired rounds of plain and ordered enqueue and dequeue+ack (BENCH_ORDERING_ROUNDS;
                          default 5; with per-message acks; each phase in ten slices, the two kinds in
                          turn): the ratios of ordering keys are their medians
  --ordering-keys N       ordering keys of the ordered topic in those rounds (BENCH_ORDERING_KEYS; default 1000;
                          a key per message, 20000 with the default count: every message opens its key's line,
                          as where consumers keep up with the producers)
  --node-arg ARG          extra node flag for the service, repeatable (e.g. --cpu-prof)
  --server-env K=V        extra environment for the service, repeatable (e.g. CONVEYOR_DB_POOL_SIZE=8)
  --tracing RATIO         tracing on, at this sample ratio (0 to 1), exported to a collector inside the bench
                          process (BENCH_TRACING; default off: no telemetry.traces_endpoint)
  --redis URL|none        Redis for the service on MySQL, as API pods on MySQL run with one (BENCH_REDIS_URL, then
                          REDIS_URL; default redis://127.0.0.1:6379, used when it answers; none: without). Without
                          Redis, waiting dequeues re-check their topic once a second: the long-poll idle window
                          shows those claims. SQLite runs one instance and never uses it.
  --server-script FILE    experiments: start this script instead of dist/src/cli.js (same env, same API)
  --out FILE              JSON results (default bench/results/latest.json)

Before and after the phases, the run measures this machine's reference costs (bench/reference.ts): the
server CPU of a no-op HTTP request and of a no-op gRPC unary call. The summary's last column is a phase's
server CPU per message in no-op gRPC calls, which compares runs of different days.

MySQL/MariaDB: MYSQL_URL (default mysql://root@127.0.0.1:3306); a fresh database is created and dropped.

The HTTP phases end with the long-polling phase (8 consumers with wait_seconds 20 and a producer paced at
1,000 msg/s for 10 s; BENCH_LONG_POLL_RATE and BENCH_LONG_POLL_SECONDS change those): enqueue-to-delivery
latency, and the claims and statements of idle waiters (bench/long-poll.ts). BENCH_LONG_POLL=off leaves it
out, =only runs it alone.`;

/** Bad options end the run with the usage text, not a stack trace. */
function fail(message: string): never {
  process.stderr.write(`bench: ${message}\n${USAGE}\n`);
  process.exit(2);
}

const parse = () =>
  parseArgs({
    args: process.argv.slice(2),
    options: {
      engine: { type: 'string', multiple: true },
      auth: { type: 'string' },
      transport: { type: 'string' },
      count: { type: 'string' },
      duration: { type: 'string' },
      concurrency: { type: 'string' },
      consumers: { type: 'string' },
      'dequeue-count': { type: 'string' },
      'ack-concurrency': { type: 'string' },
      ack: { type: 'string' },
      'payload-bytes': { type: 'string' },
      warmup: { type: 'string' },
      'ordering-rounds': { type: 'string' },
      'ordering-keys': { type: 'string' },
      'node-arg': { type: 'string', multiple: true },
      'server-env': { type: 'string', multiple: true },
      tracing: { type: 'string' },
      out: { type: 'string' },
      'server-script': { type: 'string' },
      redis: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
let values: ReturnType<typeof parse>['values'];
try {
  ({ values } = parse());
} catch (err) {
  fail((err as Error).message);
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}

function positiveInt(name: string, flag: string | undefined, env: string | undefined, fallback: number): number {
  const raw = flag ?? env;
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) fail(`--${name} must be a positive integer, got "${raw}"`);
  return n;
}

const engines = (values.engine ?? (process.env.BENCH_ENGINES ? [process.env.BENCH_ENGINES] : ['sqlite,mysql']))
  .flatMap((e) => e.split(','))
  .map((e) => e.trim())
  .filter(Boolean) as Engine[];
for (const e of engines) if (e !== 'sqlite' && e !== 'mysql') fail(`--engine must be sqlite or mysql, got "${e}"`);
const authSetting = values.auth ?? process.env.BENCH_AUTH ?? 'both';
if (authSetting !== 'on' && authSetting !== 'off' && authSetting !== 'both') fail(`--auth must be on, off or both, got "${authSetting}"`);
const authModes: AuthMode[] = authSetting === 'both' ? ['on', 'off'] : [authSetting];
const transport = values.transport ?? process.env.BENCH_TRANSPORT ?? 'both';
if (transport !== 'http' && transport !== 'grpc' && transport !== 'sqs' && transport !== 'both') fail(`--transport must be http, grpc, sqs or both, got "${transport}"`);
const runHttp = transport === 'http' || transport === 'both';
const runGrpc = transport === 'grpc' || transport === 'both';
const runSqs = transport === 'sqs' || transport === 'both';
const ackModes: Array<'single' | 'batch'> =
  values.ack === undefined || values.ack === 'both' ? ['single', 'batch'] : values.ack === 'none' ? [] : [values.ack as 'single' | 'batch'];
for (const m of ackModes) if (m !== 'single' && m !== 'batch') fail(`--ack must be single, batch, both or none`);

const options = {
  count: positiveInt('count', values.count, process.env.BENCH_COUNT, 20_000),
  durationSeconds: positiveInt('duration', values.duration, process.env.BENCH_DURATION, 30),
  concurrency: positiveInt('concurrency', values.concurrency, undefined, 64),
  consumers: positiveInt('consumers', values.consumers, undefined, 8),
  dequeueCount: positiveInt('dequeue-count', values['dequeue-count'], undefined, 100),
  ackConcurrency: positiveInt('ack-concurrency', values['ack-concurrency'], undefined, 8),
  payloadBytes: positiveInt('payload-bytes', values['payload-bytes'], undefined, 256),
  warmup: values.warmup === '0' ? 0 : positiveInt('warmup', values.warmup, undefined, 2000),
};
/** Paired rounds of plain and ordered phases (bench/ordering.ts): each ratio is the median of this many. */
const orderingRounds = positiveInt('ordering-rounds', values['ordering-rounds'], process.env.BENCH_ORDERING_ROUNDS, 5);
/** The ordered topic's keys in those rounds, taken in turn by its messages. */
const orderingKeys = positiveInt('ordering-keys', values['ordering-keys'], process.env.BENCH_ORDERING_KEYS, 1000);
const nodeArgs = values['node-arg'] ?? [];
const serverEnv = Object.fromEntries(
  (values['server-env'] ?? []).map((kv) => {
    const at = kv.indexOf('=');
    if (at < 1) fail(`--server-env must be KEY=VALUE, got "${kv}"`);
    return [kv.slice(0, at), kv.slice(at + 1)];
  }),
);
const redisSetting = values.redis ?? process.env.BENCH_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/** The Redis the service on MySQL gets: set once the run has found it answering. */
let redisUrl: string | undefined;
const tracingRatio = values.tracing ?? process.env.BENCH_TRACING;
if (tracingRatio !== undefined && tracingRatio !== '' && !(Number(tracingRatio) >= 0 && Number(tracingRatio) <= 1)) fail(`--tracing must be a sample ratio from 0 to 1, got "${tracingRatio}"`);
/** With --tracing: the collector the service exports to, for the whole run. */
let traceSink: TraceSink | undefined;
const outFile = values.out ?? fileURLToPath(new URL('../../bench/results/latest.json', import.meta.url));

interface EngineResult {
  engine: Engine;
  auth: AuthMode;
  database: string;
  /** The service's Redis (MySQL), if it had one. */
  redis?: string;
  phases: PhaseResult[];
  /** Ordered over plain rates, per paired round (bench/ordering.ts). */
  orderingRatios?: OrderingRatios;
  error?: string;
}

async function benchEngine(engine: Engine, auth: AuthMode): Promise<EngineResult> {
  let db: BenchDatabase;
  try {
    db = engine === 'sqlite' ? sqliteDatabase() : await mysqlDatabase(process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306');
  } catch (err) {
    return { engine, auth, database: 'unavailable', phases: [], error: (err as Error).message };
  }
  const phases: PhaseResult[] = [];
  let orderingRatios: OrderingRatios | undefined;
  try {
    const redis: Record<string, string> = engine === 'mysql' && redisUrl ? { CONVEYOR_REDIS_URL: redisUrl } : {};
    const service = await startService(db.url, nodeArgs, { ...authEnv(auth), ...redis, ...serverEnv }, values['server-script'] && resolve(values['server-script']));
    const procs = { serverPid: service.pid, dbPid: engine === 'mysql' ? findProcess(['mariadbd', 'mysqld']) : undefined };
    const token = new BenchToken(auth);
    // Sockets for the pipeline phase, which has the enqueue clients and the consumers' requests in flight at once.
    const client = new BenchClient(service.port, options.concurrency + options.consumers * (options.ackConcurrency + 1), () => token.value());
    const deadlineMs = options.durationSeconds * 1000;
    const report = (r: PhaseResult) => (phases.push(r), process.stdout.write(`${formatPhase(engine, auth, r)}\n`));
    const reportRatios = (r: OrderingRatios) => ((orderingRatios = r), process.stdout.write(`${engine.padEnd(6)} auth ${auth.padEnd(3)} ${formatRatios(r)}\n`));
    try {
      await token.renew(client);
      if (runHttp && process.env.BENCH_LONG_POLL !== 'only') await httpPhases(client, procs, deadlineMs, report, reportRatios, () => token.renew(client));
      if (runHttp && process.env.BENCH_LONG_POLL !== 'off') {
        await token.renew(client);
        const lp = { rate: Number(process.env.BENCH_LONG_POLL_RATE ?? 1000), seconds: Number(process.env.BENCH_LONG_POLL_SECONDS ?? 10) };
        const common = { consumers: options.consumers, dequeueCount: options.dequeueCount, payloadBytes: options.payloadBytes, deadlineMs: deadlineMs + lp.seconds * 1000 };
        report(await longPollPhase(client, procs, { ...common, topic: 'bench.long-poll', waitSeconds: 20, ratePerSecond: lp.rate, seconds: lp.seconds, warmupSeconds: 2, idleSeconds: 5, mysqlUrl: engine === 'mysql' ? db.url : undefined }));
      }
      if (runGrpc) {
        await token.renew(client);
        const grpcOptions = { count: options.count, deadlineMs, payloadBytes: options.payloadBytes, concurrency: options.concurrency, batchCallers: options.consumers, batchSize: options.dequeueCount, token: () => token.value(), phases: process.env.BENCH_GRPC_PHASES ? parsePhases(process.env.BENCH_GRPC_PHASES) : undefined };
        await grpcPhases(grpcPortOf(service.output()), procs, grpcOptions, report);
      }
      if (runSqs) {
        await token.renew(client);
        const sqsOptions = { port: service.port, count: options.count, deadlineMs, payloadBytes: options.payloadBytes, concurrency: options.concurrency, consumers: options.consumers, authOn: auth === 'on' };
        await sqsPhases(client, procs, sqsOptions, report);
      }
    } finally {
      client.close();
      await service.stop();
    }
    return { engine, auth, database: db.version, redis: engine === 'mysql' ? redisUrl : undefined, phases, orderingRatios };
  } catch (err) {
    return { engine, auth, database: db.version, phases, error: (err as Error).message };
  } finally {
    await db.drop().catch(() => undefined);
  }
}

/** The HTTP phases: single-message enqueues, then dequeue + per-message ack and/or ack-batch, then both at once. */
async function httpPhases(
  client: BenchClient,
  procs: Processes,
  deadlineMs: number,
  report: (r: PhaseResult) => void,
  reportRatios: (r: OrderingRatios) => void,
  renewToken: () => Promise<void>,
): Promise<void> {
  if (options.warmup > 0) {
    const common = { topic: 'bench.warmup', deadlineMs, consumers: options.consumers, dequeueCount: options.dequeueCount, ackConcurrency: options.ackConcurrency };
    const warm = await enqueuePhase(client, procs, { ...common, count: options.warmup, concurrency: options.concurrency, payloadBytes: options.payloadBytes });
    await dequeueAckPhase(client, procs, { ...common, expected: warm.messages, ackMode: 'single' });
  }
  await renewToken();
  const enqueued = await enqueuePhase(client, procs, { topic: 'bench.single', count: options.count, deadlineMs, concurrency: options.concurrency, payloadBytes: options.payloadBytes });
  report(enqueued);
  for (const ackMode of ackModes) {
    const topic = `bench.${ackMode}`;
    let expected = enqueued.messages;
    if (ackMode === 'batch' || ackModes[0] !== 'single') {
      expected = options.count;
      await preload(client, { topic, count: expected, concurrency: options.concurrency, payloadBytes: options.payloadBytes });
    }
    await renewToken();
    report(await dequeueAckPhase(client, procs, { topic, expected, deadlineMs, consumers: options.consumers, dequeueCount: options.dequeueCount, ackMode, ackConcurrency: options.ackConcurrency }));
  }
  if (ackModes.includes('single')) {
    // Ordering keys (1,000 by default), each delivered one at a time in order, against plain messages in paired rounds.
    const { count, concurrency, payloadBytes, consumers, dequeueCount, ackConcurrency } = options;
    const compared = await orderingPhases(client, procs, { rounds: orderingRounds, keys: orderingKeys, count, deadlineMs, concurrency, payloadBytes, consumers, dequeueCount, ackConcurrency }, renewToken);
    compared.phases.forEach(report);
    reportRatios(compared.ratios);
  }
  if (ackModes.includes('batch')) {
    // Delayed messages beside ready ones: the ready ones' claims should not slow down (compare with
    // dequeue+batch-ack). 10 % of the run is delayed 1-5 s; the consumers drain the ready 90 %.
    const delayed = Math.round(options.count / 10);
    await preload(client, { topic: 'bench.delayed', count: options.count, concurrency: options.concurrency, payloadBytes: options.payloadBytes, delayedShare: 0.1 });
    await renewToken();
    const drain = { topic: 'bench.delayed', expected: options.count - delayed, deadlineMs, consumers: options.consumers, dequeueCount: options.dequeueCount, ackConcurrency: options.ackConcurrency };
    report(await dequeueAckPhase(client, procs, { ...drain, ackMode: 'batch', name: 'batch-ack 10% delayed' }));
  }
  if (ackModes.includes('batch')) {
    // A fan-out topic with two consumer groups: every message is claimed and acked once per group. The first
    // group's acks leave every message in place (the second still needs it); the second group's last ack
    // settles it. Drained in turn, each group by all the consumers, with and without ordering keys.
    for (const orderingKeys of [undefined, 1000]) {
      const topic = orderingKeys ? 'bench.groups.ordered' : 'bench.groups';
      for (const group of GROUPS) expectStatus(await client.post(`/api/topics/${topic}/consumer-groups`, { consumer_group: group }), 201, 'consumer group');
      await preload(client, { topic, count: options.count, concurrency: options.concurrency, payloadBytes: options.payloadBytes, orderingKeys });
      for (const [i, group] of GROUPS.entries()) {
        await renewToken();
        const name = `group ${i === 0 ? 'first' : 'second'} of 2${orderingKeys ? `, ${orderingKeys} keys` : ''}`;
        report(await dequeueAckPhase(client, procs, { topic, group, name, expected: options.count, deadlineMs, consumers: options.consumers, dequeueCount: options.dequeueCount, ackMode: 'batch', ackConcurrency: options.ackConcurrency }));
      }
    }
  }
  if (ackModes.length > 0) {
    await renewToken();
    const { count, concurrency, payloadBytes, consumers, dequeueCount, ackConcurrency } = options;
    report(await pipelinePhase(client, procs, { topic: 'bench.pipeline', count, deadlineMs, concurrency, payloadBytes, consumers, dequeueCount, ackConcurrency }));
  }
}

/** The consumer groups of the fan-out phases. */
const GROUPS = ['bench-a', 'bench-b'] as const;

/** A phase offered a rate (Subscribe) that acked clearly less per second did not keep up with it. */
const behind = (r: PhaseResult) => r.offeredPerSecond !== undefined && r.msgsPerSecond < 0.95 * r.offeredPerSecond;

function formatPhase(engine: Engine, auth: AuthMode, r: PhaseResult): string {
  const lat = Object.entries(r.latency)
    .map(([kind, s]) => `${kind} p50 ${s.p50Ms} ms p99 ${s.p99Ms} ms`)
    .join(', ');
  const cpu = [
    r.serverCpuUsPerMessage === undefined ? '' : `server ${r.serverCpuUsPerMessage} µs/msg`,
    r.dbCpuUsPerMessage === undefined ? '' : `db ${r.dbCpuUsPerMessage} µs/msg`,
  ]
    .filter(Boolean)
    .join(', ');
  const lag = behind(r) ? ` (behind the offered ${r.offeredPerSecond}/s)` : '';
  return `${engine.padEnd(6)} auth ${auth.padEnd(3)} ${r.phase.padEnd(18)} ${String(r.msgsPerSecond).padStart(6)} msg/s${lag}  (${r.messages} msgs in ${r.seconds} s; ${lat}; CPU ${cpu})`;
}

function formatReference(when: 'before' | 'after', costs: ReferenceCosts): string {
  return `reference ${when}: a no-op HTTP request ${costs.httpNoopUs} µs, a no-op gRPC unary call ${costs.grpcNoopUs} µs of server CPU (bench/reference.ts)`;
}

/** Markdown rows for docs/benchmark.md: msg/s, then p50/p99 of the phase's main request (pipeline: the enqueue), then server CPU. */
function summaryTable(results: EngineResult[], noopCallUs: number): string {
  const inCalls = (us: number | undefined) => (us === undefined ? '' : (us / noopCallUs).toFixed(2));
  const lines = ['| engine | auth | phase | msg/s | p50 ms | p99 ms | server CPU µs/msg | db CPU µs/msg | server CPU in no-op gRPC calls |', '|---|---|---|---:|---:|---:|---:|---:|---:|'];
  for (const r of results) {
    for (const p of r.phases) {
      const main = p.latency['enqueue-to-delivery'] ?? p.latency.enqueue ?? p.latency['enqueue-batch'] ?? p.latency.ack ?? p.latency['ack-batch'] ?? p.latency.dequeue ?? p.latency['send-batch'] ?? p.latency['delete-batch'];
      lines.push(`| ${r.database} | ${r.auth} | ${p.phase} | ${p.msgsPerSecond}${behind(p) ? ' (behind)' : ''} | ${main?.p50Ms ?? ''} | ${main?.p99Ms ?? ''} | ${p.serverCpuUsPerMessage ?? ''} | ${p.dbCpuUsPerMessage ?? ''} | ${inCalls(p.serverCpuUsPerMessage)} |`);
    }
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  // Bounded by construction (count and per-phase deadline); this is the backstop for a hung server.
  // gRPC: three throughput phases plus three Subscribe phases (each 2 s warm-up, 10 s of sending, up to 10 s
  // draining, 0.5 s setup twice).
  const phasesPerEngine = (runHttp ? 1 + ackModes.length + (ackModes.includes('single') ? 4 * orderingRounds : 0) + (ackModes.includes('batch') ? 5 : 0) + (ackModes.length > 0 ? 1 : 0) : 0) + (runGrpc ? 3 : 0) + (runSqs ? 2 : 0);
  // The long-poll phase: 10 s of traffic, 5 s idle, and its waits running out (20 s).
  const extraSeconds = (runGrpc ? 100 : 0) + (runHttp && process.env.BENCH_LONG_POLL !== 'off' ? 60 : 0);
  // Plus two reference measurements of about 10 s each.
  const limitMs = (engines.length * authModes.length * (phasesPerEngine * options.durationSeconds * 2 + extraSeconds + 120) + 60) * 1000;
  setTimeout(() => {
    process.stderr.write(`bench: gave up after ${Math.round(limitMs / 1000)} s\n`);
    process.exit(1);
  }, limitMs).unref();

  const machine = machineInfo();
  process.stdout.write(
    `machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.os}, Node ${machine.node}, load ${machine.loadAverage ?? '?'}\n` +
      `options: ${JSON.stringify({ ...options, transport })}${nodeArgs.length ? ` node args ${nodeArgs.join(' ')}` : ''}${Object.keys(serverEnv).length ? ` env ${JSON.stringify(serverEnv)}` : ''}\n`,
  );
  if (engines.includes('mysql') && redisSetting !== 'none') {
    redisUrl = (await redisAnswers(redisSetting)) ? redisSetting : undefined;
    process.stdout.write(
      redisUrl ? `redis: the service on MySQL uses ${new URL(redisSetting).host}\n` : `redis: nothing answers at ${redisSetting}; the service on MySQL runs without Redis\n`,
    );
  }
  if (tracingRatio !== undefined && tracingRatio !== '') {
    traceSink = await startTraceSink();
    serverEnv.CONVEYOR_TELEMETRY_TRACES_ENDPOINT = traceSink.url;
    serverEnv.CONVEYOR_TELEMETRY_TRACES_SAMPLE_RATIO = tracingRatio;
    process.stdout.write(`tracing: on, sample ratio ${tracingRatio}, exported to ${traceSink.url}\n`);
  }
  const referenceBefore = await referenceCosts(SERVICE_NODE_ARGS);
  process.stdout.write(`${formatReference('before', referenceBefore)}\n`);
  const results: EngineResult[] = [];
  for (const engine of engines) {
    for (const auth of authModes) {
      const result = await benchEngine(engine, auth);
      process.stdout.write(`${engine} auth ${auth}: ${result.database}${result.error ? ` — FAILED: ${result.error}` : ''}\n`);
      results.push(result);
    }
  }
  // The machine's speed drifts within a run too: the reference again, after the phases.
  const referenceAfter = await referenceCosts(SERVICE_NODE_ARGS);
  process.stdout.write(`${formatReference('after', referenceAfter)}\n`);
  const noopCallUs = (referenceBefore.grpcNoopUs + referenceAfter.grpcNoopUs) / 2;
  process.stdout.write(`\n${summaryTable(results, noopCallUs)}\n`);
  const traced = traceSink?.received();
  if (traced) process.stdout.write(`tracing: the collector received ${traced.exports} exports, ${Math.round(traced.bytes / 1024)} KiB\n`);
  await traceSink?.close();
  const report = {
    date: new Date().toISOString(),
    machine: { ...machine, loadAverageAfter: loadAverage(), reference: { before: referenceBefore, after: referenceAfter } },
    options: { ...options, transport, auth: authModes },
    nodeArgs,
    serverEnv,
    serverScript: values['server-script'],
    tracing: traced ? { sampleRatio: Number(tracingRatio), ...traced } : undefined,
    results,
  };
  mkdirSync(dirname(outFile), { recursive: true });
  writeFileSync(outFile, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`results: ${outFile}\n`);
  if (results.some((r) => r.error)) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${(err as Error).message}\n${USAGE}\n`);
  process.exit(2);
});
