import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { LOADER_OPTIONS, queueProtoPath } from '../src/grpc/proto.js';
import { grpcAuth } from './auth.js';
import { makePayload } from './phases.js';

/**
 * The clients of the Subscribe phases: a producer sending single Enqueues at a steady rate, and a subscriber
 * holding the Subscribe streams and acking what they deliver. By default both run in ONE process with
 * Node's default flags, as a user's application would (`startCombined`). The tuned variant (a labelled
 * extra) gives each its own process with a small young generation (`startProducer`, `startSubscriber`): in
 * one process their calls and their garbage collector's pauses share one event loop and land in each other's
 * latency.
 *
 * The producer writes `process.hrtime.bigint()` at the start of each payload; on Linux that is
 * CLOCK_MONOTONIC, one clock for every process of the machine, so the subscriber's latency is a plain
 * difference.
 *
 * Both run with a small young generation (CLIENT_NODE_ARGS): Node's HTTP/2 client streams outlive every
 * scavenge until a full collection (measured: ~25% of what a client allocates per call survives, with
 * grpc-js and with bare node:http2 alike), so a client's scavenge pause grows with its young generation. At
 * the default size the load generators paused ~6 ms every ~170 ms, and those pauses were most of the
 * measured p99; at 2 MB they pause ~1.6 ms more often. The service keeps its own flags (SERVICE_NODE_ARGS).
 */

/** How the subscriber acks: one unary Ack per delivery, or one AckBatch per read of the stream. */
export type SubscribeAcks = 'each' | 'batch';
/** How the producer sends: one unary Enqueue per message, or one EnqueueBatch per 10 ms tick. */
export type SubscribeEnqueues = 'each' | 'batch';

export const CLIENT_NODE_ARGS = ['--max-semi-space-size=2'];

/** Width of the send time at the start of a payload: nanoseconds, space-padded. */
const SENT_AT_WIDTH = 20;

interface ClientOptions {
  port: number;
  topic: string;
  /** Bearer token (auth on); the phase is shorter than a token's 15 minutes. */
  token?: string;
}

interface SubscriberOptions {
  streams: number;
  acks: SubscribeAcks;
  /** SubscribeRequest.max_in_flight: deliveries a stream may have unacked (the service's default when unset). */
  maxInFlight?: number;
}

interface ProducerOptions {
  payloadBytes: number;
  enqueues: SubscribeEnqueues;
}

type Role = ({ role: 'producer' } & ProducerOptions) | ({ role: 'subscriber' } & SubscriberOptions) | ({ role: 'combined' } & ProducerOptions & SubscriberOptions);

type ToChild = { type: 'run'; total: number; rate: number } | { type: 'report' } | { type: 'stop' };
type FromChild =
  | { type: 'ready' }
  | { type: 'armed' }
  | { type: 'done'; latenciesMs: number[]; acked?: number; enqueueLatenciesMs?: number[] }
  | { type: 'error'; message: string };

/** The parent's handle on a client process. */
export interface ClientProcess {
  pid: number;
  /**
   * Starts a run once the child is ready for it (the subscriber counts from then on). Producer: sends
   * `total` Enqueues at `rate` per second; `finished` has their call latencies. Subscriber: `finished`
   * resolves when `total` deliveries were acked, with their enqueue-to-delivery latencies and the count acked.
   */
  begin(total: number, rate: number, timeoutMs: number): Promise<{ finished: Promise<{ latenciesMs: number[]; acked: number }> }>;
  stop(): Promise<void>;
}

const SELF = fileURLToPath(import.meta.url);

export const startProducer = (options: ClientOptions & ProducerOptions) => start(options, { role: 'producer', payloadBytes: options.payloadBytes, enqueues: options.enqueues }, CLIENT_NODE_ARGS);

export const startSubscriber = (options: ClientOptions & SubscriberOptions) => start(options, { role: 'subscriber', ...subscriberOf(options) }, CLIENT_NODE_ARGS);

/** Producer and subscriber in one default-flag process; `finished` carries the delivery latencies, `enqueues` the calls'. */
export async function startCombined(options: ClientOptions & SubscriberOptions & ProducerOptions) {
  let enqueues: number[] = [];
  const child = await start(options, { role: 'combined', payloadBytes: options.payloadBytes, enqueues: options.enqueues, ...subscriberOf(options) }, [], (m) => (enqueues = m.enqueueLatenciesMs ?? []));
  return { ...child, enqueues: () => enqueues };
}

const subscriberOf = (o: SubscriberOptions): SubscriberOptions => ({ streams: o.streams, acks: o.acks, maxInFlight: o.maxInFlight });

