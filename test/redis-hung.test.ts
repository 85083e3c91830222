import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startAuthServer, type AuthServer } from './helpers/auth.js';
import { availableEngines } from './helpers/engines.js';
import { captureLogger } from './helpers/log-capture.js';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.js';

const REDIS_URL = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');

/**
 * A Redis that keeps its connections open and answers nothing (a paused process, a network dropping
 * packets): no connection error says it is gone, and the client's command timeout stops counting once a
 * command is sent. Logins must still be answered (counted in memory), publishes must not pile up, and a
 * shutdown must not wait for it. Redis's behaviour does not depend on the database engine: SQLite only.
 */
describe('a Redis that hangs', () => {
  let proxy: TcpProxy;
  let server: AuthServer;
  const logs = captureLogger('debug');
  const prefix = `hung-test-${randomUUID()}:`;

  beforeAll(async () => {
    proxy = await startTcpProxy(REDIS_URL.hostname, Number(REDIS_URL.port || 6379));
    server = await startAuthServer(availableEngines()[0], { logger: logs.logger, overrides: { redis: { url: `redis://127.0.0.1:${proxy.port}`, key_prefix: prefix } } });
  });
  afterAll(async () => {
    proxy?.unhang();
    await server?.close();
    await proxy?.cut();
  });

  it('answers logins from the in-memory count, drops publishes past a cap, and lets the server stop', async () => {
    expect((await server.api.post('/api/auth/login', ADMIN)).status).toBe(200);
    proxy.hang();
    for (let i = 0; i < 3; i++) {
      const login = await server.api.post('/api/auth/login', ADMIN);
      expect(login.status, login.text).toBe(200);
    }
    // Each enqueue's commit publishes a wake-up of its topic: one publish per enqueue, none answered.
    for (let i = 0; i < 1100; i++) expect((await server.admin.post('/api/messages', { topic: `hung-${i % 7}`, payload: 'x' })).status).toBe(201);
    const dropped = logs.lines.find((l) => l.msg?.includes('redis publish (peer relay)'));
    expect(dropped, logs.text().slice(-2000)).toMatchObject({ level: 'warn' });
    expect(JSON.stringify(dropped)).toContain('1000 publishes unanswered');
    const closing = Date.now();
    await server.close();
    expect(Date.now() - closing).toBeLessThan(5000);
  }, 60_000);
});

describe('a Redis user without the channel', () => {
  const user = `conveyor-test-${randomUUID()}`;
  const prefix = `acl-test-${randomUUID()}:`;
  const admin = createClient({ url: REDIS_URL.href });
  let server: AuthServer;
  const logs = captureLogger('info');

  beforeAll(async () => {
    await admin.connect();
    // Redis 7 gives a new user no channels (acl-pubsub-default resetchannels): keys only.
    await admin.sendCommand(['ACL', 'SETUSER', user, 'on', '>secret-password', `~${prefix}*`, '+@all']);
    const url = new URL(REDIS_URL.href);
    url.username = user;
    url.password = 'secret-password';
    server = await startAuthServer(availableEngines()[0], { logger: logs.logger, overrides: { redis: { url: url.href, key_prefix: prefix } } });
  });
  afterAll(async () => {
    await server?.close();
    await admin.sendCommand(['ACL', 'DELUSER', user]);
    await admin.close();
  });

  it('says so at warn, and subscribes once the channel is granted', async () => {
    await expect.poll(() => logs.lines.some((l) => l.level === 'warn' && String(l.msg).includes('redis subscribe (peer relay)')), { timeout: 5000 }).toBe(true);
    expect(logs.text()).not.toContain('secret-password');
    const subscribers = async () => ((await admin.sendCommand(['PUBSUB', 'NUMSUB', `${prefix}peers`])) as [string, number])[1];
    expect(await subscribers()).toBe(0);
    await admin.sendCommand(['ACL', 'SETUSER', user, `&${prefix}*`]);
    await expect.poll(subscribers, { timeout: 10_000, interval: 250 }).toBe(1);
  }, 30_000);
});
