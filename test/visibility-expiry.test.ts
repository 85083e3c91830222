import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { dequeueIds, enqueueId, findMessage, listTopic } from './helpers/messages.js';
import { manualClock, startTestServer, type TestServer } from './helpers/server.js';

const EXPIRED = 'visibility timeout expired';

describeEachEngine('visibility expiry', (engine) => {
  describe('with the defaults (visibility 30s, threshold 3, max_retries 3)', () => {
    const clock = manualClock();
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(engine, { now: clock.now });
    });
    afterAll(async () => {
      await server?.close();
    });

    it('keeps a message invisible until the server-wide timeout passes, then redelivers it as an attempt', async () => {
      const id = await enqueueId(server.api, 'vis-default', 'x');
      expect(await dequeueIds(server.api, 'vis-default')).toEqual([id]);
      clock.advance(29_000);
      expect(await dequeueIds(server.api, 'vis-default')).toEqual([]);
      clock.advance(1_001);
      const [redelivered] = (await server.api.dequeue('vis-default')).body.messages;
      expect(redelivered).toMatchObject({ id, status: 'processing', retry_count: 1 });
      expect(await findMessage(server.api, 'vis-default', id)).toMatchObject({ status: 'processing', retry_count: 1, last_error: EXPIRED });
    });

    it('honours the per-call visibility_timeout_seconds', async () => {
      const id = await enqueueId(server.api, 'vis-override', 'x');
      expect(await dequeueIds(server.api, 'vis-override', { visibility_timeout_seconds: 120 })).toEqual([id]);
      clock.advance(60_000);
      expect(await dequeueIds(server.api, 'vis-override')).toEqual([]);
      clock.advance(60_001);
      expect(await dequeueIds(server.api, 'vis-override')).toEqual([id]);
    });

    it('dead-letters a message whose visibility expired as often as the threshold', async () => {
      const id = await enqueueId(server.api, 'vis-dlq', 'x');
      for (let attempt = 0; attempt < 3; attempt++) {
        expect(await dequeueIds(server.api, 'vis-dlq', { visibility_timeout_seconds: 5 })).toEqual([id]);
        clock.advance(5_001);
      }
      // The third expiry is noticed by the next dequeue of the topic: that is the third attempt.
      expect(await dequeueIds(server.api, 'vis-dlq')).toEqual([]);
      expect(await listTopic(server.api, 'vis-dlq')).toEqual([]);
      expect(await findMessage(server.api, 'vis-dlq.dlq', id)).toMatchObject({
        status: 'pending',
        original_topic: 'vis-dlq',
        retry_count: 3,
        last_error: EXPIRED,
        dlq_moved_at: new Date(clock.now()).toISOString(),
      });
      // The consumer that let it expire is too late: the message is no longer processing.
      expectErrorBody(await server.api.post(`/api/messages/${id}/ack`), 404);
    });

    it('redelivers expired messages oldest first along with pending ones', async () => {
      const a = await enqueueId(server.api, 'vis-order', 'a');
      const b = await enqueueId(server.api, 'vis-order', 'b');
      expect(await dequeueIds(server.api, 'vis-order', { visibility_timeout_seconds: 5 })).toEqual([a]);
      clock.advance(5_001);
      expect(await dequeueIds(server.api, 'vis-order', { count: 5 })).toEqual([a, b]);
    });
  });

  it('fails a message whose visibility expired when no retries are left and dead-lettering is off', async () => {
    const clock = manualClock();
    const server = await startTestServer(engine, { now: clock.now, overrides: { queue: { dlq_threshold: 0, max_retries: 2 } } });
    try {
      const id = await enqueueId(server.api, 'vis-fail', 'x');
      expect(await dequeueIds(server.api, 'vis-fail', { visibility_timeout_seconds: 1 })).toEqual([id]);
      clock.advance(1_001);
      expect(await dequeueIds(server.api, 'vis-fail', { visibility_timeout_seconds: 1 })).toEqual([id]);
      expect((await findMessage(server.api, 'vis-fail', id)).retry_count).toBe(1);
      clock.advance(1_001);
      expect(await dequeueIds(server.api, 'vis-fail')).toEqual([]);
      expect(await findMessage(server.api, 'vis-fail', id)).toMatchObject({ status: 'failed', retry_count: 2, last_error: EXPIRED });
    } finally {
      await server.close();
    }
  });

  it('takes queue.visibility_timeout as the server-wide default', async () => {
    const clock = manualClock();
    const server = await startTestServer(engine, { now: clock.now, overrides: { queue: { visibility_timeout: '2s' } } });
    try {
      const id = await enqueueId(server.api, 'vis-config', 'x');
      await dequeueIds(server.api, 'vis-config');
      clock.advance(1_500);
      expect(await dequeueIds(server.api, 'vis-config')).toEqual([]);
      clock.advance(501);
      expect(await dequeueIds(server.api, 'vis-config')).toEqual([id]);
    } finally {
      await server.close();
    }
  });
});
