import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { LOADER_OPTIONS, queueProtoPath } from '../src/grpc/proto.js';

/**
 * The consumers of the Subscribe phase, in a process of their own: in production producers and consumers
 * are different processes, and in one bench process the producer's Enqueue calls, the streams and the acks
 * share one event loop and one garbage collector, whose pauses then land in the measured latency.
 * The producer writes `process.hrtime.bigint()` at the start of each payload; on Linux that is
 * CLOCK_MONOTONIC, one clock for every process of the machine, so the latency is a plain difference.
 */

/** How the subscribers ack: one unary Ack per delivery, or one AckBatch per read of the stream. */
export type SubscribeAcks = 'each' | 'batch';

export interface SubscriberOptions {
  port: number;
  topic: string;
  streams: number;
  acks: SubscribeAcks;
}

/** Width of the send time at the start of a payload: nanoseconds, space-padded. */
export const SENT_AT_WIDTH = 20;

export const sentAtPrefix = () => String(process.hrtime.bigint()).padStart(SENT_AT_WIDTH, ' ');

type ToChild = { type: 'run'; total: number } | { type: 'stop' };
type FromChild = { type: 'ready' } | { type: 'done'; delivered: number; latenciesMs: number[] } | { type: 'error'; message: string };

/** The parent's handle on a subscriber process. */
export interface Subscriber {
  pid: number;
  /** Resolves when `total` messages were delivered (or after `timeoutMs`), with their latencies. */
  run(total: number, timeoutMs: number): Promise<{ delivered: number; latenciesMs: number[] }>;
  stop(): Promise<void>;
}

const SELF = fileURLToPath(import.meta.url);

/** Forks the subscriber process and waits until its streams are open and waiting. */
export async function startSubscriber(options: SubscriberOptions): Promise<Subscriber> {
  const child: ChildProcess = fork(SELF, [JSON.stringify(options)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: process.env.BENCH_SUBSCRIBER_NODE_ARGS?.split(' ').filter(Boolean) ?? [],
  });
  const next = () =>
    new Promise<FromChild>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the bench subscriber exited (${code})`));
      child.once('exit', onExit);
      child.once('message', (message: FromChild) => {
        child.off('exit', onExit);
        if (message.type === 'error') reject(new Error(`bench subscriber: ${message.message}`));
        else resolve(message);
      });
    });
  await next();
  return {
    pid: child.pid!,
    async run(total, timeoutMs) {
      const done = next();
      child.send({ type: 'run', total } satisfies ToChild);
      const timeout = new Promise<FromChild>((resolve) => setTimeout(() => resolve({ type: 'done', delivered: -1, latenciesMs: [] }), timeoutMs).unref());
      const result = await Promise.race([done, timeout]);
      if (result.type !== 'done' || result.delivered < 0) throw new Error(`bench subscriber: not all ${total} messages arrived within ${timeoutMs} ms`);
      return result;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'stop' } satisfies ToChild);
      await exited;
    },
  };
}

/** The child: opens the streams, acks every delivery, and counts and times the deliveries of each run. */
function serve(options: SubscriberOptions): void {
  const send = (message: FromChild) => process.send!(message);
  const definition = protoLoader.loadSync(queueProtoPath(), LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition) as unknown as { queue: { QueueService: grpc.ServiceClientConstructor } };
  const client = new pkg.queue.QueueService(`127.0.0.1:${options.port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client &
    Record<string, (request: object, callback: (err: grpc.ServiceError | null) => void) => void> & {
      Subscribe(request: object): grpc.ClientReadableStream<{ id: string; payload: Buffer }>;
    };
  let run: { total: number; delivered: number; latenciesMs: number[] } | undefined;
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
      if (++run.delivered === run.total) {
        send({ type: 'done', delivered: run.delivered, latenciesMs: run.latenciesMs });
        run = undefined;
      }
    });
    stream.on('error', ignore);
    return stream;
  });
  process.on('message', (message: ToChild) => {
    if (message.type === 'run') run = { total: message.total, delivered: 0, latenciesMs: [] };
    else {
      for (const stream of streams) stream.cancel();
      client.close();
      process.exit(0);
    }
  });
  // The parent is gone (interrupted bench): nothing left to report to.
  process.on('disconnect', () => process.exit(0));
  // Let the streams reach their wait before the producer starts.
  setTimeout(() => send({ type: 'ready' }), 500);
}

if (process.argv[1] === SELF && process.send) {
  try {
    serve(JSON.parse(process.argv[2]) as SubscriberOptions);
  } catch (err) {
    process.send({ type: 'error', message: (err as Error).message } satisfies FromChild);
  }
}
