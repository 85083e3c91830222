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
});
