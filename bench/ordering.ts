import type { BenchClient } from './http-client.js';
import { dequeueAckPhase, enqueuePhase, type PhaseResult, type Processes } from './phases.js';

export interface OrderingOptions {
  /** Paired rounds (BENCH_ORDERING_ROUNDS). */
  rounds: number;
  keys: number;
  count: number;
  deadlineMs: number;
  concurrency: number;
  payloadBytes: number;
  consumers: number;
  dequeueCount: number;
  ackConcurrency: number;
}

/** Ordered over plain, one figure per paired round: each pair ran back to back on the same service. */
export interface OrderingRatios {
  enqueue: number[];
  dequeueAck: number[];
}

type Kind = 'plain' | 'ordered';

/**
 * Slices of each phase per round. The machine's speed changes from one second to the next (one run saw the
 * same plain enqueue at 10,872 and at 6,488 msg/s a few seconds apart), so a round runs each phase of the two
 * kinds in turn, a tenth at a time (plain then ordered, then ordered then plain, ...): a slow second falls on
 * both kinds alike instead of on one phase of the pair.
 */
export const SLICES = 10;

/** Slice `i` of `total` messages: the totals add up exactly. */
const sliceOf = (total: number, i: number) => Math.floor((total * (i + 1)) / SLICES) - Math.floor((total * i) / SLICES);

/** A round's slices of one kind and phase as one result: their messages over their time, their CPU per message. */
function combined(slices: PhaseResult[]): PhaseResult {
  const sum = (f: (r: PhaseResult) => number | undefined) => slices.reduce((total, r) => total + (f(r) ?? 0), 0);
  const messages = sum((r) => r.messages);
  const seconds = sum((r) => r.seconds);
  const perMessage = (f: (r: PhaseResult) => number | undefined) =>
    slices.some((r) => f(r) === undefined) || messages === 0 ? undefined : Math.round((sum(f) / messages) * 1e6 * 10) / 10;
  const round = (n: number) => Math.round(n * 1000) / 1000;
  const last = slices[slices.length - 1];
  return {
    ...last,
    messages,
    seconds: round(seconds),
    msgsPerSecond: Math.round(messages / seconds),
    // The slices share their recorders (measured): the last one's summary holds every slice's requests.
    latency: last.latency,
    serverCpuSeconds: round(sum((r) => r.serverCpuSeconds)),
    serverCpuUsPerMessage: perMessage((r) => r.serverCpuSeconds),
    dbCpuSeconds: slices.some((r) => r.dbCpuSeconds === undefined) ? undefined : round(sum((r) => r.dbCpuSeconds)),
    dbCpuUsPerMessage: perMessage((r) => r.dbCpuSeconds),
    clientCpuSeconds: round(sum((r) => r.clientCpuSeconds)),
  };
}

/**
 * What ordering keys cost, in paired rounds: each round enqueues `count` messages to a plain topic and as many
 * to a topic of `keys` ordering keys, then drains both with phase 2's consumers (per-message acks). Each
 * phase runs in SLICES slices, the two kinds in turn. A ratio compares two kinds measured over the same
 * seconds, so the machine's drift shows in both of them, not in the ratio. Reports, per kind and phase, the
 * round with the median rate, and the ratio of every round.
 */
export async function orderingPhases(
  client: BenchClient,
  procs: Processes,
  o: OrderingOptions,
  renewToken: () => Promise<void>,
): Promise<{ phases: PhaseResult[]; ratios: OrderingRatios }> {
  const runs: Record<Kind, { enqueue: PhaseResult[]; dequeueAck: PhaseResult[] }> = { plain: { enqueue: [], dequeueAck: [] }, ordered: { enqueue: [], dequeueAck: [] } };
  const inTurn = (round: number, slice: number): Kind[] => ((round + slice) % 2 === 0 ? ['plain', 'ordered'] : ['ordered', 'plain']);
  for (let round = 0; round < o.rounds; round++) {
    const topic = (kind: Kind) => `bench.${kind === 'plain' ? 'paired' : 'ordered'}.${round}`;
    const slices = () => ({ plain: [] as PhaseResult[], ordered: [] as PhaseResult[], recorders: { plain: new Map(), ordered: new Map() } });
    await renewToken();
    const enqueued = slices();
    for (let slice = 0; slice < SLICES; slice++) {
      for (const kind of inTurn(round, slice)) {
        const { deadlineMs, concurrency, payloadBytes } = o;
        const count = sliceOf(o.count, slice);
        const orderingKeys = kind === 'ordered' ? o.keys : undefined;
        enqueued[kind].push(await enqueuePhase(client, procs, { topic: topic(kind), count, deadlineMs, concurrency, payloadBytes, orderingKeys, recorders: enqueued.recorders[kind] }));
      }
    }
    await renewToken();
    const drained = slices();
    const enqueueResults: Record<Kind, PhaseResult> = { plain: combined(enqueued.plain), ordered: combined(enqueued.ordered) };
    const stored: Record<Kind, number> = { plain: enqueueResults.plain.messages, ordered: enqueueResults.ordered.messages };
    for (let slice = 0; slice < SLICES; slice++) {
      for (const kind of inTurn(round, slice)) {
        const { deadlineMs, consumers, dequeueCount, ackConcurrency } = o;
        const left = stored[kind] - drained[kind].reduce((n, r) => n + r.messages, 0);
        // Consumers stop at a slice's count with their last dequeues acked, a little past it: the last slice takes what is left.
        const expected = slice === SLICES - 1 ? left : Math.min(left, sliceOf(stored[kind], slice));
        if (expected <= 0) continue;
        drained[kind].push(await dequeueAckPhase(client, procs, { topic: topic(kind), expected, deadlineMs, consumers, dequeueCount, ackConcurrency, ackMode: 'single', recorders: drained.recorders[kind] }));
      }
    }
    for (const kind of ['plain', 'ordered'] as const) {
      runs[kind].enqueue.push(enqueueResults[kind]);
      runs[kind].dequeueAck.push(combined(drained[kind]));
    }
  }
  const ratiosOf = (phase: 'enqueue' | 'dequeueAck') => runs.ordered[phase].map((r, i) => Math.round((r.msgsPerSecond / runs.plain[phase][i].msgsPerSecond) * 100) / 100);
  const named = (r: PhaseResult, phase: string): PhaseResult => ({ ...r, phase });
  const keys = `${o.keys} keys`;
  return {
    phases: [
      named(medianRun(runs.plain.enqueue), 'enqueue (paired)'),
      named(medianRun(runs.ordered.enqueue), `enqueue ${keys}`),
      named(medianRun(runs.plain.dequeueAck), 'dequeue+ack (paired)'),
      named(medianRun(runs.ordered.dequeueAck), `dequeue+ack ${keys}`),
    ],
    ratios: { enqueue: ratiosOf('enqueue'), dequeueAck: ratiosOf('dequeueAck') },
  };
}

/** The run with the median rate (of an even number, the lower middle one). */
function medianRun(runs: PhaseResult[]): PhaseResult {
  return [...runs].sort((a, b) => a.msgsPerSecond - b.msgsPerSecond)[Math.floor((runs.length - 1) / 2)];
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : Math.round(((sorted[mid - 1] + sorted[mid]) / 2) * 100) / 100;
}

/** One line: each phase's median ratio over its rounds, and every round's. */
export function formatRatios(ratios: OrderingRatios): string {
  const one = (values: number[]) => `${median(values)} (rounds: ${values.join(', ')})`;
  return `ordering keys over plain, paired rounds: enqueue ${one(ratios.enqueue)}; dequeue+ack ${one(ratios.dequeueAck)}`;
}
