import { pathToFileURL } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { LOADER_OPTIONS, queueProtoPath } from '../src/grpc/proto.js';
import { findProcess } from './cpu.js';
import { mysqlDatabase, sqliteDatabase } from './databases.js';
import type { LatencyRecorder } from './latency.js';
import { makePayload, measured, type PhaseResult, type Processes } from './phases.js';
import { startService } from './server-process.js';
import { grpcAuth } from './auth.js';
import { startCombined, startProducer, startSubscriber, type SubscribeAcks, type SubscribeEnqueues } from './subscribe-clients.js';

/**
 * The gRPC section of `npm run bench` (issue 5): single Enqueue (report only), EnqueueBatch of 100 from 8
 * callers, BatchDequeue of 100 + AckBatch, and Subscribe enqueue-to-delivery latency at a steady rate.
 * bench/run.ts calls grpcPhases() with the service's gRPC port (grpcPortOf its log output), after the HTTP
 * phases unless `--transport grpc`; `npm run build && node dist/bench/grpc.js [sqlite|mysql]` runs this section
 * alone (BENCH_COUNT, BENCH_DURATION, BENCH_SUBSCRIBE_STREAMS, BENCH_GRPC_PHASES such as subscribe or
 * enqueue-batch,dequeue-batch, BENCH_NODE_ARGS such as --cpu-prof for the service, BENCH_CLIENT_NODE_ARGS for the
 * Subscribe phase's producer and subscriber processes).
 */

export interface GrpcBenchOptions {
  /** Messages per throughput phase. */
  count: number;
  deadlineMs: number;
  payloadBytes: number;
  /** Callers of the single-Enqueue phase. */
  concurrency: number;
  /** Callers of EnqueueBatch and consumers of BatchDequeue + AckBatch. */
  batchCallers?: number;
  batchSize?: number;
  /** Subscribe phase: steady enqueue rate, for how long, over how many streams. */
  subscribeRatePerSecond?: number;
  subscribeSeconds?: number;
  subscribeStreams?: number;
  /** Phases to run (all when unset); dequeue-batch fills its topic with the enqueue-batch phase either way. */
  phases?: GrpcPhase[];
  /** The bearer token every call carries when the service runs with auth on. */
  token?: () => string | undefined;
}

export const GRPC_PHASES = ['enqueue', 'enqueue-batch', 'dequeue-batch', 'subscribe', 'subscribe-ack-batch', 'subscribe-one-stream', 'subscribe-tuned'] as const;
/** What a run measures unless told otherwise: the tuned-clients Subscribe variant is an extra (BENCH_GRPC_PHASES). */
const DEFAULT_GRPC_PHASES: readonly GrpcPhase[] = GRPC_PHASES.filter((p) => p !== 'subscribe-tuned');
export type GrpcPhase = (typeof GRPC_PHASES)[number];

/** The service logs `"grpcPort":N` in its "conveyor listening" line. */
export function grpcPortOf(output: string): number {
  const match = /"grpcPort":(\d+)/.exec(output);
  if (!match) throw new Error('the service did not report a gRPC port');
  return Number(match[1]);
}

type Callback<T> = (err: grpc.ServiceError | null, response: T) => void;
type AnyClient = grpc.Client & Record<string, (request: object, callback: Callback<any>) => void>;

function connect(port: number, token?: () => string | undefined): AnyClient {
  const definition = protoLoader.loadSync(queueProtoPath(), LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition) as unknown as { queue: { QueueService: grpc.ServiceClientConstructor } };
  return new pkg.queue.QueueService(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    interceptors: token ? [grpcAuth(token)] : [],
  }) as unknown as AnyClient;
}

function unary<T = any>(client: AnyClient, method: string, request: object): Promise<T> {
  return new Promise((resolve, reject) => client[method](request, (err: grpc.ServiceError | null, res: T) => (err ? reject(err) : resolve(res))));
}

