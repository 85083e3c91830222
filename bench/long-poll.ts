import { setTimeout as sleep } from 'node:timers/promises';
import mysql from 'mysql2/promise';
import { untilQuiet } from './cpu.js';
import { BenchClient, expectStatus } from './http-client.js';
import type { LatencyRecorder } from './latency.js';
import { makePayload, measured, type PhaseResult, type Processes } from './phases.js';

/**
 * The long-polling phase (BENCH_LONG_POLL=on adds it to the HTTP phases, =only runs it alone): HTTP consumers
 * that dequeue with wait_seconds and batch-ack what they get, fed by a producer paced at a steady rate. It
 * reports the enqueue-to-delivery latency (from the enqueue request's start to the dequeue answer that carries
 * the message), and what the consumers cost the database while they wait on an idle topic: the claim
 * transactions (conveyor_claims_total of the topic) and, on MySQL, every statement the server received
 * (Questions), over the same window without waiters and with them.
 */
export interface LongPollPhaseOptions {
  topic: string;
  consumers: number;
  waitSeconds: number;
  ratePerSecond: number;
  /** How long the producer sends, measured. */
  seconds: number;
  /** How long it sends before, unmeasured, at the same rate. */
  warmupSeconds: number;
  deadlineMs: number;
  dequeueCount: number;
  payloadBytes: number;
  /** The idle windows, without and with waiting consumers. */
  idleSeconds: number;
  /** MySQL/MariaDB: the service's database, to count the statements the server receives. */
  mysqlUrl?: string;
}

/** The figures of the idle windows, beside the phase result. */
export interface IdleCost {
  seconds: number;
  waiters: number;
  claimsWithout: number;
  claimsWith: number;
  statementsWithout?: number;
  statementsWith?: number;
}

const SENT_AT_WIDTH = 24;
const wallMs = () => performance.timeOrigin + performance.now();

