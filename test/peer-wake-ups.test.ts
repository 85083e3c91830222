import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { engineByName, type TestDatabase } from './helpers/engines.js';
import { sleep } from './helpers/grpc.js';
import { untilWaiting } from './helpers/metrics.js';
import { startTestServer } from './helpers/server.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Instances announce the topics they wait on over the Redis channel, and publish a topic's wake-up only where
 * another instance waits on it: an enqueue or an ordered ack no one elsewhere waits for costs no publish. Each
 * case that could leave a waiter unwoken falls back to publishing every wake-up: an instance that has not
 * received for a heartbeat yet, a listener on the channel that announces nothing (a tool, an older version).
 * The test watches the channel with MONITOR, which is not a subscriber of it.
 */

interface Published {
  origin: string;
  topics: string[];
  interest?: string[];
}

/** The peer message of a MONITOR line, when it is a PUBLISH on `channel`. */
function publishedOn(line: string, channel: string): Published | undefined {
  const start = line.indexOf(`"PUBLISH" "${channel}" "`);
  if (start < 0) return undefined;
  const quoted = line.slice(start + `"PUBLISH" "${channel}" "`.length, line.lastIndexOf('"'));
  return JSON.parse(quoted.replace(/\\(["\\])/g, '$1')) as Published;
}

async function dequeueWaiting(url: string, topic: string, waitSeconds: number): Promise<{ id?: string; ms: number }> {
  const started = performance.now();
  const res = await fetch(`${url}/api/messages/dequeue`, { method: 'POST', body: JSON.stringify({ topic, wait_seconds: waitSeconds }), headers: { 'content-type': 'application/json' } });
  const body = (await res.json()) as { messages: Array<{ id: string }> };
  return { id: body.messages[0]?.id, ms: performance.now() - started };
}

(inject('mysqlUrl') ? describe : describe.skip)('wake-ups published only where another instance waits [mysql]', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await engineByName.mysql.createDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('an enqueue no other instance waits for publishes nothing; one it waits for wakes it; a silent listener on the channel brings every wake-up back', async () => {
    const prefix = `wake-${randomUUID().slice(0, 8)}:`;
    const channel = `${prefix}peers`;
    const published: Published[] = [];
    const monitor = createClient({ url: REDIS_URL });
    await monitor.connect();
    await monitor.monitor((line) => {
      const message = publishedOn(line, channel);
      if (message) published.push(message);
    });
    const overrides = { redis: { url: REDIS_URL, key_prefix: prefix } };
    const a = await startTestServer(engineByName.mysql, { database, overrides });
    const b = await startTestServer(engineByName.mysql, { database, overrides });
    const listener = createClient({ url: REDIS_URL });
    const publishedTopic = (topic: string) => published.some((m) => m.topics.includes(topic));
    /** Enqueues on A to a topic of its own, and tells whether A published its wake-up. */
    const enqueueOnA = async (topic: string) => {
      expect((await a.api.enqueue(topic, 'x')).status).toBe(201);
      await sleep(300);
      return publishedTopic(topic);
    };
    try {
      // At first A publishes every wake-up (it has not received for a heartbeat); then only what someone waits for.
      let round = 0;
      const deadline = Date.now() + 30_000;
      while (await enqueueOnA(`wi-nobody-${round++}`)) expect(Date.now()).toBeLessThan(deadline);
      for (let i = 0; i < 5; i++) expect(await enqueueOnA(`wi-nobody-again-${i}`)).toBe(false);
      // Both announce themselves, heartbeat after heartbeat.
      expect(published.some((m) => m.interest !== undefined)).toBe(true);

      // B waits on a topic: it announces it, and A's enqueue of it wakes B long before the wait ends.
      for (let i = 0; i < 3; i++) {
        const waiting = dequeueWaiting(b.url, 'wi-waited', 20);
        await untilWaiting(b.api, 1);
        const res = await a.api.enqueue('wi-waited', `m${i}`);
        const { id, ms } = await waiting;
        expect(id).toBe(res.body.id);
        expect(ms).toBeLessThan(5000);
      }
      expect(published.some((m) => m.interest?.includes('wi-waited'))).toBe(true);
      expect(publishedTopic('wi-waited')).toBe(true);
      // A topic no one waits on stays quiet meanwhile.
      expect(await enqueueOnA('wi-nobody-still')).toBe(false);

      // A listener on the channel that announces nothing (here a plain SUBSCRIBE; an instance of an older
      // version alike): at its next heartbeat A counts it, and publishes every wake-up again.
      await listener.connect();
      await listener.subscribe(channel, () => undefined);
      let again = false;
      for (let i = 0; !again && i < 40; i++) again = await enqueueOnA(`wi-listened-${i}`);
      expect(again).toBe(true);
    } finally {
      await Promise.allSettled([a.close(), b.close()]);
      for (const client of [listener, monitor]) if (client.isOpen) client.destroy();
    }
  });
});
