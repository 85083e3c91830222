import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import type { Api } from './helpers/http.js';
import { startChildServer, startTestServer, type TestServer } from './helpers/server.js';

const KEYS = 100;
const PER_KEY = 100;
// The shortest claim the service allows: each claim left to time out holds its key that long (with 2 s, the
// topic case took about twice as long).
const VISIBILITY_SECONDS = 1;
const CONSUMERS = 8;

/** A deterministic stream of choices, so a failure can be run again as it was. */
function random(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x / 2 ** 31;
  };
}

interface Run {
  /** Per key, the message indexes in the order their deliveries arrived. */
  delivered: Map<string, number[]>;
  /** Deliveries handed out while another delivery of their key was held. */
  overlaps: string[];
}

/**
 * CONSUMERS consumers spread over the instances dequeue, ack 85 % (a batch per dequeue), nack 10 % (retried at once) and abandon 5 %
 * (their claims time out), until nothing is left for them; the instance whose `kill` is given is SIGKILLed
 * once a third of the messages have been acked, and its consumers move on to the others. A delivery is held
 * from its dequeue to the moment its settle is sent; an abandoned one until its visibility timeout ends at
 * the earliest: that timeout counted from when the dequeue was sent, since the server's claim came after it
 * however late the answer arrives (a slow machine never makes a legitimate redelivery look like an overlap).
 * Acks name a message, not a delivery: an ack sent late for an earlier delivery ends the claim of its
 * redelivery too, so a redelivery of a message whose ack was sent holds nothing.
 *
 * Deliveries of one key arrive in the order the server made them: a consumer settles a delivery only after
 * it arrived, and the server claims the next message of a key only after that settle. So the sequence of
 * deliveries per key, repeats (retries) collapsed, is the order in which the key's messages were worked off.
 */