/** Forks a client process and waits until it is connected (the subscriber: its streams open and waiting). */
async function start(options: ClientOptions, role: Role, nodeArgs: string[], onDone: (message: FromChild & { type: 'done' }) => void = () => {}): Promise<ClientProcess> {
  const child = fork(SELF, [JSON.stringify({ ...options, ...role })], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [...nodeArgs, ...(process.env.BENCH_CLIENT_NODE_ARGS?.split(' ').filter(Boolean) ?? [])],
  });
  // An inbox, not one listener per expected message: two messages can arrive in one read.
  const inbox: FromChild[] = [];
  let waiting: ((message: FromChild) => void) | undefined;
  child.on('message', (message: FromChild) => {
    if (waiting) {
      const deliver = waiting;
      waiting = undefined;
      deliver(message);
    } else inbox.push(message);
  });
  const next = (timeoutMs: number) =>
    new Promise<FromChild>((resolve, reject) => {
      const queued = inbox.shift();
      if (queued) return settle(queued);
      const timer = setTimeout(() => fail(new Error(`bench ${role.role}: no reply within ${timeoutMs} ms`)), timeoutMs);
      const onExit = (code: number | null) => fail(new Error(`the bench ${role.role} exited (${code})`));
      child.once('exit', onExit);
      waiting = (message) => {
        clearTimeout(timer);
        child.off('exit', onExit);
        settle(message);
      };
      function fail(err: Error) {
        waiting = undefined;
        child.off('exit', onExit);
        reject(err);
      }
      function settle(message: FromChild) {
        if (message.type === 'error') reject(new Error(`bench ${role.role}: ${message.message}`));
        else resolve(message);
      }
    });
  await next(30_000);
  return {
    pid: child.pid!,
    async begin(total, rate, timeoutMs) {
      // A 'done' that crossed the previous run's report in flight belongs to that run, not this one.
      inbox.length = 0;
      child.send({ type: 'run', total, rate } satisfies ToChild);
      await next(30_000);
      // A service that cannot keep up acks fewer than `total` in time: the run then reports what arrived.
      const finished = next(timeoutMs).catch(async () => {
        child.send({ type: 'report' } satisfies ToChild);
        return next(10_000);
      });
      return {
        finished: finished.then((message) => {
          if (message.type !== 'done') return { latenciesMs: [], acked: 0 };
          onDone(message);
          return { latenciesMs: message.latenciesMs, acked: message.acked ?? 0 };
        }),
      };
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'stop' } satisfies ToChild);
      await exited;
    },
  };
}

type QueueClient = grpc.Client &
  Record<string, (request: object, callback: (err: grpc.ServiceError | null) => void) => void> & {
    Subscribe(request: object): grpc.ClientReadableStream<{ id: string; payload: Buffer }>;
    AckBatch(request: { ids: string[] }, callback: (err: grpc.ServiceError | null, reply: { acked: string[] }) => void): void;
  };

function connect(port: number, token?: string): QueueClient {
  const definition = protoLoader.loadSync(queueProtoPath(), LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition) as unknown as { queue: { QueueService: grpc.ServiceClientConstructor } };
  return new pkg.queue.QueueService(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    interceptors: token ? [grpcAuth(() => token)] : [],
  }) as unknown as QueueClient;
}

const send = (message: FromChild) => process.send!(message);

/**
 * Enqueues in ticks of 10 ms, each tick catching up to the rate: one Enqueue per message, or the tick's
 * messages as EnqueueBatch calls of at most 100 (a producer at thousands per second batches). Latency per
 * message, from its call to the call's reply.
 */
function produce(client: QueueClient, options: ClientOptions & ProducerOptions, total: number, rate: number, done: (latenciesMs: number[]) => void) {
  const tickMs = 10;
  const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
  const filler = makePayload(Math.max(0, options.payloadBytes - SENT_AT_WIDTH), 3);
  const latenciesMs: number[] = [];
  const started = performance.now();
  let sent = 0;
  const request = () => ({ topic: options.topic, payload: Buffer.from(String(process.hrtime.bigint()).padStart(SENT_AT_WIDTH, ' ') + filler) });
  const replied = (count: number, at: number) => {
    const ms = performance.now() - at;
    for (let i = 0; i < count; i++) latenciesMs.push(ms);
    if (latenciesMs.length === total) done(latenciesMs);
  };
  const tick = () => {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate) + perTick);
    while (sent < due) {
      const at = performance.now();
      if (options.enqueues === 'each') {
        client.Enqueue(request(), () => replied(1, at));
        sent++;
        continue;
      }
      const requests = Array.from({ length: Math.min(100, due - sent) }, request);
      client.EnqueueBatch({ requests }, () => replied(requests.length, at));
      sent += requests.length;
    }
    if (sent < total) setTimeout(tick, tickMs);
  };
  tick();
  return { partial: () => latenciesMs };
}

