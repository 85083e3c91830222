import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli, tempDirs } from './helpers/cli.js';
import type { Api } from './helpers/http.js';
import { ADMIN, JWT_SECRET } from './helpers/auth.js';
import { engineByName, type TestDatabase } from './helpers/engines.js';
import { startChildServer, type ChildServer } from './helpers/server.js';

// Two `conveyor serve` processes over one MySQL database, the second with its wall clock two hours ahead (a
// host without NTP). Every time they stamp or compare is the database's, so they agree anyway.
const mysqlUrl = inject('mysqlUrl');
const SKEW_MS = 2 * 3_600_000;
const SKEWED_CLOCK = fileURLToPath(new URL('./helpers/skewed-clock.ts', import.meta.url));
const tempDir = tempDirs('conveyor-clock-skew-');

interface LogLine {
  level: number | string;
  msg: string;
  clockOffsetMs?: number;
}

function logLines(output: string): LogLine[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

(mysqlUrl ? describe : describe.skip)('instances whose clocks disagree [mysql]', () => {
  let database: TestDatabase;
  let right: ChildServer;
  let ahead: ChildServer;
  let onRight: Api;
  let onAhead: Api;

  beforeAll(async () => {
    database = await engineByName.mysql.createDatabase();
    const env = {
      CONVEYOR_DB_URL: database.url,
      CONVEYOR_AUTH_ENABLED: 'true',
      CONVEYOR_AUTH_JWT_SECRET: JWT_SECRET,
      CONVEYOR_AUTH_USERNAME: ADMIN.username,
      CONVEYOR_AUTH_PASSWORD: ADMIN.password,
    };
    right = await startChildServer(env);
    ahead = await startChildServer({ ...env, SKEWED_CLOCK_MS: String(SKEW_MS) }, ['serve'], ['--import', SKEWED_CLOCK]);
    const login = await right.api.post('/api/auth/login', ADMIN);
    expect(login.status, login.text).toBe(200);
    onRight = right.api.withToken(login.body.token);
    onAhead = ahead.api.withToken(login.body.token);
  }, 120_000);
  afterAll(async () => {
    const codes = await Promise.all([right?.stop(), ahead?.stop()]);
    await database?.drop();
    expect(codes).toEqual([0, 0]);
  });

  it('the instance whose clock is off says so at start, with the offset it measured; the other says nothing', () => {
    const reported = logLines(ahead.output()).find((line) => line.clockOffsetMs !== undefined);
    expect(reported?.level).toBe('warn');
    expect(reported?.msg).toMatch(/ahead of the database's/);
    expect(Math.abs(reported!.clockOffsetMs! + SKEW_MS)).toBeLessThan(5_000);
    expect(logLines(right.output()).some((line) => line.clockOffsetMs !== undefined)).toBe(false);
  });

  it('a token issued by one instance is good on the other (its lifetime is not over two hours early)', async () => {
    const status = await onAhead.get('/api/auth/status');
    expect(status.status, status.text).toBe(200);
    expect(status.body.user.username).toBe(ADMIN.username);
  });

  it("a claim made through one instance is not handed out again by the other before its visibility ends", async () => {
    const stored = await onRight.enqueue('skew-visibility', 'held');
    expect(stored.status).toBe(201);
    const claimed = await onRight.dequeue('skew-visibility', { visibility_timeout_seconds: 600 });
    expect(claimed.body.messages.map((m: { id: string }) => m.id)).toEqual([stored.body.id]);
    const again = await onAhead.dequeue('skew-visibility');
    expect(again.status).toBe(200);
    expect(again.body.messages).toEqual([]);
  });

  it('a message stored through one instance with a TTL is not expired early by the other', async () => {
    const config = await onRight.put('/api/topic-configs/skew-ttl', { message_ttl_seconds: 600 });
    expect(config.status, config.text).toBe(200);
    const stored = await onRight.enqueue('skew-ttl', 'fresh');
    expect(stored.status).toBe(201);
    const got = await onAhead.dequeue('skew-ttl');
    expect(got.body.messages.map((m: { id: string }) => m.id)).toEqual([stored.body.id]);
  });

  it('`conveyor reap expiry` on a host whose clock is ahead expires nothing early', async () => {
    const config = await onRight.put('/api/topic-configs/skew-reap', { message_ttl_seconds: 600 });
    expect(config.status, config.text).toBe(200);
    const stored = await onRight.enqueue('skew-reap', 'fresh');
    expect(stored.status).toBe(201);
    const run = await runCli(['reap', 'expiry'], { CONVEYOR_DB_URL: database.url, SKEWED_CLOCK_MS: String(SKEW_MS) }, tempDir(), ['--import', SKEWED_CLOCK]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ reaper: 'expiry', expired: 0 });
    const got = await onRight.dequeue('skew-reap');
    expect(got.body.messages.map((m: { id: string }) => m.id)).toEqual([stored.body.id]);
  });

  it("the instance whose clock is off stamps messages (created_at, the id's time) in the database's time", async () => {
    const stored = await onAhead.enqueue('skew-stamps', 'now');
    expect(stored.status).toBe(201);
    const listed = await onRight.get('/api/messages?topic=skew-stamps');
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.items.map((m: { id: string }) => m.id)).toEqual([stored.body.id]);
    expect(Math.abs(Date.parse(listed.body.items[0].created_at) - Date.now())).toBeLessThan(60_000);
    const idMs = parseInt(stored.body.id.replace(/-/g, '').slice(0, 12), 16);
    expect(Math.abs(idMs - Date.now())).toBeLessThan(60_000);
  });
});
