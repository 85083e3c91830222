import { setTimeout as sleep } from 'node:timers/promises';
import { CpuMeter } from './cpu.js';
import { BenchClient, expectStatus } from './http-client.js';
import { LatencyRecorder, type LatencySummary } from './latency.js';

export interface PhaseResult {
  phase: string;
  messages: number;
  seconds: number;
  msgsPerSecond: number;
  /** Request latency per request kind (enqueue, dequeue, ack, ack-batch). */
  latency: Record<string, LatencySummary>;
  serverCpuSeconds?: number;
  serverCpuUsPerMessage?: number;
  dbCpuSeconds?: number;
  dbCpuUsPerMessage?: number;
  clientCpuSeconds: number;
  /** Subscribe phases: the rate the producer offered; msg/s well below it means the phase fell behind. */
  offeredPerSecond?: number;
}

export interface Processes {
  serverPid: number;
  /** The local database server, when there is one (MySQL); SQLite runs inside the service. */
  dbPid?: number;
  /** Client processes besides this one (the Subscribe phase's producer and subscriber), metered as client CPU. */
  clientPids?: number[];
}

/** Runs `work`, timing it and metering the CPU of the service, the database server and this client. */
export async function measured(
  phase: string,
  procs: Processes,
  work: (recorders: (kind: string) => LatencyRecorder) => Promise<number>,
  /** Latencies kept across calls (the slices of one phase, bench/ordering.ts): the result summarises them all. */
  recorders = new Map<string, LatencyRecorder>(),
): Promise<PhaseResult> {
  const recorder = (kind: string) => {
    let r = recorders.get(kind);
    if (!r) recorders.set(kind, (r = new LatencyRecorder()));
    return r;
  };
  const meter = new CpuMeter([procs.serverPid, procs.dbPid, ...(procs.clientPids ?? [])]);
  const clientCpu = process.cpuUsage();
  const started = performance.now();
  const messages = await work(recorder);
  const seconds = (performance.now() - started) / 1000;
  const [serverCpu, dbCpu, ...otherClients] = meter.elapsed();
  const client = process.cpuUsage(clientCpu);
  const perMessage = (cpu: number | undefined) => (cpu === undefined || messages === 0 ? undefined : Math.round((cpu / messages) * 1e6 * 10) / 10);
  const round = (n: number | undefined, digits = 2) => (n === undefined ? undefined : Math.round(n * 10 ** digits) / 10 ** digits);
  return {
    phase,
    messages,
    seconds: round(seconds, 3)!,
    msgsPerSecond: Math.round(messages / seconds),
    latency: Object.fromEntries([...recorders].map(([kind, r]) => [kind, r.summary()])),
    serverCpuSeconds: round(serverCpu),
    serverCpuUsPerMessage: perMessage(serverCpu),
    dbCpuSeconds: round(dbCpu),
    dbCpuUsPerMessage: perMessage(dbCpu),
    clientCpuSeconds: round((client.user + client.system) / 1e6 + otherClients.reduce<number>((sum, cpu) => sum + (cpu ?? 0), 0))!,
  };
}

/** A printable payload of exactly `bytes` bytes (ASCII, so no JSON escaping changes its size). */
export function makePayload(bytes: number, seed: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  let out = '';
  let x = seed * 2654435761 + 1;
  for (let i = 0; i < bytes; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out += alphabet[x % alphabet.length];
  }
  return out;
}

export interface EnqueueOptions {
  topic: string;
  count: number;
  deadlineMs: number;
  concurrency: number;
  payloadBytes: number;
  /** Messages carry ordering keys, this many taken in turn (the ordered variants). */
  orderingKeys?: number;
  /** The phase's name when it is not the plain one. */
  name?: string;
  /** Latencies shared with other runs of the same phase (see measured). */
  recorders?: Map<string, LatencyRecorder>;
}

