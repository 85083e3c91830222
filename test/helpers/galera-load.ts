import type { Api, ApiResponse } from './http.js';

/**
 * Producers and consumers for the Galera suites, and the ledger that checks what Conveyor promises through a
 * database failover: every confirmed (201) message is delivered and acknowledged, no message is delivered
 * twice while an earlier delivery's visibility timeout runs, nothing acknowledged comes back, no 500 ever.
 * 503 is allowed: the client retries it, as a real client retries on 503 with Retry-After (bounded here).
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A 503 is retried this many times (with a short pause, not Retry-After's whole seconds) before it counts as a failure. */
const RETRIES_503 = 80;

interface Delivery {
  payload: string;
  /** The instance that delivered it last, and when that dequeue was sent. */
  via: string;
  sentAt: number;
  /** 'settling': a nack was sent and has not answered yet (the redelivery it allows may overtake its answer). */
  state: 'held' | 'settling' | 'acked' | 'nacked';
  /** When the visibility timeout of the current delivery ends, counted from when the dequeue was sent. */
  visibleAgainAt: number;
  deliveries: number;
}

export class Ledger {
  /** payload -> id of every message whose enqueue answered 201. */
  readonly confirmed = new Map<string, string>();
  readonly deliveries = new Map<string, Delivery>();
  /** HTTP status -> count, over every attempt. */
  readonly statuses = new Map<number, number>();
  /** 500s, network errors, unexpected statuses, 503s past the client's retries: each a broken promise. */
  readonly failures: string[] = [];
  /** Deliveries of a message whose earlier delivery was neither acked nor nacked and still invisible. */
  readonly duplicates: string[] = [];
  /** Deliveries of a message already acknowledged (204/acked). */
  readonly redeliveredAfterAck: string[] = [];
  /** Acks refused (not_found) for a message held within its visibility timeout, with no earlier attempt of that ack. */
  readonly acksRefused: string[] = [];
  /** Successful requests, by completion time, for recovery measurements. */
  readonly successes: number[] = [];
  private readonly ackedPayloads = new Set<string>();
  private payloadCounter = 0;

  constructor(
    readonly topic: string,
    readonly visibilitySeconds: number,
  ) {}

  nextPayloads(prefix: string, count: number): string[] {
    return Array.from({ length: count }, () => `${prefix}-${this.payloadCounter++}`);
  }

  /**
   * One request under the client's retry policy. Returns the answer when its status is in `ok`; undefined after
   * a failure (recorded). `retried` tells the caller whether an earlier attempt got a 503 (its effect unknown).
   */
  async call(what: string, send: () => Promise<ApiResponse>, ok: number[]): Promise<{ res: ApiResponse; retried: boolean } | undefined> {
    let retried = false;
    for (let attempt = 0; attempt <= RETRIES_503; attempt++) {
      let res: ApiResponse;
      try {
        res = await send();
      } catch (err) {
        this.failures.push(`${what}: network error ${(err as Error).message}`);
        return undefined;
      }
      this.statuses.set(res.status, (this.statuses.get(res.status) ?? 0) + 1);
      if (ok.includes(res.status)) {
        this.successes.push(Date.now());
        return { res, retried };
      }
      if (res.status !== 503) {
        this.failures.push(`${what}: ${res.status} ${res.text.slice(0, 200)}`);
        return undefined;
      }
      retried = true;
      await sleep(100 + Math.random() * 150);
    }
    this.failures.push(`${what}: still 503 after ${RETRIES_503} retries`);
    return undefined;
  }

  count(status: number): number {
    return this.statuses.get(status) ?? 0;
  }

  /** Enqueues `payloads` one request each (in parallel) or as one batch. */
  async produce(api: Api, payloads: string[], mode: 'batch' | 'single'): Promise<void> {
    if (mode === 'batch') {
      const messages = payloads.map((payload) => ({ topic: this.topic, payload }));
      const answer = await this.call('batch enqueue', () => api.post('/api/messages/batch', { messages }), [201]);
      if (answer) answer.res.body.ids.forEach((id: string, i: number) => this.confirmed.set(payloads[i], id));
      return;
    }
    await Promise.all(
      payloads.map(async (payload) => {
        const answer = await this.call('enqueue', () => api.enqueue(this.topic, payload), [201]);
        if (answer) this.confirmed.set(payload, answer.res.body.id);
      }),
    );
  }

  /**
   * A producer until `stop()`: alternates a batch of 50 and 8 parallel single enqueues, with a pause so the
   * consumers keep up.
   */
  async produceUntil(api: Api, name: string, stop: () => boolean, pauseMs = 20): Promise<void> {
    for (let round = 0; !stop(); round++) {
      if (round % 2 === 0) await this.produce(api, this.nextPayloads(name, 50), 'batch');
      else await this.produce(api, this.nextPayloads(name, 8), 'single');
      await sleep(pauseMs);
    }
  }

  private delivered(message: { id: string; payload: string }, via: Api, sentAt: number): Delivery {
    const now = Date.now();
    const known = this.deliveries.get(message.id);
    const again = () => `${message.id}: by ${known!.via} (sent ${known!.sentAt}), again by ${via.baseUrl} (sent ${sentAt}, got ${now})`;
    if (known?.state === 'acked') this.redeliveredAfterAck.push(again());
    else if (known?.state === 'held' && now < known.visibleAgainAt) this.duplicates.push(again());
    const delivery: Delivery = {
      payload: message.payload,
      via: via.baseUrl,
      sentAt,
      state: 'held',
      visibleAgainAt: sentAt + this.visibilitySeconds * 1000,
      deliveries: (known?.deliveries ?? 0) + 1,
    };
    this.deliveries.set(message.id, delivery);
    return delivery;
  }

