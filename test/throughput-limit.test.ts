import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import type { Api } from './helpers/http.js';
import { dequeueIds, enqueueId, putTopicConfig } from './helpers/messages.js';
import { manualClock, startTestServer, type TestClock, type TestServer } from './helpers/server.js';

async function fill(api: Api, topic: string, n: number): Promise<void> {
  const res = await api.post('/api/messages/batch', { messages: Array.from({ length: n }, (_, i) => ({ topic, payload: `m${i}` })) });
  expect(res.status, res.text).toBe(201);
}

const taken = async (api: Api, topic: string, count = 100) => (await dequeueIds(api, topic, { count })).length;

/** Waits until `api`'s server sees the topic configuration (other instances poll the catalog). */
async function waitForConfig(api: Api, topic: string, expected: Record<string, unknown>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const res = await api.get('/api/topic-configs');
    const config = res.body.items.find((c: any) => c.topic === topic);
    if (config && Object.entries(expected).every(([k, v]) => config[k] === v)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`topic configuration of ${topic} never reached the second server`);
}

describeEachEngine('throughput_limit', (engine) => {
  describe('on one server', () => {
    const clock = manualClock();
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(engine, { now: clock.now });
    });
    afterAll(async () => {
      await server?.close();
    });

    it('hands out at most N messages per second across dequeues, starting with a full bucket', async () => {
      await putTopicConfig(server.api, 'tp-basic', { throughput_limit: 3 });
      await fill(server.api, 'tp-basic', 20);
      expect(await taken(server.api, 'tp-basic')).toBe(3);
      expect(await taken(server.api, 'tp-basic')).toBe(0);
      expect(await taken(server.api, 'tp-basic', 1)).toBe(0);
    });

    it('refills with time, never beyond one second of tokens', async () => {
      await putTopicConfig(server.api, 'tp-refill', { throughput_limit: 4 });
      await fill(server.api, 'tp-refill', 40);
      expect(await taken(server.api, 'tp-refill')).toBe(4);
      clock.advance(500);
      expect(await taken(server.api, 'tp-refill')).toBe(2);
      clock.advance(250);
      expect(await taken(server.api, 'tp-refill')).toBe(1);
      clock.advance(10_000);
      expect(await taken(server.api, 'tp-refill')).toBe(4);
      expect(await taken(server.api, 'tp-refill')).toBe(0);
    });

    it('carries fractions of a token over between dequeues', async () => {
      await putTopicConfig(server.api, 'tp-fraction', { throughput_limit: 2 });
      await fill(server.api, 'tp-fraction', 10);
      expect(await taken(server.api, 'tp-fraction')).toBe(2);
      clock.advance(200);
      // 0.4 tokens: nothing yet, but the fraction is kept.
      expect(await taken(server.api, 'tp-fraction')).toBe(0);
      clock.advance(300);
      expect(await taken(server.api, 'tp-fraction')).toBe(1);
    });

    it('spends tokens only for messages actually returned', async () => {
      await putTopicConfig(server.api, 'tp-spend', { throughput_limit: 5 });
      await enqueueId(server.api, 'tp-spend', 'only one');
      expect(await taken(server.api, 'tp-spend')).toBe(1);
      await fill(server.api, 'tp-spend', 10);
      expect(await taken(server.api, 'tp-spend')).toBe(4);
    });

    it('gives a count below the limit exactly count messages', async () => {
      await putTopicConfig(server.api, 'tp-count', { throughput_limit: 10 });
      await fill(server.api, 'tp-count', 20);
      expect(await taken(server.api, 'tp-count', 2)).toBe(2);
      expect(await taken(server.api, 'tp-count')).toBe(8);
    });

    it.each([
      ['0', 0],
      ['null', null],
    ])('treats a limit of %s as unlimited', async (what, throughput_limit) => {
      const topic = `tp-unlimited-${what}`;
      await putTopicConfig(server.api, topic, { throughput_limit });
      await fill(server.api, topic, 50);
      expect(await taken(server.api, topic, 30)).toBe(30);
      expect(await taken(server.api, topic)).toBe(20);
    });

    it('is unlimited once the limit is removed', async () => {
      await putTopicConfig(server.api, 'tp-removed', { throughput_limit: 2 });
      await fill(server.api, 'tp-removed', 10);
      expect(await taken(server.api, 'tp-removed')).toBe(2);
      expect(await taken(server.api, 'tp-removed')).toBe(0);
      await putTopicConfig(server.api, 'tp-removed', {});
      expect(await taken(server.api, 'tp-removed')).toBe(8);
    });

    it('keeps the bucket through a PUT that leaves the limit as it was; a new limit starts full', async () => {
      await putTopicConfig(server.api, 'tp-reput', { throughput_limit: 3 });
      await fill(server.api, 'tp-reput', 20);
      expect(await taken(server.api, 'tp-reput')).toBe(3);
      // As the controller's resync puts every TopicConfig again: no second's worth of tokens for it.
      await putTopicConfig(server.api, 'tp-reput', { throughput_limit: 3, max_depth: 1000 });
      expect(await taken(server.api, 'tp-reput')).toBe(0);
      await putTopicConfig(server.api, 'tp-reput', { throughput_limit: 4, max_depth: 1000 });
      expect(await taken(server.api, 'tp-reput')).toBe(4);
    });

    it('limits each topic separately', async () => {
      await putTopicConfig(server.api, 'tp-a', { throughput_limit: 2 });
      await putTopicConfig(server.api, 'tp-b', { throughput_limit: 2 });
      await fill(server.api, 'tp-a', 5);
      await fill(server.api, 'tp-b', 5);
      expect(await taken(server.api, 'tp-a')).toBe(2);
      expect(await taken(server.api, 'tp-b')).toBe(2);
    });
  });

  /**
   * Two servers on one database, each on its own clock offset from `clock` (ms), sharing the topic's limit:
   * `run` gets them once both see the configuration and the topic holds `messages` messages.
   */
  async function onTwoServers(
    topic: string,
    limit: number,
    messages: number,
    offsets: [number, number],
    run: (first: Api, second: Api, clock: TestClock) => Promise<void>,
  ): Promise<void> {
    const clock = manualClock();
    const first = await startTestServer(engine, { now: () => clock.now() + offsets[0] });
    const second = await startTestServer(engine, { now: () => clock.now() + offsets[1], database: first.database });
    try {
      await putTopicConfig(first.api, topic, { throughput_limit: limit });
      await waitForConfig(second.api, topic, { throughput_limit: limit });
      await fill(first.api, topic, messages);
      await run(first.api, second.api, clock);
    } finally {
      await second.close();
      await first.close();
    }
  }

  it('shares one bucket between two servers on the same database', async () => {
    await onTwoServers('tp-shared', 3, 30, [0, 0], async (first, second, clock) => {
      expect(await taken(first, 'tp-shared', 2)).toBe(2);
      expect(await taken(second, 'tp-shared')).toBe(1);
      expect(await taken(first, 'tp-shared')).toBe(0);
      clock.advance(1_000);
      expect(await taken(second, 'tp-shared')).toBe(3);
      expect(await taken(first, 'tp-shared')).toBe(0);
      expect(await taken(second, 'tp-shared')).toBe(0);
    });
  });

  it('does not starve a topic behind an instance whose clock ran far ahead', async () => {
    // Ten seconds ahead (a clock that NTP then steps back, or one node misconfigured).
    await onTwoServers('tp-ahead', 10, 60, [10_000, 0], async (ahead, second, clock) => {
      expect(await taken(ahead, 'tp-ahead')).toBe(10);
      expect(await taken(second, 'tp-ahead')).toBe(0);
      // Refilled on the second's own clock from here on, not ten seconds from now.
      clock.advance(500);
      expect(await taken(second, 'tp-ahead')).toBe(5);
    });
  });

  it("credits no interval twice when the instances' clocks differ", async () => {
    // Half a second behind the first: what NTP leaves between two nodes on a bad day.
    await onTwoServers('tp-skew', 10, 60, [0, -500], async (first, second, clock) => {
      expect(await taken(first, 'tp-skew')).toBe(10);
      expect(await taken(second, 'tp-skew')).toBe(0);
      // The second's earlier clock must not wind the bucket back: the first would get that half second again.
      expect(await taken(first, 'tp-skew')).toBe(0);
      clock.advance(1_000);
      expect(await taken(second, 'tp-skew')).toBe(5);
      expect(await taken(first, 'tp-skew')).toBe(5);
      expect(await taken(second, 'tp-skew')).toBe(0);
    });
  });
});
