import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { LOADER_OPTIONS, queueProtoPath } from '../src/grpc/proto.js';
import { makePayload } from './phases.js';

/**
 * The clients of the Subscribe phase, each in a process of its own: a producer sending single Enqueues at a
 * steady rate, and a subscriber holding the Subscribe streams and acking what they deliver. In production
 * producers and consumers are different processes; in one bench process their calls and their garbage
 * collector's pauses would share one event loop and land in each other's latency.
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

export const CLIENT_NODE_ARGS = ['--max-semi-space-size=2'];

/** Width of the send time at the start of a payload: nanoseconds, space-padded. */
const SENT_AT_WIDTH = 20;

interface ClientOptions {
  port: number;
  topic: string;
}

type Role = { role: 'producer'; payloadBytes: number } | { role: 'subscriber'; streams: number; acks: SubscribeAcks };

type ToChild = { type: 'run'; total: number; rate: number } | { type: 'stop' };
type FromChild = { type: 'ready' } | { type: 'armed' } | { type: 'done'; latenciesMs: number[] } | { type: 'error'; message: string };

/** The parent's handle on a client process. */
export interface ClientProcess {
  pid: number;
  /**
   * Starts a run once the child is ready for it (the subscriber counts from then on). Producer: sends
   * `total` Enqueues at `rate` per second; `finished` has their call latencies. Subscriber: `finished`
   * resolves when `total` messages were delivered, with their enqueue-to-delivery latencies.
   */
  begin(total: number, rate: number, timeoutMs: number): Promise<{ finished: Promise<number[]> }>;
  stop(): Promise<void>;
}

const SELF = fileURLToPath(import.meta.url);

export const startProducer = (options: ClientOptions & { payloadBytes: number }) => start(options, { role: 'producer', payloadBytes: options.payloadBytes });

export const startSubscriber = (options: ClientOptions & { streams: number; acks: SubscribeAcks }) =>
  start(options, { role: 'subscriber', streams: options.streams, acks: options.acks });

/** Forks a client process and waits until it is connected (the subscriber: its streams open and waiting). */
async function start(options: ClientOptions, role: Role): Promise<ClientProcess> {
  const child = fork(SELF, [JSON.stringify({ ...options, ...role })], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [...CLIENT_NODE_ARGS, ...(process.env.BENCH_CLIENT_NODE_ARGS?.split(' ').filter(Boolean) ?? [])],
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
      child.send({ type: 'run', total, rate } satisfies ToChild);
      await next(30_000);
      return { finished: next(timeoutMs).then((message) => (message.type === 'done' ? message.latenciesMs : [])) };
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
  };

function connect(port: number): QueueClient {
  const definition = protoLoader.loadSync(queueProtoPath(), LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition) as unknown as { queue: { QueueService: grpc.ServiceClientConstructor } };
  return new pkg.queue.QueueService(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as QueueClient;
}

const send = (message: FromChild) => process.send!(message);

/** Enqueues in ticks of 10 ms, each tick catching up to the rate; latency per call, from the call to its reply. */
function produce(client: QueueClient, options: ClientOptions & { payloadBytes: number }, total: number, rate: number): void {
  const tickMs = 10;
  const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
  const filler = makePayload(Math.max(0, options.payloadBytes - SENT_AT_WIDTH), 3);
  const latenciesMs: number[] = [];
  const started = performance.now();
  let sent = 0;
  const replied = () => {
    if (latenciesMs.length === total) send({ type: 'done', latenciesMs });
  };
  const tick = () => {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate) + perTick);
    for (; sent < due; sent++) {
      const at = performance.now();
      const payload = Buffer.from(String(process.hrtime.bigint()).padStart(SENT_AT_WIDTH, ' ') + filler);
      client.Enqueue({ topic: options.topic, payload }, () => {
        latenciesMs.push(performance.now() - at);
        replied();
      });
    }
    if (sent < total) setTimeout(tick, tickMs);
  };
  tick();
}

/** Opens the streams and acks every delivery; a run counts and times the deliveries until `total`. */
function subscribe(client: QueueClient, options: ClientOptions & { streams: number; acks: SubscribeAcks }) {
  let run: { total: number; latenciesMs: number[] } | undefined;
  const ignore = () => undefined;
  const streams = Array.from({ length: options.streams }, () => {
    const stream = client.Subscribe({ topic: options.topic, visibility_timeout_seconds: 60 });
    let unacked: string[] = [];
    const ack = (id: string) => {
      if (options.acks === 'each') return client.Ack({ id }, ignore);
      // What one read of the stream delivered goes back as one AckBatch, as Pub/Sub-style clients batch acks.
      if (unacked.push(id) > 1) return;
      setImmediate(() => {
        const ids = unacked;
        unacked = [];
        client.AckBatch({ ids }, ignore);
      });
    };
    stream.on('data', (message) => {
      const sentAt = BigInt(message.payload.toString('latin1', 0, SENT_AT_WIDTH).trim());
      ack(message.id);
      if (!run) return;
      run.latenciesMs.push(Number(process.hrtime.bigint() - sentAt) / 1e6);
      if (run.latenciesMs.length === run.total) {
        send({ type: 'done', latenciesMs: run.latenciesMs });
        run = undefined;
      }
    });
    stream.on('error', ignore);
    return stream;
  });
  return {
    start: (total: number) => void (run = { total, latenciesMs: [] }),
    close: () => streams.forEach((stream) => stream.cancel()),
  };
}

/** The child: connects, reports ready, runs what the parent asks until told to stop. */
function serve(options: ClientOptions & Role): void {
  const client = connect(options.port);
  const subscriber = options.role === 'subscriber' ? subscribe(client, options) : undefined;
  process.on('message', (message: ToChild) => {
    if (message.type === 'run') {
      if (subscriber) subscriber.start(message.total);
      send({ type: 'armed' });
      if (options.role === 'producer') produce(client, options, message.total, message.rate);
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
