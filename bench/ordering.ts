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
 * What ordering keys cost, in paired rounds: each round enqueues `count` messages to a plain topic and as many
 * to a topic of `keys` ordering keys (in turn), then drains both with phase 2's consumers (per-message acks),
 * plain first in even rounds and ordered first in odd ones. A ratio compares two runs seconds apart, so the
 * machine's drift (its speed moved by 15 % between phases of one run) shows in both of them, not in the ratio.
 * Reports, per kind and phase, the round with the median rate, and the ratio of every round.
 */
export async function orderingPhases(
  client: BenchClient,
  procs: Processes,
  o: OrderingOptions,
  renewToken: () => Promise<void>,
): Promise<{ phases: PhaseResult[]; ratios: OrderingRatios }> {
  const runs: Record<Kind, { enqueue: PhaseResult[]; dequeueAck: PhaseResult[] }> = { plain: { enqueue: [], dequeueAck: [] }, ordered: { enqueue: [], dequeueAck: [] } };
  for (let round = 0; round < o.rounds; round++) {
    const kinds: Kind[] = round % 2 === 0 ? ['plain', 'ordered'] : ['ordered', 'plain'];
    const topic = (kind: Kind) => `bench.${kind === 'plain' ? 'paired' : 'ordered'}.${round}`;
    const stored: Record<Kind, number> = { plain: 0, ordered: 0 };
    for (const kind of kinds) {
      await renewToken();
      const { count, deadlineMs, concurrency, payloadBytes } = o;
      const result = await enqueuePhase(client, procs, { topic: topic(kind), count, deadlineMs, concurrency, payloadBytes, orderingKeys: kind === 'ordered' ? o.keys : undefined });
      runs[kind].enqueue.push(result);
      stored[kind] = result.messages;
    }
    for (const kind of kinds) {
      await renewToken();
      const { deadlineMs, consumers, dequeueCount, ackConcurrency } = o;
      runs[kind].dequeueAck.push(await dequeueAckPhase(client, procs, { topic: topic(kind), expected: stored[kind], deadlineMs, consumers, dequeueCount, ackConcurrency, ackMode: 'single' }));
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