/** Claim transactions of `topic` so far, from /metrics. */
async function claimsOf(client: BenchClient, topic: string): Promise<number> {
  const text = expectStatus(await client.get('/metrics'), 200, 'metrics').body;
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith('conveyor_claims_total{') && line.includes(`topic="${topic}"`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

/** The server-wide count of statements received (MySQL's Questions), less the ones this counter sends. */
async function statementCounter(url: string): Promise<{ read(): Promise<number>; close(): Promise<void> }> {
  const conn = await mysql.createConnection(url);
  let own = 0;
  return {
    read: async () => {
      const [rows] = (await conn.query("SHOW GLOBAL STATUS LIKE 'Questions'")) as unknown as [Array<{ Value: string }>];
      return Number(rows[0].Value) - ++own;
    },
    close: () => conn.end(),
  };
}

export async function longPollPhase(client: BenchClient, procs: Processes, o: LongPollPhaseOptions): Promise<PhaseResult & { idle: IdleCost }> {
  const statements = o.mysqlUrl ? await statementCounter(o.mysqlUrl) : undefined;
  try {
    const waited = await untilQuiet([procs.serverPid, procs.dbPid], 60_000);
    process.stdout.write(`long-poll: waited ${waited} ms for the service and the database to go quiet\n`);
    const window = async () => {
      const [claims, sent] = [await claimsOf(client, o.topic), await statements?.read()];
      await sleep(o.idleSeconds * 1000);
      const [claimsAfter, sentAfter] = [await claimsOf(client, o.topic), await statements?.read()];
      // Both windows read /metrics twice (a scrape may refresh the queue gauges: a few statements), so their
      // difference is the waiters'; the claims are the topic's only.
      return { claims: claimsAfter - claims, statements: sent === undefined || sentAfter === undefined ? undefined : sentAfter - sent };
    };
    const without = await window();

    const padding = makePayload(Math.max(0, o.payloadBytes - SENT_AT_WIDTH), 3);
    const total = Math.round(o.ratePerSecond * o.seconds);
    const deadline = performance.now() + o.deadlineMs;
    // Set by the measured phase; the consumers run before and after it (waiting, then stopping).
    let delivery: LatencyRecorder | undefined;
    let acked = 0;
    let stopping = false;
    const consumer = async () => {
      while (performance.now() < deadline + 30_000) {
        const res = await client.post('/api/messages/dequeue', { topic: o.topic, count: o.dequeueCount, wait_seconds: o.waitSeconds });
        const arrived = wallMs();
        const { messages } = JSON.parse(expectStatus(res, 200, 'dequeue').body) as { messages: Array<{ id: string; payload: string }> };
        if (messages.length === 0) continue;
        const stops = messages.filter((m) => m.payload === 'stop').length;
        for (const m of messages) if (m.payload !== 'stop') delivery?.record(arrived - Number(m.payload.slice(0, SENT_AT_WIDTH)));
        const ack = JSON.parse(expectStatus(await client.post('/api/messages/ack', { ids: messages.map((m) => m.id) }), 200, 'batch ack').body) as { acked: string[] };
        if (ack.acked.length !== messages.length) throw new Error(`batch ack: ${messages.length - ack.acked.length} of ${messages.length} not acked`);
        acked += messages.length - stops;
        if (stops > 0 && stopping) return;
      }
    };
    let running = o.consumers;
    const consumers = Array.from({ length: o.consumers }, () => consumer().finally(() => running--));
    await sleep(500);

    // The producer keeps to its schedule, so latency is measured at a rate the service keeps up with rather
    // than at saturation. Resolves once every message sent is acked.
    const produce = async (count: number, enqueueLatency?: LatencyRecorder): Promise<number> => {
      const started = performance.now();
      const sends: Array<Promise<void>> = [];
      const ackedBefore = acked;
      let sent = 0;
      while (sent < count && performance.now() < deadline) {
        const due = Math.min(count, Math.floor(((performance.now() - started) * o.ratePerSecond) / 1000));
        for (; sent < due; sent++) {
          const payload = wallMs().toFixed(3).padStart(SENT_AT_WIDTH) + padding;
          const enqueue = () => client.post('/api/messages', { topic: o.topic, payload });
          sends.push((enqueueLatency ? enqueueLatency.time(enqueue) : enqueue()).then((r) => void expectStatus(r, 201, 'enqueue')));
        }
        await sleep(2);
      }
      await Promise.all(sends);
      while (acked - ackedBefore < sent && performance.now() < deadline) await sleep(5);
      return acked - ackedBefore;
    };
    // Unmeasured first: the path from enqueue to a waiting dequeue is code no earlier phase ran, and the
    // percentiles are of the steady state, not of its first compilations.
    await produce(Math.round(o.ratePerSecond * o.warmupSeconds));
    const result = await measured(`long-poll ${o.consumers} consumers @ ${o.ratePerSecond}/s`, procs, async (recorder) => {
      delivery = recorder('enqueue-to-delivery');
      return produce(total, recorder('enqueue'));
    });

    // Every consumer is waiting on the empty topic now.
    await sleep(1000);
    const withWaiters = await window();
    const idle: IdleCost = {
      seconds: o.idleSeconds,
      waiters: running,
      claimsWithout: without.claims,
      claimsWith: withWaiters.claims,
      statementsWithout: without.statements,
      statementsWith: withWaiters.statements,
    };
    stopping = true;
    while (running > 0 && performance.now() < deadline + 30_000) {
      expectStatus(await client.post('/api/messages', { topic: o.topic, payload: 'stop' }), 201, 'enqueue stop');
      await sleep(50);
    }
    await Promise.all(consumers);
    const cost = idle;
    const db = (n: number | undefined) => (n === undefined ? '' : `; ${n} statements received by the database server (${o.idleSeconds} s)`);
    process.stdout.write(
      `long-poll idle: without waiters ${cost.claimsWithout} claims${db(cost.statementsWithout)}; with ${cost.waiters} waiting consumers ${cost.claimsWith} claims${db(cost.statementsWith)}\n`,
    );
    return { ...result, idle: cost };
  } finally {
    await statements?.close();
  }
}
