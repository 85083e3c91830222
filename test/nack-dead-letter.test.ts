import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine, type Engine } from './helpers/engines.js';
import { dequeueIds, enqueueId, findMessage, listTopic, MISSING_ID, nack, putTopicConfig } from './helpers/messages.js';
import { manualClock, startTestServer, type TestServer } from './helpers/server.js';

type Outcome = 'retry' | 'dlq' | 'failed';

interface Scenario {
  title: string;
  queue: { dlq_threshold: number; max_retries: number };
  topicMaxRetries?: number;
  /** What each successive nack does to the message. */
  outcomes: Outcome[];
}

/**
 * Contract §3: attempts = retry_count + 1; threshold = topic max_retries if set, else queue.dlq_threshold.
 * 1) threshold > 0 and attempts >= threshold: dead letter; 2) attempts < message max_retries: retry; 3) failed.
 */
const SCENARIOS: Scenario[] = [
  { title: 'defaults (threshold 3, max_retries 3): two retries, then the dead-letter topic', queue: { dlq_threshold: 3, max_retries: 3 }, outcomes: ['retry', 'retry', 'dlq'] },
  { title: 'dlq_threshold 0 disables dead-lettering: two retries, then failed', queue: { dlq_threshold: 0, max_retries: 3 }, outcomes: ['retry', 'retry', 'failed'] },
  { title: 'max_retries 0 and no dead-lettering: the first nack fails it', queue: { dlq_threshold: 0, max_retries: 0 }, outcomes: ['failed'] },
  { title: 'max_retries 0 below the threshold: the first nack fails it', queue: { dlq_threshold: 3, max_retries: 0 }, outcomes: ['failed'] },
  { title: 'dlq_threshold 1: the first nack dead-letters', queue: { dlq_threshold: 1, max_retries: 3 }, outcomes: ['dlq'] },
  { title: 'a threshold above max_retries: retries run out first, then failed', queue: { dlq_threshold: 5, max_retries: 3 }, outcomes: ['retry', 'retry', 'failed'] },
  { title: 'dlq_threshold 2 with max_retries 2: one retry, then the dead-letter topic', queue: { dlq_threshold: 2, max_retries: 2 }, outcomes: ['retry', 'dlq'] },
  { title: 'topic max_retries 1 overrides the threshold of 3', queue: { dlq_threshold: 3, max_retries: 3 }, topicMaxRetries: 1, outcomes: ['dlq'] },
  { title: 'topic max_retries 5 raises the threshold and the retries', queue: { dlq_threshold: 3, max_retries: 3 }, topicMaxRetries: 5, outcomes: ['retry', 'retry', 'retry', 'retry', 'dlq'] },
  { title: 'topic max_retries 0 disables dead-lettering and retries', queue: { dlq_threshold: 3, max_retries: 3 }, topicMaxRetries: 0, outcomes: ['failed'] },
  { title: 'topic max_retries 2 dead-letters even with dlq_threshold 0', queue: { dlq_threshold: 0, max_retries: 3 }, topicMaxRetries: 2, outcomes: ['retry', 'dlq'] },
];

async function withServer<T>(engine: Engine, overrides: Record<string, unknown>, now: () => number, run: (server: TestServer) => Promise<T>): Promise<T> {
  const server = await startTestServer(engine, { overrides: { queue: overrides }, now });
  try {
    return await run(server);
  } finally {
    await server.close();
  }
}

