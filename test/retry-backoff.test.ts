import { expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { clockedSuite } from './helpers/grpc.js';
import { dequeueIds, enqueueId, findMessage, putTopicConfig } from './helpers/messages.js';
import type { TestClock } from './helpers/server.js';
import type { Api } from './helpers/http.js';

/** The retry's available_at minus the time of the failed attempt, in ms, read from the message list. */
async function backoffOf(api: Api, topic: string, id: string, failedAt: number): Promise<number> {
  const message = await findMessage(api, topic, id);
  expect(message.status).toBe('pending');
  return Date.parse(message.available_at) - failedAt;
}

/** Within ±10 % of `seconds`. */
function expectJittered(waitedMs: number, seconds: number): void {
  expect(waitedMs).toBeGreaterThanOrEqual(seconds * 900);
  expect(waitedMs).toBeLessThanOrEqual(seconds * 1100);
}

/** Dequeues `id` exactly once `waitMs` has passed since `from`, and not a millisecond before. */
async function dueAfter(api: Api, clock: TestClock, topic: string, id: string, waitMs: number, extra: Record<string, unknown> = {}): Promise<void> {
  clock.advance(waitMs - 1);
  expect(await dequeueIds(api, topic, extra)).toEqual([]);
  clock.advance(1);
  expect(await dequeueIds(api, topic, extra)).toEqual([id]);
}

/**
 * Retry backoff: after the n-th failed attempt (a nack, or a visibility timeout that ran out) a retry waits
 * min(max, base x 2^(n-1)) seconds, with up to ±10 % jitter; base 0 (the default) retries at once.
 */
describeEachEngine('retry backoff', (engine) => {
  const suite = clockedSuite(engine);
  const api = () => suite.server.api;

  it('doubles with each nack and stops at the cap, within the jitter bound', async () => {
    await putTopicConfig(api(), 'rb-nack', { retry_backoff_seconds: 10, retry_backoff_max_seconds: 25, max_retries: 10 });
    const id = await enqueueId(api(), 'rb-nack', 'x');
    for (const [attempt, seconds] of [[1, 10], [2, 20], [3, 25], [4, 25]] as const) {
      expect(await dequeueIds(api(), 'rb-nack', { visibility_timeout_seconds: 600 })).toEqual([id]);
      const failedAt = suite.clock.now();
      expect((await api().post(`/api/messages/${id}/nack`, { error: 'thumbnailer down' })).status).toBe(204);
      expect(await findMessage(api(), 'rb-nack', id)).toMatchObject({ retry_count: attempt, last_error: 'thumbnailer down' });
      const waited = await backoffOf(api(), 'rb-nack', id, failedAt);
      expectJittered(waited, seconds);
      await dueAfter(api(), suite.clock, 'rb-nack', id, waited, { visibility_timeout_seconds: 600 });
      // Put back for the next round's dequeue, no attempt counted.
      expect((await api().post(`/api/messages/${id}/visibility`, { visibility_timeout_seconds: 0 })).status).toBe(200);
    }
  });

  it("a nack's delay_seconds wins over the backoff, 0 included", async () => {
    await putTopicConfig(api(), 'rb-wins', { retry_backoff_seconds: 60 });
    const id = await enqueueId(api(), 'rb-wins', 'x');
    expect(await dequeueIds(api(), 'rb-wins')).toEqual([id]);
    expect((await api().post(`/api/messages/${id}/nack`, { delay_seconds: 2 })).status).toBe(204);
    await dueAfter(api(), suite.clock, 'rb-wins', id, 2_000);
    expect((await api().post(`/api/messages/${id}/nack`, { delay_seconds: 0 })).status).toBe(204);
    expect(await dequeueIds(api(), 'rb-wins')).toEqual([id]);
  });

  it('applies to a visibility timeout that runs out, found by a dequeue or by the expiry reaper', async () => {
    await putTopicConfig(api(), 'rb-expiry', { retry_backoff_seconds: 30 });
    const id = await enqueueId(api(), 'rb-expiry', 'x');
    expect(await dequeueIds(api(), 'rb-expiry', { visibility_timeout_seconds: 5 })).toEqual([id]);
    suite.clock.advance(5_000);
    // This dequeue finds the claim over: a failed attempt, whose retry waits its backoff.
    expect(await dequeueIds(api(), 'rb-expiry')).toEqual([]);
    const message = await findMessage(api(), 'rb-expiry', id);
    expect(message).toMatchObject({ status: 'pending', retry_count: 1, last_error: 'visibility timeout expired' });
    const waited = Date.parse(message.available_at) - suite.clock.now();
    expectJittered(waited, 30);
    await dueAfter(api(), suite.clock, 'rb-expiry', id, waited, { visibility_timeout_seconds: 5 });

    suite.clock.advance(5_000);
    expect((await api().post('/api/admin/expiry-reaper/run')).status).toBe(200);
    const reaped = await findMessage(api(), 'rb-expiry', id);
    expect(reaped).toMatchObject({ status: 'pending', retry_count: 2 });
    expectJittered(Date.parse(reaped.available_at) - suite.clock.now(), 60);
  });

  it('consumer groups back off per group', async () => {
    await putTopicConfig(api(), 'rb-fan', { retry_backoff_seconds: 10 });
    for (const group of ['a', 'b']) expect((await api().post('/api/topics/rb-fan/consumer-groups', { consumer_group: group })).status).toBe(201);
    const id = await enqueueId(api(), 'rb-fan', 'x');
    expect(await dequeueIds(api(), 'rb-fan', { consumer_group: 'a', visibility_timeout_seconds: 600 })).toEqual([id]);
    expect(await dequeueIds(api(), 'rb-fan', { consumer_group: 'b', visibility_timeout_seconds: 600 })).toEqual([id]);
    expect((await api().post(`/api/messages/${id}/nack`, { consumer_group: 'a' })).status).toBe(204);
    expect(await dequeueIds(api(), 'rb-fan', { consumer_group: 'a' })).toEqual([]);
    suite.clock.advance(11_000);
    expect(await dequeueIds(api(), 'rb-fan', { consumer_group: 'a', visibility_timeout_seconds: 600 })).toEqual([id]);
    // Group b never failed: its delivery is still its first claim.
    expect((await api().post(`/api/messages/${id}/ack`, { consumer_group: 'b' })).status).toBe(204);
  });

  it('over gRPC: a Nack without delay_seconds backs off', async () => {
    await putTopicConfig(api(), 'rb-grpc', { retry_backoff_seconds: 8 });
    const id = await enqueueId(api(), 'rb-grpc', 'x');
    expect(await dequeueIds(api(), 'rb-grpc')).toEqual([id]);
    const failedAt = suite.clock.now();
    await suite.client.call('Nack', { id, error: 'down' });
    const waited = await backoffOf(api(), 'rb-grpc', id, failedAt);
    expectJittered(waited, 8);
    await dueAfter(api(), suite.clock, 'rb-grpc', id, waited);
  });

  it('without a backoff a retry is claimable at once, as before', async () => {
    const id = await enqueueId(api(), 'rb-none', 'x');
    expect(await dequeueIds(api(), 'rb-none')).toEqual([id]);
    expect((await api().post(`/api/messages/${id}/nack`)).status).toBe(204);
    expect(await dequeueIds(api(), 'rb-none')).toEqual([id]);
  });
});

describeEachEngine('retry backoff from the server defaults', (engine) => {
  const suite = clockedSuite(engine, { queue: { retry_backoff_seconds: 4, retry_backoff_max_seconds: 6 } });
  const api = () => suite.server.api;

  it('queue.retry_backoff_seconds and _max_seconds apply to topics that set none; a topic setting wins', async () => {
    const id = await enqueueId(api(), 'rbd', 'x');
    for (const seconds of [4, 6]) {
      expect(await dequeueIds(api(), 'rbd', { visibility_timeout_seconds: 600 })).toEqual([id]);
      const failedAt = suite.clock.now();
      expect((await api().post(`/api/messages/${id}/nack`)).status).toBe(204);
      expectJittered(await backoffOf(api(), 'rbd', id, failedAt), seconds);
      suite.clock.advance(seconds * 1100);
    }
    await putTopicConfig(api(), 'rbd-zero', { retry_backoff_seconds: 0 });
    const other = await enqueueId(api(), 'rbd-zero', 'y');
    expect(await dequeueIds(api(), 'rbd-zero')).toEqual([other]);
    expect((await api().post(`/api/messages/${other}/nack`)).status).toBe(204);
    expect(await dequeueIds(api(), 'rbd-zero')).toEqual([other]);
  });
});