/** The enqueue body of message `n`: with ordering keys, key `n % keys`, so every key gets its share in turn. */
function enqueueBody(topic: string, payload: string, n: number, orderingKeys?: number): Record<string, unknown> {
  return orderingKeys ? { topic, payload, ordering_key: `key-${n % orderingKeys}` } : { topic, payload };
}

const payloadsOf = (bytes: number) => Array.from({ length: 64 }, (_, i) => makePayload(bytes, i));

async function enqueueOne(client: BenchClient, latency: LatencyRecorder, body: Record<string, unknown>): Promise<void> {
  expectStatus(await latency.time(() => client.post('/api/messages', body)), 201, 'enqueue');
}

/** One dequeue of up to `count` messages: the ids it claimed. */
async function dequeueIds(client: BenchClient, latency: LatencyRecorder, topic: string, count: number, group?: string): Promise<string[]> {
  const res = await latency.time(() => client.post('/api/messages/dequeue', group ? { topic, count, consumer_group: group } : { topic, count }));
  return (JSON.parse(expectStatus(res, 200, 'dequeue').body) as { messages: Array<{ id: string }> }).messages.map((m) => m.id);
}

/** Acks every id with a request of its own, `concurrency` of them in flight. */
async function ackEach(client: BenchClient, latency: LatencyRecorder, ids: string[], concurrency: number): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < ids.length) expectStatus(await latency.time(() => client.post(`/api/messages/${ids[next++]}/ack`, {})), 204, 'ack');
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, ids.length) }, lane));
}

/** Phase 1: `concurrency` clients each send single-message enqueues back to back until `count` or the deadline. */
export function enqueuePhase(client: BenchClient, procs: Processes, o: EnqueueOptions): Promise<PhaseResult> {
  const payloads = payloadsOf(o.payloadBytes);
  return measured(o.name ?? 'enqueue', procs, async (recorder) => {
    const latency = recorder('enqueue');
    const deadline = performance.now() + o.deadlineMs;
    let issued = 0;
    let stored = 0;
    const worker = async () => {
      while (issued < o.count && performance.now() < deadline) {
        const n = issued++;
        await enqueueOne(client, latency, enqueueBody(o.topic, payloads[n % payloads.length], n, o.orderingKeys));
        stored++;
      }
    };
    await Promise.all(Array.from({ length: o.concurrency }, worker));
    return stored;
  }, o.recorders);
}

/**
 * Fills a topic through the batch API (unmeasured set-up for the batch-ack variant). With `delayedShare`, that
 * share of the messages, spread through the batches, carries a delay of 1-5 s (the delayed-messages variant).
 */
export async function preload(client: BenchClient, o: Omit<EnqueueOptions, 'deadlineMs'> & { delayedShare?: number }): Promise<void> {
  const payload = makePayload(o.payloadBytes, 7);
  const every = o.delayedShare ? Math.round(1 / o.delayedShare) : 0;
  let left = o.count;
  let sent = 0;
  const message = () => {
    const n = sent++;
    const body = enqueueBody(o.topic, payload, n, o.orderingKeys);
    return every > 0 && n % every === every - 1 ? { ...body, delay_seconds: 1 + (n % 5) } : body;
  };
  const worker = async () => {
    while (left > 0) {
      const n = Math.min(1000, left);
      left -= n;
      const messages = Array.from({ length: n }, message);
      expectStatus(await client.post('/api/messages/batch', { messages }), 201, 'batch enqueue');
    }
  };
  await Promise.all(Array.from({ length: Math.min(4, o.concurrency) }, worker));
}

export interface DrainOptions {
  topic: string;
  /** Messages to consume; consumers stop there, at the deadline, or when a dequeue comes back empty. */
  expected: number;
  deadlineMs: number;
  consumers: number;
  dequeueCount: number;
  ackMode: 'single' | 'batch';
  /** In-flight per-message acks per consumer (single mode). */
  ackConcurrency: number;
  /** The phase's name when it is not the plain one of its ack mode. */
  name?: string;
  /** Latencies shared with other runs of the same phase (see measured). */
  recorders?: Map<string, LatencyRecorder>;
  /** A consumer group of a fan-out topic to drain instead of the topic itself. */
  group?: string;
}

