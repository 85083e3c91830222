import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { ADMIN, JWT_SECRET } from './helpers/auth.js';
import { describeEachEngine, type Engine } from './helpers/engines.js';
import type { Api } from './helpers/http.js';
import { manualClock, startTestServer, type ConfigOverrides } from './helpers/server.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

function redisReachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port || 6379), timeout: 1000 });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

// In CI the Redis suite must run: an unreachable Redis fails it instead of skipping it.
const redisUp = await redisReachable(REDIS_URL);
if (!redisUp && process.env.CI !== 'true') console.warn(`\n[conveyor tests] Redis at ${REDIS_URL} is unreachable: the shared rate-limit suite is SKIPPED.\n`);

const authOn = (extra: ConfigOverrides = {}): ConfigOverrides => ({
  ...extra,
  auth: { enabled: true, jwt_secret: JWT_SECRET, username: ADMIN.username, password: ADMIN.password },
});

async function attempts(api: Api, n: number, headers: (i: number) => Record<string, string> = () => ({})): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) statuses.push((await api.post('/api/auth/login', i % 2 ? ADMIN : { username: 'ghost', password: 'wrong-password' }, headers(i))).status);
  return statuses;
}

/**
 * Ten login attempts that the request pipeline refuses before the login itself would see them: an unknown
 * field, a JSON body cut short, a body that is not an object, a charset the service does not read, a body over
 * the limit (the server's queue.max_payload_bytes is 1 KiB: a limit of 70,680 bytes), and one with only a
 * username, which the login refuses itself.
 */
async function refusedAttempts(api: Api, from = 0, to = 10): Promise<Array<Awaited<ReturnType<Api['post']>>>> {
  const bodies: Array<[unknown, Record<string, string>?]> = [
    [{ username: ADMIN.username, password: 'guess1', x: 1 }],
    ['{"username":"admin","password":"gue'],
    [{ username: ADMIN.username, password: 'guess2', extra: true, more: 'x' }],
    ['[1,2,3]'],
    ['"admin"'],
    [JSON.stringify({ username: ADMIN.username, password: 'guess3' }), { 'content-type': 'application/json; charset=latin1' }],
    [JSON.stringify({ username: ADMIN.username, password: 'guess4' }), { 'content-encoding': 'compress' }],
    [JSON.stringify({ username: ADMIN.username, password: 'x'.repeat(80_000) })],
    ['{"username":"admin","password":"guess5"}}'],
    [{ username: ADMIN.username }],
  ];
  const answers = [];
  for (const [body, headers] of bodies.slice(from, to)) answers.push(await api.post('/api/auth/login', body, headers));
  return answers;
}

const REFUSED_STATUSES = [400, 400, 400, 400, 400, 415, 415, 413, 400, 400];

/**
 * Sliding, not fixed, windows: one attempt, nine 58 s later, then ten more 2.5 s after those. Fixed windows let
 * all twenty through in under four seconds (ten at the end of a window, ten at the start of the next); here
 * only the first attempt's slot has come free by then. Retry-After says when the next one does.
 */
async function expectSlidingWindow(api: Api, clock: ReturnType<typeof manualClock>): Promise<void> {
  expect(await attempts(api, 1)).toEqual([401]);
  clock.advance(58_000);
  expect(await attempts(api, 9)).not.toContain(429);
  clock.advance(2_500);
  const burst = await attempts(api, 10);
  expect(burst.filter((s) => s !== 429)).toHaveLength(1);
  const limited = await api.post('/api/auth/login', ADMIN);
  expectLimited(limited);
  // The oldest attempt let through is now the one of 58 s: free again 57.5 s from here.
  expect(Number(limited.headers.get('retry-after'))).toBe(58);
  clock.advance(57_500);
  expect((await api.post('/api/auth/login', ADMIN)).status).toBe(200);
}