describeEachEngine('nack and dead-lettering', (engine) => {
  describe('the decision table', () => {
    it.each(SCENARIOS)('$title', async (scenario) => {
      const clock = manualClock(Date.parse('2026-11-22T10:00:00.000Z'));
      await withServer(engine, scenario.queue, clock.now, async ({ api }) => {
        const topic = 'orders';
        if (scenario.topicMaxRetries !== undefined) await putTopicConfig(api, topic, { max_retries: scenario.topicMaxRetries });
        const id = await enqueueId(api, topic, 'payload');
        const maxRetries = scenario.topicMaxRetries ?? scenario.queue.max_retries;
        expect((await findMessage(api, topic, id)).max_retries).toBe(maxRetries);

        for (const [index, outcome] of scenario.outcomes.entries()) {
          const attempts = index + 1;
          const [delivered] = (await api.dequeue(topic)).body.messages;
          expect(delivered).toMatchObject({ id, retry_count: index, max_retries: maxRetries });
          clock.advance(1000);
          await nack(api, id, `error ${attempts}`);

          if (outcome === 'retry') {
            expect(await findMessage(api, topic, id)).toMatchObject({ status: 'pending', retry_count: attempts, last_error: `error ${attempts}`, original_topic: '', dlq_moved_at: null });
          } else if (outcome === 'failed') {
            expect(await findMessage(api, topic, id)).toMatchObject({ status: 'failed', retry_count: attempts, last_error: `error ${attempts}` });
            expect(await listTopic(api, `${topic}.dlq`)).toEqual([]);
            expect(await dequeueIds(api, topic)).toEqual([]);
          } else {
            expect(await findMessage(api, topic, id)).toBeUndefined();
            expect(await findMessage(api, `${topic}.dlq`, id)).toMatchObject({
              topic: `${topic}.dlq`,
              status: 'pending',
              original_topic: topic,
              dlq_moved_at: new Date(clock.now()).toISOString(),
              retry_count: attempts,
              last_error: `error ${attempts}`,
              payload: 'payload',
              // Dead letters wait for an operator: they do not expire (README, "Dead letters").
              expires_at: null,
            });
          }
          // Each nack settles the delivery: a second nack of the same delivery is 404.
          expectErrorBody(await api.post(`/api/messages/${id}/nack`), 404);
        }
      });
    });
  });

  describe('in a dead-letter topic', () => {
    it('a nack retries or fails the message there and never dead-letters it again', async () => {
      await withServer(engine, { dlq_threshold: 2, max_retries: 5 }, Date.now, async ({ api }) => {
        const id = await enqueueId(api, 'dl', 'x');
        for (let i = 0; i < 2; i++) {
          await dequeueIds(api, 'dl');
          await nack(api, id, 'first life');
        }
        expect(await findMessage(api, 'dl.dlq', id)).toMatchObject({ retry_count: 2, max_retries: 5, original_topic: 'dl' });

        // attempts 3 and 4 are below max_retries 5: back to pending in dl.dlq, still a dead letter.
        for (const attempts of [3, 4]) {
          expect(await dequeueIds(api, 'dl.dlq')).toEqual([id]);
          await nack(api, id, `dlq attempt ${attempts}`);
          expect(await findMessage(api, 'dl.dlq', id)).toMatchObject({
            status: 'pending',
            retry_count: attempts,
            last_error: `dlq attempt ${attempts}`,
            original_topic: 'dl',
          });
        }
        // attempts 5 is not below max_retries 5: failed, and still in dl.dlq.
        expect(await dequeueIds(api, 'dl.dlq')).toEqual([id]);
        await nack(api, id, 'gave up');
        expect(await findMessage(api, 'dl.dlq', id)).toMatchObject({ status: 'failed', retry_count: 5, last_error: 'gave up' });
        expect(await listTopic(api, 'dl.dlq.dlq')).toEqual([]);
      });
    });

    it('with the defaults a nacked dead letter fails at once (retry_count 3 is already max_retries)', async () => {
      await withServer(engine, {}, Date.now, async ({ api }) => {
        const id = await enqueueId(api, 'dl-default', 'x');
        for (let i = 0; i < 3; i++) {
          await dequeueIds(api, 'dl-default');
          await nack(api, id);
        }
        expect(await dequeueIds(api, 'dl-default.dlq')).toEqual([id]);
        await nack(api, id, 'still broken');
        expect(await findMessage(api, 'dl-default.dlq', id)).toMatchObject({ status: 'failed', retry_count: 4, last_error: 'still broken' });
        expect(await listTopic(api, 'dl-default.dlq.dlq')).toEqual([]);
      });
    });
  });

  it('dead-letters a message of a 200-character topic into its 204-character .dlq, which works like any topic', async () => {
    await withServer(engine, { dlq_threshold: 1, max_retries: 3 }, Date.now, async ({ api }) => {
      const topic = `t${'x'.repeat(199)}`;
      const dlq = `${topic}.dlq`;
      const id = await enqueueId(api, topic, 'x');
      expect(await dequeueIds(api, topic)).toEqual([id]);
      await nack(api, id, 'long name');
      expect(await findMessage(api, dlq, id)).toMatchObject({ topic: dlq, original_topic: topic, status: 'pending' });
      expect(await dequeueIds(api, dlq)).toEqual([id]);
      expect((await api.post(`/api/messages/${id}/requeue`)).status).toBe(204);
      expect(await findMessage(api, topic, id)).toMatchObject({ status: 'pending', original_topic: '' });
      // The longer name is only valid as a dead-letter topic: it stays reserved for enqueue.
      expectErrorBody(await api.enqueue(dlq, 'x'), 400);
      expectErrorBody(await api.dequeue(`${topic}x.dlq`), 400);
    });
  });

  describe('requests', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(engine, { overrides: { queue: { dlq_threshold: 0, max_retries: 10 } } });
    });
    afterAll(async () => {
      await server?.close();
    });

    it.each([
      ['no body', 'nack-no-body', undefined],
      ['an empty JSON object', 'nack-empty-object', {}],
      ['an empty string body', 'nack-empty-string', ''],
    ])('accepts %s (204) and stores last_error ""', async (_what, topic, body) => {
      const id = await enqueueId(server.api, topic, 'x');
      expect(await dequeueIds(server.api, topic)).toEqual([id]);
      const res = await server.api.post(`/api/messages/${id}/nack`, body);
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expect(await findMessage(server.api, topic, id)).toMatchObject({ status: 'pending', retry_count: 1, last_error: '' });
    });

    it.each([
      ['ASCII', 'e'.repeat(70_000), 65_535],
      ['two-byte characters', 'é'.repeat(40_000), 65_534],
    ])('keeps the first 64 KiB of an over-long %s error instead of failing the nack', async (what, error, keptBytes) => {
      const topic = `nack-long-error-${what.startsWith('A') ? 'ascii' : 'utf8'}`;
      const id = await enqueueId(server.api, topic, 'x');
      await dequeueIds(server.api, topic);
      await nack(server.api, id, error);
      const stored = (await findMessage(server.api, topic, id)).last_error as string;
      expect(Buffer.byteLength(stored)).toBe(keptBytes);
      expect(error.startsWith(stored)).toBe(true);
    });

    it('stores an error of exactly 64 KiB whole', async () => {
      const id = await enqueueId(server.api, 'nack-64k-error', 'x');
      await dequeueIds(server.api, 'nack-64k-error');
      await nack(server.api, id, 'e'.repeat(65_535));
      expect((await findMessage(server.api, 'nack-64k-error', id)).last_error).toHaveLength(65_535);
    });

    it('redelivers a retried message with its new retry_count, after older pending messages', async () => {
      const first = await enqueueId(server.api, 'nack-redeliver', 'a');
      const second = await enqueueId(server.api, 'nack-redeliver', 'b');
      expect(await dequeueIds(server.api, 'nack-redeliver')).toEqual([first]);
      await nack(server.api, first, 'transient');
      const res = await server.api.dequeue('nack-redeliver', { count: 2 });
      const byId = Object.fromEntries(res.body.messages.map((m: any) => [m.id, m.retry_count]));
      expect(byId).toEqual({ [first]: 1, [second]: 0 });
    });

    it.each([
      ['an unknown id', () => MISSING_ID],
      ['a non-UUID id', () => 'not-a-uuid'],
    ])('answers 404 "message not found" for %s', async (_what, id) => {
      const res = await server.api.post(`/api/messages/${id()}/nack`, { error: 'x' });
      expectErrorBody(res, 404);
      expect(res.body).toEqual({ error: 'message not found' });
    });

    it('answers 404 for a pending message and leaves it untouched', async () => {
      const id = await enqueueId(server.api, 'nack-pending', 'x');
      const res = await server.api.post(`/api/messages/${id}/nack`, { error: 'x' });
      expectErrorBody(res, 404);
      expect(res.body).toEqual({ error: 'message not found' });
      expect(await findMessage(server.api, 'nack-pending', id)).toMatchObject({ status: 'pending', retry_count: 0, last_error: '' });
    });

    it('answers 404 for a failed message', async () => {
      await withServer(engine, { dlq_threshold: 0, max_retries: 0 }, Date.now, async ({ api }) => {
        const id = await enqueueId(api, 'nack-failed', 'x');
        await dequeueIds(api, 'nack-failed');
        await nack(api, id);
        expectErrorBody(await api.post(`/api/messages/${id}/nack`), 404);
        expect((await findMessage(api, 'nack-failed', id)).retry_count).toBe(1);
      });
    });
  });
});