async function consume(apis: Api[], kill: () => Promise<void>, topic: string, group: string | undefined, seed: number): Promise<Run> {
  const next = random(seed);
  const delivered = new Map<string, number[]>();
  const held = new Map<string, { id: string; until: number }>();
  // Acks are by id: a late ack of an earlier delivery ends a redelivery's claim too, whenever it lands.
  const ackSent = new Set<string>();
  const overlaps: string[] = [];
  let acks = 0;
  let killed = false;
  let done = false;
  const total = KEYS * PER_KEY;
  const deadline = Date.now() + 200_000;
  // Done when nothing is left for these consumers: an ack whose answer was lost with the killed instance may
  // have been applied, so the count of successful answers cannot say it.
  const left = async () => {
    const stats = (await apis[0].get('/api/stats')).body;
    const rows = group ? stats.consumer_groups.filter((r: any) => r.consumer_group === group) : stats.topics;
    return rows.filter((r: any) => r.topic === topic && (r.status === 'pending' || r.status === 'processing')).reduce((n: number, r: any) => n + r.count, 0);
  };
  const watcher = (async () => {
    while (!done && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      if (acks >= total / 2 && (await left().catch(() => 1)) === 0) done = true;
    }
  })();
  const consumer = async (index: number) => {
    let api = apis[index % apis.length];
    while (!done && Date.now() < deadline) {
      if (!killed && acks >= total / 3) {
        killed = true;
        await kill();
      }
      let res;
      const sent = Date.now();
      try {
        res = await api.dequeue(topic, { count: 10, visibility_timeout_seconds: VISIBILITY_SECONDS, ...(group ? { consumer_group: group } : {}) });
      } catch {
        api = apis[(apis.indexOf(api) + 1) % apis.length];
        continue;
      }
      if (res.status !== 200) {
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      const messages = res.body.messages as Array<{ id: string; payload: string; ordering_key: string }>;
      if (messages.length === 0) await new Promise((r) => setTimeout(r, 20));
      const received = Date.now();
      for (const m of messages) {
        // The same message again is its retry (its claim timed out at the server a little before ours would).
        const other = held.get(m.ordering_key);
        if (other !== undefined && other.until > received && other.id !== m.id) {
          const left = other.until === Number.MAX_SAFE_INTEGER ? 'unsettled' : `${other.until - received} ms of its timeout left`;
          overlaps.push(`${m.ordering_key}: ${m.payload} while ${other.id} was held (${left})`);
        }
        held.set(m.ordering_key, { id: m.id, until: Number.MAX_SAFE_INTEGER });
        const [key, i] = m.payload.split(':');
        const list = delivered.get(key) ?? [];
        list.push(Number(i));
        delivered.set(key, list);
      }
      const body = group ? { consumer_group: group } : {};
      const acking: string[] = [];
      const nacks: Array<Promise<unknown>> = [];
      for (const m of messages) {
        const roll = next();
        if (roll < 0.05 && !ackSent.has(m.id)) {
          held.set(m.ordering_key, { id: m.id, until: sent + VISIBILITY_SECONDS * 1000 - 20 });
          continue;
        }
        if (held.get(m.ordering_key)?.id === m.id) held.delete(m.ordering_key);
        if (roll < 0.05) continue;
        if (roll < 0.15) nacks.push(api.post(`/api/messages/${m.id}/nack`, body).catch(() => undefined));
        else {
          acking.push(m.id);
          ackSent.add(m.id);
        }
      }
      // The acks of a dequeue go as one batch (their lines handed over together), the nacks one by one.
      const acked = acking.length > 0 ? api.post('/api/messages/ack', { ids: acking, ...body }).catch(() => undefined) : undefined;
      await Promise.all(nacks);
      const answer = await acked;
      if (answer?.status === 200) acks += (answer.body.acked as string[]).length;
    }
  };
  await Promise.all(Array.from({ length: CONSUMERS }, (_, i) => consumer(i)));
  done = true;
  await watcher;
  return { delivered, overlaps };
}

function expectInOrder(run: Run): void {
  expect(run.overlaps).toEqual([]);
  expect(run.delivered.size).toBe(KEYS);
  const expected = Array.from({ length: PER_KEY }, (_, i) => i);
  for (const [key, order] of run.delivered) expect(order.filter((i, at) => at === 0 || order[at - 1] !== i), key).toEqual(expected);
}

/**
 * Ordering keys under concurrency: three instances on one database, consumers racing, nacks, visibility
 * timeouts running out and an instance killed midway. Every key's messages are worked off exactly in enqueue
 * order (each delivered again only until its ack, never after the next one), no two of a key are ever out at
 * once, nothing is lost (the topic ends empty with every message delivered); on a fan-out topic each group alike.
 */
describeEachEngine('ordering keys under concurrency', (engine) => {
  let a: TestServer;
  let b: TestServer;
  const overrides = { queue: { expiry_reaper_interval: '1s', max_retries: 1000, dlq_threshold: 0 } };

  beforeAll(async () => {
    a = await startTestServer(engine, { overrides });
    b = await startTestServer(engine, { overrides, database: a.database });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  /** A child instance, and its SIGKILL, once however many callers ask. */
  const child = async () => {
    const server = await startInstance();
    let stopped: Promise<unknown> | undefined;
    return { api: server.api, kill: () => (stopped ??= server.stop('SIGKILL')).then(() => undefined) };
  };
  const startInstance = () =>
    startChildServer({ CONVEYOR_DB_URL: a.database.url, CONVEYOR_QUEUE_EXPIRY_REAPER_INTERVAL: '1s', CONVEYOR_QUEUE_MAX_RETRIES: '1000', CONVEYOR_QUEUE_DLQ_THRESHOLD: '0' });

  /** 100 keys x 100 messages, enqueued in batches of one message per key, so every key's order is the batch order. */
  async function fill(topic: string): Promise<void> {
    for (let i = 0; i < PER_KEY; i++) {
      const messages = Array.from({ length: KEYS }, (_, k) => ({ topic, payload: `k${k}:${i}`, ordering_key: `k${k}` }));
      const res = await a.api.post('/api/messages/batch', { messages });
      expect(res.status, res.text).toBe(201);
    }
  }

  it('a topic: every key acked in enqueue order, never two of a key at once, nothing lost', { timeout: 240_000 }, async () => {
    const victim = await child();
    try {
      await fill('oc-plain');
      const run = await consume([a.api, b.api, victim.api], victim.kill, 'oc-plain', undefined, 7);
      expectInOrder(run);
      expect((await a.api.get('/api/messages?topic=oc-plain')).body.total).toBe(0);
    } finally {
      await victim.kill();
    }
  });

  it('a fan-out topic: each of two groups acks every key in enqueue order, independently', { timeout: 300_000 }, async () => {
    for (const group of ['g1', 'g2']) expect((await a.api.post('/api/topics/oc-fan/consumer-groups', { consumer_group: group })).status).toBe(201);
    const victim = await child();
    try {
      await fill('oc-fan');
      const [one, two] = await Promise.all([
        consume([a.api, b.api, victim.api], victim.kill, 'oc-fan', 'g1', 11),
        consume([b.api, a.api, victim.api], victim.kill, 'oc-fan', 'g2', 13),
      ]);
      expectInOrder(one);
      expectInOrder(two);
      await expect.poll(async () => (await a.api.get('/api/messages?topic=oc-fan')).body.total, { timeout: 10_000 }).toBe(0);
    } finally {
      await victim.kill();
    }
  });
});