function expectLimited(res: Awaited<ReturnType<Api['post']>>): void {
  expectErrorBody(res, 429);
  expect(res.body).toEqual({ error: 'too many login attempts' });
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

describeEachEngine('login rate limit (in memory)', (engine: Engine) => {
  it('allows 10 attempts per client per minute, whatever their outcome; the 11th gets 429 with Retry-After', async () => {
    const clock = manualClock();
    const server = await startTestServer(engine, { overrides: authOn(), now: clock.now });
    try {
      expect(await attempts(server.api, 10)).toEqual([401, 200, 401, 200, 401, 200, 401, 200, 401, 200]);
      expectLimited(await server.api.post('/api/auth/login', ADMIN));
      expectLimited(await server.api.post('/api/auth/login', {}));
      clock.advance(60_000);
      expect((await server.api.post('/api/auth/login', ADMIN)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('counts the attempts the request pipeline refuses (unknown field, malformed JSON, not an object, charset, too large): the 11th gets 429 before those checks', async () => {
    const clock = manualClock();
    // A small body limit (6 x 1 KiB + 64 KiB), so that a body over it stays cheap to send.
    const server = await startTestServer(engine, { overrides: authOn({ queue: { max_payload_bytes: 1024 } }), now: clock.now });
    try {
      const refused = await refusedAttempts(server.api);
      expect(refused.map((r) => r.status)).toEqual(REFUSED_STATUSES);
      expect(refused.map((r) => r.body.error)).not.toContain('too many login attempts');
      // The limit is reached: every kind of attempt is refused with 429 and Retry-After, its body unread.
      for (const res of await refusedAttempts(server.api)) expectLimited(res);
      expectLimited(await server.api.post('/api/auth/login', ADMIN));
      clock.advance(60_000);
      // A new window: the checks answer again; the 11th attempt gets 429 again, whatever its body.
      expect((await server.api.post('/api/auth/login', ADMIN)).status).toBe(200);
      expect((await refusedAttempts(server.api, 0, 9)).map((r) => r.status)).toEqual(REFUSED_STATUSES.slice(0, 9));
      expectLimited(await server.api.post('/api/auth/login', { username: ADMIN.username, password: 'guess', x: 1 }));
    } finally {
      await server.close();
    }
  });

  it('is a sliding window: no 60 s span lets more than 10 attempts through', async () => {
    const clock = manualClock();
    const server = await startTestServer(engine, { overrides: authOn(), now: clock.now });
    try {
      await expectSlidingWindow(server.api, clock);
    } finally {
      await server.close();
    }
  });

  it('counts every attempt exactly once, whichever step answers it', async () => {
    const server = await startTestServer(engine, { overrides: authOn() });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await server.api.post('/api/auth/login', { username: ADMIN.username, password: `guess${i}`, x: 1 })).status);
      for (let i = 0; i < 5; i++) statuses.push((await server.api.post('/api/auth/login', i % 2 ? ADMIN : { username: ADMIN.username, password: `guess${i}` })).status);
      expect(statuses).toEqual([400, 400, 400, 400, 400, 401, 200, 401, 200, 401]);
      expectLimited(await server.api.post('/api/auth/login', ADMIN));
    } finally {
      await server.close();
    }
  });

  it('ignores X-Forwarded-For unless server.trust_proxy is on', async () => {
    const server = await startTestServer(engine, { overrides: authOn() });
    try {
      const spoofed = (i: number) => ({ 'x-forwarded-for': `198.51.100.${i + 1}` });
      expect(await attempts(server.api, 10, spoofed)).not.toContain(429);
      expectLimited(await server.api.post('/api/auth/login', ADMIN, { 'x-forwarded-for': '198.51.100.200' }));
    } finally {
      await server.close();
    }
  });

  it('with trust_proxy, counts per X-Forwarded-For client', async () => {
    const server = await startTestServer(engine, { overrides: authOn({ server: { trust_proxy: true } }) });
    try {
      const first = { 'x-forwarded-for': '203.0.113.7' };
      expect(await attempts(server.api, 10, () => first)).not.toContain(429);
      expectLimited(await server.api.post('/api/auth/login', ADMIN, first));
      expect((await server.api.post('/api/auth/login', ADMIN, { 'x-forwarded-for': '203.0.113.8' })).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

(redisUp || process.env.CI === 'true' ? describe : describe.skip)('login rate limit shared through Redis', () => {
  it('is reachable (CI runs this suite against a real Redis)', () => {
    expect(redisUp, `Redis at ${REDIS_URL} is unreachable`).toBe(true);
  });

  it('counts the attempts of one client across instances: the 11th on a second instance gets 429', async () => {
    const shared = authOn({ redis: { url: REDIS_URL, key_prefix: `conveyor-test:${randomUUID()}:` } });
    const engine = (await import('./helpers/engines.js')).engineByName.sqlite;
    const a = await startTestServer(engine, { overrides: shared });
    const b = await startTestServer(engine, { overrides: shared });
    const isolated = await startTestServer(engine, { overrides: authOn({ redis: { url: REDIS_URL, key_prefix: `conveyor-test:${randomUUID()}:` } }) });
    try {
      expect(await attempts(a.api, 10)).not.toContain(429);
      expectLimited(await b.api.post('/api/auth/login', ADMIN));
      expectLimited(await a.api.post('/api/auth/login', ADMIN));
      // Another key prefix is another deployment: its counter is its own.
      expect((await isolated.api.post('/api/auth/login', ADMIN)).status).toBe(200);
    } finally {
      await Promise.all([a.close(), b.close(), isolated.close()]);
    }
  });

  it('is a sliding window there too', async () => {
    const clock = manualClock();
    const engine = (await import('./helpers/engines.js')).engineByName.sqlite;
    const server = await startTestServer(engine, { overrides: authOn({ redis: { url: REDIS_URL, key_prefix: `conveyor-test:${randomUUID()}:` } }), now: clock.now });
    try {
      await expectSlidingWindow(server.api, clock);
    } finally {
      await server.close();
    }
  });

  it('counts the attempts the request pipeline refuses in the shared counter too: the 11th, on either instance, gets 429 before any body check', async () => {
    const shared = authOn({ redis: { url: REDIS_URL, key_prefix: `conveyor-test:${randomUUID()}:` }, queue: { max_payload_bytes: 1024 } });
    const engine = (await import('./helpers/engines.js')).engineByName.sqlite;
    const a = await startTestServer(engine, { overrides: shared });
    const b = await startTestServer(engine, { overrides: shared });
    try {
      expect((await refusedAttempts(a.api, 0, 5)).map((r) => r.status)).toEqual(REFUSED_STATUSES.slice(0, 5));
      expect((await refusedAttempts(b.api, 5, 10)).map((r) => r.status)).toEqual(REFUSED_STATUSES.slice(5));
      for (const res of await refusedAttempts(b.api)) expectLimited(res);
      expectLimited(await a.api.post('/api/auth/login', { username: ADMIN.username, password: 'guess', x: 1 }));
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
