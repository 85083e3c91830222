import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { dequeueIds, enqueueId, findMessage, putTopicConfig } from './helpers/messages.js';
import { manualClock, startTestServer, type TestServer } from './helpers/server.js';

const ttlOf = (message: { created_at: string; expires_at: string | null }) =>
  message.expires_at === null ? null : Date.parse(message.expires_at) - Date.parse(message.created_at);

describeEachEngine('message TTL', (engine) => {
  describe('with queue.message_ttl 10m', () => {
    const clock = manualClock();
    let server: TestServer;
    beforeAll(async () => {
      // The in-process expiry reaper must not mark anything while these tests look at unreaped messages.
      server = await startTestServer(engine, { now: clock.now, overrides: { queue: { message_ttl: '10m', expiry_reaper_interval: '1h' } } });
    });
    afterAll(async () => {
      await server?.close();
    });

    it('sets expires_at to created_at + queue.message_ttl when the topic has no TTL', async () => {
      const id = await enqueueId(server.api, 'ttl-global', 'x');
      const message = await findMessage(server.api, 'ttl-global', id);
      expect(ttlOf(message)).toBe(600_000);
      expect(message.created_at).toBe(new Date(clock.now()).toISOString());
    });

    it('takes message_ttl_seconds of the topic over the global TTL', async () => {
      await putTopicConfig(server.api, 'ttl-topic', { message_ttl_seconds: 45 });
      const id = await enqueueId(server.api, 'ttl-topic', 'x');
      expect(ttlOf(await findMessage(server.api, 'ttl-topic', id))).toBe(45_000);
    });

    it('never expires messages of a topic with message_ttl_seconds 0 (expires_at null)', async () => {
      await putTopicConfig(server.api, 'ttl-never', { message_ttl_seconds: 0 });
      const id = await enqueueId(server.api, 'ttl-never', 'x');
      expect((await findMessage(server.api, 'ttl-never', id)).expires_at).toBeNull();
      clock.advance(365 * 24 * 3600 * 1000);
      expect(await dequeueIds(server.api, 'ttl-never')).toEqual([id]);
    });

    it('falls back to the global TTL when the topic TTL is reset to null', async () => {
      await putTopicConfig(server.api, 'ttl-reset', { message_ttl_seconds: 5 });
      await putTopicConfig(server.api, 'ttl-reset', { message_ttl_seconds: null });
      const id = await enqueueId(server.api, 'ttl-reset', 'x');
      expect(ttlOf(await findMessage(server.api, 'ttl-reset', id))).toBe(600_000);
    });

    it('never dequeues an expired message, even before any reaper marked it', async () => {
      await putTopicConfig(server.api, 'ttl-skip', { message_ttl_seconds: 10 });
      const expiring = await enqueueId(server.api, 'ttl-skip', 'old');
      clock.advance(5_000);
      const fresh = await enqueueId(server.api, 'ttl-skip', 'new');
      clock.advance(5_001);
      expect(await dequeueIds(server.api, 'ttl-skip', { count: 10 })).toEqual([fresh]);
      // Still pending as far as the list can tell: nobody marked it expired, dequeue just skipped it.
      expect((await findMessage(server.api, 'ttl-skip', expiring)).status).toBe('pending');
      expect(await dequeueIds(server.api, 'ttl-skip', { count: 10 })).toEqual([]);
    });

    it('does not upsert a keyed enqueue into an expired message: a new message is created and delivered', async () => {
      await putTopicConfig(server.api, 'ttl-key', { message_ttl_seconds: 10 });
      const stale = await enqueueId(server.api, 'ttl-key', 'stale', { key: 'k' });
      clock.advance(10_001);
      const fresh = await enqueueId(server.api, 'ttl-key', 'fresh', { key: 'k' });
      expect(fresh).not.toBe(stale);
      const [delivered] = (await server.api.dequeue('ttl-key', { count: 10 })).body.messages;
      expect(delivered).toMatchObject({ id: fresh, payload: 'fresh' });
      expect((await findMessage(server.api, 'ttl-key', stale)).status).toBe('expired');
    });

    it('dequeues a message up to its last millisecond before expires_at', async () => {
      await putTopicConfig(server.api, 'ttl-edge', { message_ttl_seconds: 10 });
      const id = await enqueueId(server.api, 'ttl-edge', 'x');
      clock.advance(9_999);
      expect(await dequeueIds(server.api, 'ttl-edge')).toEqual([id]);
    });
  });

  it('never expires messages when queue.message_ttl is 0', async () => {
    const clock = manualClock();
    const server = await startTestServer(engine, { now: clock.now, overrides: { queue: { message_ttl: 0 } } });
    try {
      const id = await enqueueId(server.api, 'ttl-off', 'x');
      expect((await findMessage(server.api, 'ttl-off', id)).expires_at).toBeNull();
      clock.advance(30 * 24 * 3600 * 1000);
      expect(await dequeueIds(server.api, 'ttl-off')).toEqual([id]);
      // A topic TTL still applies where the global one is off.
      await putTopicConfig(server.api, 'ttl-off-topic', { message_ttl_seconds: 60 });
      const topicId = await enqueueId(server.api, 'ttl-off-topic', 'x');
      expect(ttlOf(await findMessage(server.api, 'ttl-off-topic', topicId))).toBe(60_000);
    } finally {
      await server.close();
    }
  });
});
