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
): Promise<PhaseResult> {
  const recorders = new Map<string, LatencyRecorder>();
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
}

/** Phase 1: `concurrency` clients each send single-message enqueues back to back until `count` or the deadline. */
export function enqueuePhase(client: BenchClient, procs: Processes, o: EnqueueOptions): Promise<PhaseResult> {
  const payloads = Array.from({ length: 64 }, (_, i) => makePayload(o.payloadBytes, i));
  return measured('enqueue', procs, async (recorder) => {
    const latency = recorder('enqueue');
    const deadline = performance.now() + o.deadlineMs;
    let issued = 0;
    let stored = 0;
    const worker = async () => {
      while (issued < o.count && performance.now() < deadline) {
        const n = issued++;
        const res = await latency.time(() => client.post('/api/messages', { topic: o.topic, payload: payloads[n % payloads.length] }));
        expectStatus(res, 201, 'enqueue');
        stored++;
      }
    };
    await Promise.all(Array.from({ length: o.concurrency }, worker));
    return stored;
  });
}

/** Fills a topic through the batch API (unmeasured set-up for the batch-ack variant). */
export async function preload(client: BenchClient, o: Omit<EnqueueOptions, 'deadlineMs'>): Promise<void> {
  const payload = makePayload(o.payloadBytes, 7);
  let left = o.count;
  const worker = async () => {
    while (left > 0) {
      const n = Math.min(1000, left);
      left -= n;
      const messages = Array.from({ length: n }, () => ({ topic: o.topic, payload }));
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
}

/** Phase 2: consumers dequeue `dequeueCount` at a time and ack every message, one request each or one batch. */
export function dequeueAckPhase(client: BenchClient, procs: Processes, o: DrainOptions): Promise<PhaseResult> {
  const name = o.ackMode === 'single' ? 'dequeue+ack' : 'dequeue+batch-ack';
  return measured(name, procs, async (recorder) => {
    const dequeueLatency = recorder('dequeue');
    const ackLatency = recorder(o.ackMode === 'single' ? 'ack' : 'ack-batch');
    const deadline = performance.now() + o.deadlineMs;
    let acked = 0;
    const ackOne = async (id: string) => {
      const res = await ackLatency.time(() => client.post(`/api/messages/${id}/ack`, {}));
      expectStatus(res, 204, 'ack');
    };
    const consumer = async () => {
      while (acked < o.expected && performance.now() < deadline) {
        const res = await dequeueLatency.time(() => client.post('/api/messages/dequeue', { topic: o.topic, count: o.dequeueCount }));
        const ids = (JSON.parse(expectStatus(res, 200, 'dequeue').body) as { messages: Array<{ id: string }> }).messages.map((m) => m.id);
        if (ids.length === 0) return;
        if (o.ackMode === 'batch') {
          const ack = await ackLatency.time(() => client.post('/api/messages/ack', { ids }));
          const body = JSON.parse(expectStatus(ack, 200, 'batch ack').body) as { acked: string[] };
          if (body.acked.length !== ids.length) throw new Error(`batch ack: ${ids.length - body.acked.length} of ${ids.length} not acked`);
        } else {
          let next = 0;
          const lane = async () => {
            while (next < ids.length) await ackOne(ids[next++]);
          };
          await Promise.all(Array.from({ length: Math.min(o.ackConcurrency, ids.length) }, lane));
        }
        acked += ids.length;
      }
    };
    await Promise.all(Array.from({ length: o.consumers }, consumer));
    return acked;
  });
}