/** Single-message Enqueue calls from `concurrency` callers (report only: the client, not the server, is the limit). */
function enqueuePhase(client: AnyClient, procs: Processes, o: GrpcBenchOptions, topic: string): Promise<PhaseResult> {
  const payload = Buffer.from(makePayload(o.payloadBytes, 1));
  return measured('grpc-enqueue', procs, async (recorder) => {
    const latency = recorder('enqueue');
    const deadline = performance.now() + o.deadlineMs;
    let issued = 0;
    const caller = async () => {
      while (issued < o.count && performance.now() < deadline) {
        issued++;
        await latency.time(() => unary(client, 'Enqueue', { topic, payload }));
      }
    };
    await Promise.all(Array.from({ length: o.concurrency }, caller));
    return latency.count;
  });
}

function enqueueBatchPhase(client: AnyClient, procs: Processes, o: GrpcBenchOptions, topic: string): Promise<PhaseResult> {
  const size = o.batchSize ?? 100;
  const payload = Buffer.from(makePayload(o.payloadBytes, 2));
  const requests = Array.from({ length: size }, () => ({ topic, payload }));
  return measured(`grpc-enqueue-batch${size}`, procs, async (recorder) => {
    const latency = recorder('enqueue-batch');
    const deadline = performance.now() + o.deadlineMs;
    let stored = 0;
    let issued = 0;
    const caller = async () => {
      while (issued < o.count && performance.now() < deadline) {
        issued += size;
        const { ids } = await latency.time(() => unary<{ ids: string[] }>(client, 'EnqueueBatch', { requests }));
        stored += ids.length;
      }
    };
    await Promise.all(Array.from({ length: o.batchCallers ?? 8 }, caller));
    return stored;
  });
}

/** InnoDB picks deadlock victims under concurrent claims and acks; the service retries them, so none should surface. */
function dequeueAckBatchPhase(client: AnyClient, procs: Processes, o: GrpcBenchOptions, topic: string, expected: number): Promise<PhaseResult> {
  const size = o.batchSize ?? 100;
  return measured(`grpc-dequeue${size}+ack-batch`, procs, async (recorder) => {
    const dequeueLatency = recorder('batch-dequeue');
    const ackLatency = recorder('ack-batch');
    const deadline = performance.now() + o.deadlineMs;
    let acked = 0;
    const consumer = async () => {
      while (acked < expected && performance.now() < deadline) {
        const { messages } = await dequeueLatency.time(() => unary<{ messages: Array<{ id: string }> }>(client, 'BatchDequeue', { topic, count: size }));
        if (messages.length === 0) return;
        const ids = messages.map((m) => m.id);
        const result = await ackLatency.time(() => unary<{ acked: string[] }>(client, 'AckBatch', { ids }));
        if (result.acked.length !== ids.length) throw new Error(`AckBatch: ${ids.length - result.acked.length} of ${ids.length} not acked`);
        acked += ids.length;
      }
    };
    await Promise.all(Array.from({ length: o.batchCallers ?? 8 }, consumer));
    return acked;
  });
}

/** One Subscribe phase: the enqueue rate, the streams and their window, how they ack, and who the clients are. */
interface SubscribeSpec {
  rate: number;
  streams: number;
  acks: SubscribeAcks;
  /** Unary Enqueue per message (the default) or EnqueueBatch per 10 ms tick. */
  enqueues?: SubscribeEnqueues;
  maxInFlight?: number;
  /** `one-process`: producer and subscriber in one default-flag process, as users run them; `tuned`: two processes with a small young generation. */
  clients: 'one-process' | 'tuned';
  /**
   * Measure what the streams carry rather than whether they keep up: `rate` is set above it, and the phase
   * counts what was acked while the producer was sending, not the drain afterwards, when the streams would have
   * the machine to themselves.
   */
  capacity?: boolean;
}

function subscribeLabel(spec: SubscribeSpec): string {
  const window = spec.maxInFlight ? ` max_in_flight ${spec.maxInFlight}` : '';
  const batched = spec.enqueues === 'batch' ? ' enqueue-batch' : '';
  const kind = spec.clients === 'tuned' ? ' (tuned clients)' : spec.capacity ? ' (capacity)' : '';
  return `grpc-subscribe@${spec.rate}/s x${spec.streams}${window}${batched}${spec.acks === 'batch' ? '+ack-batch' : ''}${kind}`;
}