/** Phase 2: consumers dequeue `dequeueCount` at a time and ack every message, one request each or one batch. */
export function dequeueAckPhase(client: BenchClient, procs: Processes, o: DrainOptions): Promise<PhaseResult> {
  const name = o.name ?? (o.ackMode === 'single' ? 'dequeue+ack' : 'dequeue+batch-ack');
  return measured(name, procs, async (recorder) => {
    const dequeueLatency = recorder('dequeue');
    const ackLatency = recorder(o.ackMode === 'single' ? 'ack' : 'ack-batch');
    const deadline = performance.now() + o.deadlineMs;
    let acked = 0;
    const consumer = async () => {
      while (acked < o.expected && performance.now() < deadline) {
        const ids = await dequeueIds(client, dequeueLatency, o.topic, o.dequeueCount, o.group);
        if (ids.length === 0) return;
        if (o.ackMode === 'batch') {
          const ack = await ackLatency.time(() => client.post('/api/messages/ack', o.group ? { ids, consumer_group: o.group } : { ids }));
          const body = JSON.parse(expectStatus(ack, 200, 'batch ack').body) as { acked: string[] };
          if (body.acked.length !== ids.length) throw new Error(`batch ack: ${ids.length - body.acked.length} of ${ids.length} not acked`);
        } else {
          await ackEach(client, ackLatency, ids, o.ackConcurrency);
        }
        acked += ids.length;
      }
    };
    await Promise.all(Array.from({ length: o.consumers }, consumer));
    return acked;
  }, o.recorders);
}

export type PipelineOptions = EnqueueOptions & Pick<DrainOptions, 'consumers' | 'dequeueCount' | 'ackConcurrency'>;

/** How long a pipeline consumer waits after an empty dequeue (dequeue never blocks, docs/http-api.md). */
const POLL_MS = 5;

/**
 * Phase 4, the traffic of a user's system: phase 1's enqueue clients and phase 2's consumers (per-message
 * acks) at the same time on one topic. It ends when `count` messages are stored and every one is acked, or
 * at the deadline; a consumer that finds the topic empty polls again, as a real one waits for producers, and
 * stops only once the producers are done and nothing is left unacked. msg/s counts acked messages.
 */
export function pipelinePhase(client: BenchClient, procs: Processes, o: PipelineOptions): Promise<PhaseResult> {
  const payloads = payloadsOf(o.payloadBytes);
  return measured('pipeline', procs, async (recorder) => {
    const enqueueLatency = recorder('enqueue');
    const dequeueLatency = recorder('dequeue');
    const ackLatency = recorder('ack');
    const deadline = performance.now() + o.deadlineMs;
    let issued = 0;
    let stored = 0;
    let acked = 0;
    let producing = true;
    const producer = async () => {
      while (issued < o.count && performance.now() < deadline) {
        const n = issued++;
        await enqueueOne(client, enqueueLatency, enqueueBody(o.topic, payloads[n % payloads.length], n, o.orderingKeys));
        stored++;
      }
    };
    const consumer = async () => {
      while ((producing || acked < stored) && performance.now() < deadline) {
        const ids = await dequeueIds(client, dequeueLatency, o.topic, o.dequeueCount);
        if (ids.length === 0) {
          await sleep(POLL_MS);
          continue;
        }
        await ackEach(client, ackLatency, ids, o.ackConcurrency);
        acked += ids.length;
      }
    };
    const producers = Promise.all(Array.from({ length: o.concurrency }, producer)).finally(() => (producing = false));
    await Promise.all([producers, ...Array.from({ length: o.consumers }, consumer)]);
    return acked;
  });
}