  /**
   * One consume step: dequeue up to `count` through `api`, nack first deliveries at `nackRate` (through
   * `nackVia`), ack the rest in one batch through `ackVia` (another instance: settlement on another node).
   * Returns how many it got.
   */
  async consumeOnce(api: Api, ackVia: Api, count: number, nackRate: number, nackVia: Api = api): Promise<number> {
    const sentAt = Date.now();
    const answer = await this.call('dequeue', () => api.dequeue(this.topic, { count, visibility_timeout_seconds: this.visibilitySeconds }), [200]);
    if (!answer) return 0;
    const messages = answer.res.body.messages as Array<{ id: string; payload: string; retry_count: number }>;
    // Each delivery is settled on its own record: an answer that arrives after a redelivery leaves the new one be.
    const got = new Map(messages.map((m) => [m.id, this.delivered(m, api, sentAt)]));
    const nacks = messages.filter((m) => m.retry_count === 0 && Math.random() < nackRate);
    const acks = messages.filter((m) => !nacks.includes(m));
    for (const m of nacks) got.get(m.id)!.state = 'settling';
    await Promise.all(
      nacks.map(async (m) => {
        const res = await this.call('nack', () => nackVia.post(`/api/messages/${m.id}/nack`, { error: 'test nack' }), [204, 404]);
        if (res?.res.status === 204) this.settle(got.get(m.id)!, 'nacked');
        else this.refused(m.id, got.get(m.id)!, nackVia, res?.retried ?? true, 'nacked');
      }),
    );
    if (acks.length > 0) {
      const ids = acks.map((m) => m.id);
      const res = await this.call('ack', () => ackVia.post('/api/messages/ack', { ids }), [200]);
      if (res) {
        for (const id of res.res.body.acked as string[]) this.settle(got.get(id)!, 'acked');
        for (const id of res.res.body.not_found as string[]) this.refused(id, got.get(id)!, ackVia, res.retried, 'acked');
      }
    }
    return messages.length;
  }

  private settle(d: Delivery, state: 'acked' | 'nacked'): void {
    d.state = state;
    if (state === 'acked') this.ackedPayloads.add(d.payload);
  }

  /**
   * An ack or nack answered "not found": a broken promise while the delivery was still within its visibility
   * timeout, unless an earlier attempt of that request answered 503 (it may have been applied).
   */
  private refused(id: string, d: Delivery, via: Api, retried: boolean, intended: 'acked' | 'nacked'): void {
    if (retried) return this.settle(d, intended);
    d.state = 'held';
    if (Date.now() < d.visibleAgainAt) this.acksRefused.push(`${id}: delivered by ${d.via} (sent ${d.sentAt}), refused by ${via.baseUrl} at ${Date.now()}`);
  }

  /** A consumer until `stop()`, pausing when the topic is empty. */
  async consumeUntil(api: Api, ackVia: Api, stop: () => boolean, count = 25, nackRate = 0.02): Promise<void> {
    while (!stop()) {
      const got = await this.consumeOnce(api, ackVia, count, nackRate);
      if (got === 0) await sleep(25);
    }
  }

  /** Confirmed payloads whose message has not been acknowledged (yet, or ever: lost). */
  unacked(): string[] {
    return [...this.confirmed.keys()].filter((p) => !this.ackedPayloads.has(p));
  }

  /** How many messages have been acknowledged so far. */
  get ackedCount(): number {
    return this.ackedPayloads.size;
  }

  /** Whether every confirmed message has been acknowledged. */
  allAcked(): boolean {
    for (const p of this.confirmed.keys()) if (!this.ackedPayloads.has(p)) return false;
    return true;
  }

  /** Every promise the suites check, as one object so a failure shows all of it. */
  verdict() {
    return {
      failures: this.failures.slice(0, 20),
      duplicates: this.duplicates.slice(0, 20),
      redeliveredAfterAck: this.redeliveredAfterAck.slice(0, 20),
      acksRefused: this.acksRefused.slice(0, 20),
      lost: this.unacked().slice(0, 20),
    };
  }

  summary(): string {
    const statuses = [...this.statuses.entries()].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(' ');
    const redelivered = [...this.deliveries.values()].filter((d) => d.deliveries > 1).length;
    return `confirmed ${this.confirmed.size}, delivered ${this.deliveries.size} (${redelivered} more than once), acks refused ${this.acksRefused.length}, statuses ${statuses}`;
  }
}

/**
 * Consumers drain until every confirmed message is acknowledged, or until none has been for `idleMs`: what is
 * left then is lost. A backlog the consumers are still working through is not (on a slow machine the load's
 * producers can leave thousands behind), so the bound is on a stall, not on the whole drain.
 */
export async function drain(ledger: Ledger, consumers: Array<[Api, Api]>, idleMs: number): Promise<void> {
  let acked = ledger.ackedCount;
  let progressAt = Date.now();
  const done = () => {
    if (ledger.ackedCount !== acked) {
      acked = ledger.ackedCount;
      progressAt = Date.now();
    }
    return Date.now() - progressAt > idleMs || ledger.allAcked();
  };
  await Promise.all(consumers.map(([api, ackVia]) => ledger.consumeUntil(api, ackVia, done, 50, 0)));
}

/** The longest time without a successful request, from `from` to the last success. */
export function longestGap(successes: number[], from: number): number {
  let longest = 0;
  let previous = from;
  for (const at of [...successes].filter((t) => t >= from).sort((x, y) => x - y)) {
    longest = Math.max(longest, at - previous);
    previous = at;
  }
  return longest;
}