/** One subscriber run: the enqueue-to-delivery latencies, and how many of those deliveries the service acked. */
interface Run {
  total: number;
  latenciesMs: number[];
  acked: number;
  /** Done or reported: later deliveries and acks no longer count. */
  ended: boolean;
}

/**
 * Opens the streams and acks every delivery; a run counts and times the deliveries until `total` of them are
 * acked (the Ack or AckBatch replied): a stream's window frees when an ack arrives, before its commit, so
 * deliveries alone could run ahead of what the service has settled.
 */
function subscribe(client: QueueClient, options: ClientOptions & SubscriberOptions, done: (run: Run) => void) {
  let run: Run | undefined;
  const settled = (of: Run | undefined, count: number) => {
    if (!of || of.ended) return;
    of.acked += count;
    if (of.acked >= of.total) {
      of.ended = true;
      done(of);
    }
  };
  const streams = Array.from({ length: options.streams }, () => {
    const request = { topic: options.topic, visibility_timeout_seconds: 60, ...(options.maxInFlight ? { max_in_flight: options.maxInFlight } : {}) };
    const stream = client.Subscribe(request);
    let unacked: string[] = [];
    const ack = (id: string, of: Run | undefined) => {
      if (options.acks === 'each') return client.Ack({ id }, (err) => err || settled(of, 1));
      // What one read of the stream delivered goes back as one AckBatch, as Pub/Sub-style clients batch acks.
      if (unacked.push(id) > 1) return;
      setImmediate(() => {
        const ids = unacked;
        unacked = [];
        client.AckBatch({ ids }, (err, reply) => err || settled(of, reply.acked.length));
      });
    };
    stream.on('data', (message) => {
      const sentAt = BigInt(message.payload.toString('latin1', 0, SENT_AT_WIDTH).trim());
      const of = run && !run.ended ? run : undefined;
      of?.latenciesMs.push(Number(process.hrtime.bigint() - sentAt) / 1e6);
      ack(message.id, of);
    });
    stream.on('error', () => undefined);
    return stream;
  });
  return {
    start: (total: number) => void (run = { total, latenciesMs: [], acked: 0, ended: false }),
    /** The run so far, which ends it (a late 'done' would reach the parent as the next run's reply). */
    report: (): Run => {
      if (run) run.ended = true;
      return run ?? { total: 0, latenciesMs: [], acked: 0, ended: true };
    },
    close: () => streams.forEach((stream) => stream.cancel()),
  };
}

/** The child: connects, reports ready, runs what the parent asks until told to stop. */
function serve(options: ClientOptions & Role): void {
  const client = connect(options.port, options.token);
  // Combined: one report once both halves are done (deliveries, and the producer's call latencies).
  let deliveries: Run | undefined;
  let enqueues: number[] | undefined;
  const combinedDone = () => {
    if (deliveries && enqueues) send({ type: 'done', latenciesMs: deliveries.latenciesMs, acked: deliveries.acked, enqueueLatenciesMs: enqueues });
  };
  const onDelivered =
    options.role === 'combined' ? (r: Run) => ((deliveries = r), combinedDone()) : (r: Run) => send({ type: 'done', latenciesMs: r.latenciesMs, acked: r.acked });
  const onProduced = options.role === 'combined' ? (ms: number[]) => ((enqueues = ms), combinedDone()) : (ms: number[]) => send({ type: 'done', latenciesMs: ms });
  const subscriber = options.role === 'producer' ? undefined : subscribe(client, options, onDelivered);
  let producing: { partial(): number[] } | undefined;
  process.on('message', (message: ToChild) => {
    if (message.type === 'run') {
      deliveries = enqueues = undefined;
      if (subscriber) subscriber.start(message.total);
      send({ type: 'armed' });
      if (options.role !== 'subscriber') producing = produce(client, options, message.total, message.rate, onProduced);
      return;
    }
    if (message.type === 'report') {
      if (!subscriber) return send({ type: 'done', latenciesMs: [...producing!.partial()] });
      const arrived = subscriber.report();
      send({ type: 'done', latenciesMs: arrived.latenciesMs, acked: arrived.acked, enqueueLatenciesMs: options.role === 'combined' ? [...producing!.partial()] : undefined });
      return;
    }
    subscriber?.close();
    client.close();
    process.exit(0);
  });
  // The parent is gone (interrupted bench): nothing left to report to.
  process.on('disconnect', () => process.exit(0));
  // Let the subscriber's streams reach their wait before the producer starts.
  setTimeout(() => send({ type: 'ready' }), subscriber ? 500 : 0);
}

if (process.argv[1] === SELF && process.send) {
  try {
    serve(JSON.parse(process.argv[2]) as ClientOptions & Role);
  } catch (err) {
    process.send({ type: 'error', message: (err as Error).message } satisfies FromChild);
  }
}