/** A run of `total` messages: the enqueue-to-delivery latencies, the deliveries acked, and the Enqueue call latencies. */
type SubscribeRun = (total: number, rate: number, timeoutMs: number) => Promise<{ deliveries: number[]; acked: number; enqueues: number[] }>;

/** Starts the phase's clients; `run` drives one steady run, `pids` are metered as client CPU. */
async function subscribeClients(port: number, token: string | undefined, topic: string, payloadBytes: number, spec: SubscribeSpec) {
  const stream = { streams: spec.streams, acks: spec.acks, maxInFlight: spec.maxInFlight };
  if (spec.clients === 'one-process') {
    const combined = await startCombined({ port, token, topic, payloadBytes, enqueues: spec.enqueues ?? 'each', ...stream });
    const run: SubscribeRun = async (total, rate, timeoutMs) => {
      const { latenciesMs, acked } = await (await combined.begin(total, rate, timeoutMs)).finished;
      return { deliveries: latenciesMs, acked, enqueues: combined.enqueues() };
    };
    return { run, pids: [combined.pid], stop: () => combined.stop() };
  }
  const subscriber = await startSubscriber({ port, token, topic, ...stream });
  const producer = await startProducer({ port, token, topic, payloadBytes, enqueues: spec.enqueues ?? 'each' }).catch(async (err: unknown) => {
    await subscriber.stop();
    throw err;
  });
  const run: SubscribeRun = async (total, rate, timeoutMs) => {
    // The subscriber counts from the moment it is armed, so it is armed before the first Enqueue.
    const delivered = await subscriber.begin(total, rate, timeoutMs);
    const sent = await producer.begin(total, rate, timeoutMs);
    const [enqueues, deliveries] = await Promise.all([sent.finished, delivered.finished]);
    return { deliveries: deliveries.latenciesMs, acked: deliveries.acked, enqueues: enqueues.latenciesMs };
  };
  return { run, pids: [producer.pid, subscriber.pid], stop: () => Promise.all([producer.stop(), subscriber.stop()]).then(() => undefined) };
}

/**
 * A steady stream of single Enqueues (in ticks of 10 ms) into Subscribe streams that ack every delivery;
 * msg/s counts deliveries acked, latency is from sending the Enqueue to the message arriving on a stream
 * (bench/subscribe-clients.ts); the clients' CPU counts as client CPU. The same traffic runs unmeasured for
 * SUBSCRIBE_WARMUP_SECONDS first, drained to the end: the phases before leave the database purging tens of
 * thousands of deleted rows and this code path cold, which the first seconds measured.
 */
async function subscribePhase(port: number, procs: Processes, o: GrpcBenchOptions, topic: string, spec: SubscribeSpec): Promise<PhaseResult> {
  const clients = await subscribeClients(port, o.token?.(), topic, o.payloadBytes, spec);
  const steady = async (seconds: number, drainMs: number, latency?: { delivery: LatencyRecorder; enqueue: LatencyRecorder }) => {
    const { deliveries, acked, enqueues } = await clients.run(spec.rate * seconds, spec.rate, seconds * 1000 + drainMs);
    for (const ms of enqueues) latency?.enqueue.record(ms);
    for (const ms of deliveries) latency?.delivery.record(ms);
    return acked;
  };
  try {
    await steady(SUBSCRIBE_WARMUP_SECONDS, 10_000);
    const measuredRun = await measured(subscribeLabel(spec), { ...procs, clientPids: clients.pids }, (recorder) =>
      steady(o.subscribeSeconds ?? 10, spec.capacity ? 0 : 10_000, { delivery: recorder('enqueue-to-delivery'), enqueue: recorder('enqueue') }),
    );
    return { ...measuredRun, offeredPerSecond: spec.rate };
  } finally {
    await clients.stop();
  }
}

const SUBSCRIBE_WARMUP_SECONDS = 2;

