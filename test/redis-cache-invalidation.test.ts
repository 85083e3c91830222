import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { createUser, startAuthServer, type AuthServer } from './helpers/auth.js';
import { describeEachEngine } from './helpers/engines.js';
import { manualClock } from './helpers/server.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * With redis.url, a change made through one instance reaches the other instances' caches at once (contract:
 * "cross-instance cache invalidation"). Both instances here poll the catalog only hourly and run on a clock that
 * stands still, so without the message over Redis neither the topic configuration nor the user would ever be
 * re-read: what the second instance does proves it was told.
 */
describeEachEngine('caches of other instances, invalidated over Redis', (engine) => {
  const clock = manualClock();
  let first: AuthServer;
  let second: AuthServer;

  beforeAll(async () => {
    // A channel of its own, so no other test's instances hear these (or tell these anything).
    const overrides = { redis: { url: REDIS_URL, key_prefix: `cache-test-${randomUUID()}:` }, queue: { config_refresh_interval: '1h' } };
    first = await startAuthServer(engine, { overrides, now: clock.now });
    second = await startAuthServer(engine, { overrides, now: clock.now, database: first.database });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('a topic configuration changed on one instance applies on the other at once', async () => {
    const topic = 'invalidated-depth';
    expect((await second.admin.post('/api/messages', { topic, payload: 'before the cap' })).status).toBe(201);
    expect((await first.admin.put(`/api/topic-configs/${topic}`, { max_depth: 1 })).status).toBe(200);
    await expect.poll(async () => (await second.admin.post('/api/messages', { topic, payload: 'over the cap' })).status, { timeout: 5000 }).toBe(429);
  });

  it('a grant removed on one instance stops working on the other at once, not when its 5 s cache entry expires', async () => {
    const user = await createUser(first, ['write:invalidated-*']);
    const elsewhere = second.api.withToken(user.token);
    // Cached on the second instance now; its clock stands still, so the entry never expires by itself.
    expect((await elsewhere.post('/api/messages', { topic: 'invalidated-grant', payload: 'allowed' })).status).toBe(201);
    const grants = (await first.admin.get(`/api/users/${user.id}/grants`)).body.items as Array<{ id: string }>;
    expect((await first.admin.delete(`/api/users/${user.id}/grants/${grants[0].id}`)).status).toBe(204);
    await expect.poll(async () => (await elsewhere.post('/api/messages', { topic: 'invalidated-grant', payload: 'refused' })).status, { timeout: 5000 }).toBe(403);
    expectErrorBody(await elsewhere.post('/api/messages', { topic: 'invalidated-grant', payload: 'refused' }), 403);
  });
});