/** Runs the gRPC phases against a running service; topics are prefixed so they never meet the HTTP phases'. */
export async function grpcPhases(port: number, procs: Processes, o: GrpcBenchOptions, report: (r: PhaseResult) => void = () => {}): Promise<PhaseResult[]> {
  const client = connect(port, o.token);
  const results: PhaseResult[] = [];
  const add = (r: PhaseResult) => (results.push(r), report(r));
  const runs = (phase: GrpcPhase) => (o.phases ?? DEFAULT_GRPC_PHASES).includes(phase);
  try {
    if (runs('enqueue')) add(await enqueuePhase(client, procs, o, 'bench.grpc.single'));
    if (runs('enqueue-batch') || runs('dequeue-batch')) {
      const batched = await enqueueBatchPhase(client, procs, o, 'bench.grpc.batch');
      if (runs('enqueue-batch')) add(batched);
      if (runs('dequeue-batch')) add(await dequeueAckBatchPhase(client, procs, o, 'bench.grpc.batch', batched.messages));
    }
    const rate = o.subscribeRatePerSecond ?? 1000;
    const streams = o.subscribeStreams ?? 8;
    if (runs('subscribe')) add(await subscribePhase(port, procs, o, 'bench.grpc.subscribe', { rate, streams, acks: 'each', clients: 'one-process' }));
    if (runs('subscribe-ack-batch')) add(await subscribePhase(port, procs, o, 'bench.grpc.subscribe-ack-batch', { rate, streams, acks: 'batch', clients: 'one-process' }));
    if (runs('subscribe-one-stream')) {
      // What one stream carries (target: at least 5,000 msg/s delivered and acked): offered more than that, so
      // the figure is the stream's and not the producer's pace; fed by batches and acked in batches, as a
      // consumer at thousands per second runs (10,000 unary calls a second would measure the client process).
      const oneStream: SubscribeSpec = { rate: 8000, streams: 1, maxInFlight: 100, enqueues: 'batch', acks: 'batch', clients: 'one-process', capacity: true };
      add(await subscribePhase(port, procs, o, 'bench.grpc.subscribe-one-stream', oneStream));
    }
    if (runs('subscribe-tuned')) add(await subscribePhase(port, procs, o, 'bench.grpc.subscribe-tuned', { rate, streams: 4, acks: 'each', clients: 'tuned' }));
  } finally {
    client.close();
  }
  return results;
}

/** A misspelt phase would silently measure nothing. */
export function parsePhases(list: string): GrpcPhase[] {
  const phases = list.split(',').map((p) => p.trim());
  const unknown = phases.filter((p) => !(GRPC_PHASES as readonly string[]).includes(p));
  if (unknown.length > 0) throw new Error(`BENCH_GRPC_PHASES: unknown phase ${unknown.join(', ')} (phases: ${GRPC_PHASES.join(', ')})`);
  return phases as GrpcPhase[];
}

/** Standalone: one engine, a fresh database and a `conveyor serve` process, then the gRPC phases. */
async function main(): Promise<void> {
  const engine = process.argv[2] ?? 'mysql';
  const db = engine === 'sqlite' ? sqliteDatabase() : await mysqlDatabase(process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306');
  const service = await startService(db.url, process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []);
  try {
    const procs = { serverPid: service.pid, dbPid: engine === 'mysql' ? findProcess(['mariadbd', 'mysqld']) : undefined };
    const options: GrpcBenchOptions = {
      count: Number(process.env.BENCH_COUNT ?? 100_000),
      deadlineMs: Number(process.env.BENCH_DURATION ?? 30) * 1000,
      payloadBytes: 256,
      concurrency: 64,
      subscribeStreams: Number(process.env.BENCH_SUBSCRIBE_STREAMS ?? 8),
      phases: process.env.BENCH_GRPC_PHASES ? parsePhases(process.env.BENCH_GRPC_PHASES) : undefined,
    };
    process.stdout.write(`${db.version}, options ${JSON.stringify(options)}\n`);
    await grpcPhases(grpcPortOf(service.output()), procs, options, (r) => process.stdout.write(`${JSON.stringify(r)}\n`));
    if (process.env.BENCH_METRICS) {
      const text = await (await fetch(`http://127.0.0.1:${service.port}/metrics`)).text();
      process.stdout.write(`${text.split('\n').filter((l) => new RegExp(process.env.BENCH_METRICS!).test(l)).join('\n')}\n`);
    }
  } finally {
    await service.stop();
    await db.drop();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench/grpc: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
