import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import mysql from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { startController } from '../src/controller/controller.js';
import { RepeatedFailure } from '../src/log/repeated.js';
import { connectRedisRateLimiter } from '../src/auth/rate-limit.js';
import { RedisPeerRelay } from '../src/pubsub/redis-peer-relay.js';
import { TopicSignals } from '../src/queue/topic-signals.js';
import { startServer, type RunningServer } from '../src/server.js';
import { createDb } from '../src/store/db.js';
import { startFakeKube } from './fake-kube/index.js';
import { engineByName, type TestDatabase } from './helpers/engines.js';
import { Api } from './helpers/http.js';
import { captureLogger, type LogLine as Line } from './helpers/log-capture.js';
import { testConfig, type ConfigOverrides } from './helpers/server.js';
import { startTcpProxy } from './helpers/tcp-proxy.js';
import { conveyorArgs } from './helpers/conveyor-command.js';

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const withMsg = (lines: Line[], msg: string) => lines.filter((l) => l.msg === msg);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('RepeatedFailure', () => {
  it('logs the first failure with message and code, then a count at most once per interval, then one recovered line', () => {
    const { logger, lines } = captureLogger();
    let now = 1_000_000;
    const failure = new RepeatedFailure(logger, { what: 'database connection', consequence: 'retrying', intervalMs: 30_000, now: () => now });
    const err = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3306'), { code: 'ECONNREFUSED', sql: 'insert into t values (?)', bindings: ['secret'] });

    for (let i = 0; i < 61; i++) {
      failure.fail(err);
      now += 1000;
    }
    failure.ok();
    failure.ok();

    expect(lines.map((l) => l.msg)).toEqual([
      'database connection failed; retrying',
      'database connection still failing',
      'database connection still failing',
      'database connection recovered',
    ]);
    expect(lines[0]).toMatchObject({ level: 'warn', err: { message: 'connect ECONNREFUSED 127.0.0.1:3306', code: 'ECONNREFUSED' } });
    expect(lines[0].err.stack).toBeUndefined();
    expect(lines[1]).toMatchObject({ level: 'warn', failures: 31, failuresSinceLastLine: 30, failingForSeconds: 30 });
    expect(lines[2]).toMatchObject({ failures: 61, failuresSinceLastLine: 30, failingForSeconds: 60 });
    expect(lines[3]).toMatchObject({ level: 'info', failures: 61, downForSeconds: 61 });
    expect(JSON.stringify(lines)).not.toMatch(/secret|insert into/);

    // A new outage starts over with a first line.
    failure.fail(err);
    expect(lines.at(-1)!.msg).toBe('database connection failed; retrying');
  });

  it('carries the stack only when asked to, and every line carries the given fields', () => {
    const { logger, lines } = captureLogger();
    const failure = new RepeatedFailure(logger, { what: 'expiry reaper run', level: 'error', fields: { reaper: 'expiry' }, withStack: () => true });
    failure.fail(new TypeError('boom'));
    expect(lines[0]).toMatchObject({ level: 'error', reaper: 'expiry', msg: 'expiry reaper run failed', err: { message: 'boom' } });
    expect(lines[0].err.stack).toMatch(/TypeError: boom\n\s+at /);
  });
});

describe('knex and driver output goes through the logger', () => {
  it('knex warnings become JSON lines; connection errors become one repeated-failure line without the stack', async () => {
    const { logger, lines } = captureLogger();
    const console_ = vi.spyOn(console, 'log');
    const db = createDb({ url: 'sqlite::memory:', logger });
    try {
      const knexLogger = db.client.logger as { warn(m: string): void; deprecate(a: string, b: string): void; error(m: string): void };
      knexLogger.warn('Acquire connection error: Error: connect ECONNREFUSED 127.0.0.1:3306\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1611:16)');
      knexLogger.warn('Acquire connection error: Error: connect ECONNREFUSED 127.0.0.1:3306\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1611:16)');
      knexLogger.warn('Connection Error: Error: Connection lost: The server closed the connection.');
      knexLogger.warn('Transaction was implicitly committed, do not mix transactions and DDL with MySQL (#805)');
      knexLogger.deprecate('someMethod', 'otherMethod');
      knexLogger.error('Knex: something broke\nwith a second line');
      await db.raw('select 1');
    } finally {
      await db.destroy();
      console_.mockRestore();
    }
    expect(console_).not.toHaveBeenCalled();
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['warn', 'database connection failed'],
      ['warn', 'Transaction was implicitly committed, do not mix transactions and DDL with MySQL (#805)'],
      ['warn', 'someMethod is deprecated, please use otherMethod'],
      ['error', 'Knex: something broke'],
      // The next connection opened: the failure is over.
      ['info', 'database connection recovered'],
    ]);
    expect(lines[0]).toMatchObject({ db: 'sqlite', err: { message: 'connect ECONNREFUSED 127.0.0.1:3306', code: 'ECONNREFUSED' } });
    expect(lines[4]).toMatchObject({ failures: 3 });
  });

  it('a failed query names its SQL but never the bound values, and logged errors carry no driver properties', async () => {
    const { logger, lines } = captureLogger();
    const db = createDb({ url: 'sqlite::memory:', logger });
    let caught: unknown;
    try {
      await db('no_such_table').insert({ payload: 'top-secret-payload' });
    } catch (err) {
      caught = err;
    } finally {
      await db.destroy();
    }
    expect((caught as Error).message).toContain('insert into `no_such_table`');
    expect((caught as Error).message).not.toContain('top-secret-payload');
    // A driver's message can quote a value: only its code, errno, SQL state and the statement's shape are kept.
    const duplicate = Object.assign(new Error("insert into `messages` (`key`) values (?) - Duplicate entry 'my-key' for key 'dedup'"), {
      code: 'ER_DUP_ENTRY',
      errno: 1062,
      sqlState: '23000',
      sqlMessage: "Duplicate entry 'my-key' for key 'dedup'",
      sql: "insert into `messages` (`key`) values ('my-key')",
      config: { password: 'pw' },
    });
    logger.error({ err: duplicate }, 'x');
    expect(lines.at(-1)!.err).toMatchObject({ type: 'Error', message: 'insert messages failed (ER_DUP_ENTRY)', code: 'ER_DUP_ENTRY', errno: 1062, sqlState: '23000', statement: 'insert messages' });
    expect(JSON.stringify(lines.at(-1))).not.toMatch(/my-key|password/);
  });
});

describe('Redis away', () => {
  it('the peer relay and the login rate limiter each log one line, not one per reconnect or login', async () => {
    const { logger, lines } = captureLogger();
    // Port 1: refused at once, and the clients keep reconnecting every few hundred milliseconds.
    const relay = await RedisPeerRelay.start('redis://127.0.0.1:1', 'conveyor:', new TopicSignals(), logger);
    const limiter = await connectRedisRateLimiter('redis://:do-not-log@127.0.0.1:1', 'conveyor:', logger, Date.now);
    // Each login while Redis is away fails over to the in-memory count (about 2 s each, measured).
    for (let i = 0; i < 2; i++) expect((await limiter.limiter.hit('10.0.0.1')).allowed).toBe(true);
    await relay.close();
    await limiter.close();
    expect(lines.map((l) => l.msg)).toEqual([
      'redis connection (peer relay) failed; cross-instance wake-ups fall back to polling',
      'redis connection (login rate limit) failed; the login rate limit counts per instance until it is back',
    ]);
    expect(lines[0].err).toEqual({ message: expect.stringContaining('ECONNREFUSED'), code: 'ECONNREFUSED' });
    expect(JSON.stringify(lines)).not.toContain('do-not-log');
  });
});

/** An in-process server whose log lines the test reads. */
async function startLoggedServer(database: TestDatabase, overrides: ConfigOverrides = {}): Promise<{ server: RunningServer; api: Api; lines: Line[]; text: () => string }> {
  const { logger, lines, text } = captureLogger('info');
  const server = await startServer(testConfig(database.url, overrides), { logger });
  return { server, api: new Api(`http://127.0.0.1:${server.httpPort}`), lines, text };
}

describe('request logging', () => {
  const SECRET = 'a-jwt-secret-that-is-long-enough-0123456789';
  const PASSWORD = 'bootstrap-password-42';
  let database: TestDatabase;
  let running: Awaited<ReturnType<typeof startLoggedServer>>;

  beforeAll(async () => {
    database = await engineByName.sqlite.createDatabase();
    running = await startLoggedServer(database, { auth: { enabled: true, jwt_secret: SECRET, username: 'admin', password: PASSWORD } });
  });
  afterAll(async () => {
    await running?.server.close();
    await database?.drop();
  });

  // Audit lines carry a status too (the answer the audited request got); access lines have a route.
  const accessLines = () => running.lines.filter((l) => typeof l.status === 'number' && typeof l.route === 'string');

  it('logs 4xx at info, 401/403/429 at warn, 5xx at error, successes not at info; with method, route template, status, request id and duration', async () => {
    const { api } = running;
    const login = await api.post('/api/auth/login', { username: 'admin', password: PASSWORD });
    expect(login.status).toBe(200);
    const token = login.body.token as string;
    const auth = { authorization: `Bearer ${token}` };

    // 401: no token, and a wrong one.
    expect((await api.get('/api/stats')).status).toBe(401);
    expect((await api.get('/api/stats', { authorization: 'Bearer not.a.token' })).status).toBe(401);
    // 403: a user without grants.
    expect((await api.post('/api/users', { username: 'nobody', password: 'nobody-password-1', is_admin: false }, auth)).status).toBe(201);
    const nobody = (await api.post('/api/auth/login', { username: 'nobody', password: 'nobody-password-1' })).body.token as string;
    expect((await api.get('/api/topic-configs/orders', { authorization: `Bearer ${nobody}` })).status).toBe(403);
    // 400 with a query string that must not reach the log, 404 on a known route.
    expect((await api.get('/api/messages?topic=orders&limit=abc&token=query-secret', auth)).status).toBe(400);
    expect((await api.post('/api/messages/00000000-0000-7000-8000-000000000000/ack', {}, auth)).status).toBe(404);
    // 2xx: at debug only.
    expect((await api.get('/api/stats', auth)).status).toBe(200);
    // 429: the login rate limit (10 attempts per minute per client, every attempt counting).
    let limited = 0;
    for (let i = 0; i < 12 && limited === 0; i++) if ((await api.post('/api/auth/login', { username: 'admin', password: 'wrong-password' })).status === 429) limited++;
    expect(limited).toBe(1);
    // 5xx: the database gone under the server.
    await running.server.db.destroy();
    expect((await api.get('/api/stats', auth)).status).toBeGreaterThanOrEqual(500);

    await until('the last access line', () => accessLines().some((l) => l.status >= 500));
    const byStatus = (status: number) => accessLines().filter((l) => l.status === status);
    for (const line of accessLines()) {
      expect(Object.keys(line).sort()).toEqual(['level', 'method', 'ms', 'msg', 'reqId', 'route', 'service', 'status', 'time'].sort());
      expect(typeof line.ms).toBe('number');
      expect(line.reqId).toMatch(/^[0-9a-f-]{36}$/);
      expect(line.route).not.toContain('?');
    }
    // Two without a valid token, the rest wrong passwords on the way to the 429.
    expect(byStatus(401).length).toBeGreaterThanOrEqual(2 + 7);
    expect(new Set(byStatus(401).map((l) => l.level))).toEqual(new Set(['warn']));
    expect(byStatus(401).filter((l) => l.route === '/api/auth/login').length).toBe(byStatus(401).length - 2);
    // Refused by the authentication middleware, before routing: still the template of the route asked for.
    expect(byStatus(401).filter((l) => l.route === '/api/stats')).toHaveLength(2);
    expect(byStatus(403)).toEqual([expect.objectContaining({ level: 'warn', method: 'GET', route: expect.stringContaining('/api/topic-configs/:topic') })]);
    expect(byStatus(400)).toEqual([expect.objectContaining({ level: 'info', method: 'GET', route: '/api/messages' })]);
    expect(byStatus(404)).toEqual([expect.objectContaining({ level: 'info', method: 'POST', route: '/api/messages/:id/ack' })]);
    expect(byStatus(429)).toEqual([expect.objectContaining({ level: 'warn', method: 'POST', route: '/api/auth/login' })]);
    expect(accessLines().filter((l) => l.status >= 500).map((l) => l.level)).toEqual(['error']);
    expect(byStatus(200)).toEqual([]);
    expect(byStatus(201)).toEqual([]);

    // Never a token, a password, the Authorization header or a query value.
    const text = running.text();
    for (const secret of [token, nobody, PASSWORD, 'nobody-password-1', 'wrong-password', SECRET, 'query-secret', 'not.a.token']) expect(text).not.toContain(secret);
    expect(text.toLowerCase()).not.toContain('bearer');
    expect(text.toLowerCase()).not.toContain('authorization');
  });
});

describe('request logging of the hot routes (auth off)', () => {
  let database: TestDatabase;
  let running: Awaited<ReturnType<typeof startLoggedServer>>;
  beforeAll(async () => {
    database = await engineByName.sqlite.createDatabase();
    running = await startLoggedServer(database);
  });
  afterAll(async () => {
    await running?.server.close();
    await database?.drop();
  });

  it('logs a 4xx of enqueue, dequeue and ack at info with the route template', async () => {
    const { api } = running;
    expect((await api.post('/api/messages', { topic: 'orders' })).status).toBe(400);
    expect((await api.post('/api/messages/00000000-0000-7000-8000-000000000000/ack', {})).status).toBe(404);
    await until('two access lines', () => running.lines.filter((l) => typeof l.status === 'number').length >= 2, 2000);
    const access = running.lines.filter((l) => typeof l.status === 'number');
    expect(access).toEqual([
      expect.objectContaining({ level: 'info', status: 400, route: '/api/messages' }),
      expect.objectContaining({ level: 'info', status: 404, route: '/api/messages/:id/ack' }),
    ]);
  });
});

describe('start-up lines', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await engineByName.sqlite.createDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('"conveyor listening" names the version, the database, the ports, auth and the reaper mode', async () => {
    const running = await startLoggedServer(database, { metrics: { port: 0 }, reapers: { mode: 'external' } });
    await running.server.close();
    const [line] = withMsg(running.lines, 'conveyor listening');
    expect(line).toEqual({
      level: 'info',
      time: expect.any(String),
      service: 'conveyor',
      msg: 'conveyor listening',
      version: VERSION,
      db: 'sqlite',
      dbLocation: database.url.slice('sqlite:'.length),
      httpPort: running.server.httpPort,
      grpcPort: running.server.grpcPort,
      metricsPort: null,
      auth: false,
      tls: 'off',
      reapers: 'external',
    });
  });

  it('"conveyor controller started" names the version, the database, the namespaces and the lease', async () => {
    const kube = await startFakeKube();
    const { logger, lines } = captureLogger();
    try {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(kube.writeKubeconfig());
      const config = testConfig('mysql://conveyor:do-not-log-me@db.example:3307/queue', {
        controller: { port: 0, host: '127.0.0.1', namespaces: 'team-a, team-b', namespace: 'conveyor-system', lease_name: 'my-lease' },
      });
      const running = await startController(config, { logger, kubeConfig });
      await running.close();
    } finally {
      await kube.close();
    }
    const [line] = withMsg(lines, 'conveyor controller started');
    expect(line).toMatchObject({
      version: VERSION,
      db: 'mysql',
      dbLocation: 'db.example:3307/queue',
      watching: ['team-a', 'team-b'],
      namespace: 'conveyor-system',
      lease: 'my-lease',
      leaseDurationSeconds: 15,
    });
    expect(JSON.stringify(lines)).not.toContain('do-not-log-me');
  });
});

describe('the controller while its database is away', () => {
  afterEach(() => {
    delete process.env.CONVEYOR_TEST_LOG_REPEAT_MS;
  });

  it('logs the connection failure once (then counts), never plain text, while it keeps retrying', async () => {
    process.env.CONVEYOR_TEST_LOG_REPEAT_MS = '1000';
    const kube = await startFakeKube();
    const { logger, lines } = captureLogger();
    const console_ = vi.spyOn(console, 'log');
    try {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(kube.writeKubeconfig());
      // Port 1: connections are refused at once.
      const config = testConfig('mysql://conveyor:pw@127.0.0.1:1/queue', { controller: { port: 0, host: '127.0.0.1' } });
      const running = await startController(config, { logger, kubeConfig });
      // Attempts at about 0, 1 and 3 s (capped exponential backoff).
      await sleep(3500);
      await running.close();
    } finally {
      console_.mockRestore();
      await kube.close();
    }
    expect(console_.mock.calls.flat().join('\n')).not.toMatch(/Acquire connection error|Connection Error/);
    const failed = withMsg(lines, 'database connection failed; retrying; resources report DatabaseError meanwhile');
    expect(failed).toHaveLength(1);
    expect(failed[0].err).toEqual({ message: 'connect ECONNREFUSED 127.0.0.1:1', code: 'ECONNREFUSED' });
    expect(withMsg(lines, 'database connection still failing').length).toBeLessThanOrEqual(3);
    expect(withMsg(lines, 'controller database set-up failed; retrying; resources report DatabaseError meanwhile')).toEqual([]);
  });
});

/** Where the MySQL suites run (MYSQL_URL, or a testcontainer); "" when they skip. */
const mysqlUrl = inject('mysqlUrl');

describe.skipIf(!mysqlUrl)('conveyor serve while MySQL is cut and restored [mysql]', () => {
  const USER = `conveyor_log_${process.pid}`;
  const PASSWORD = 'p4ss-w0rd-never-logged';
  let database: TestDatabase;
  let admin: mysql.Connection;

  beforeAll(async () => {
    database = await engineByName.mysql.createDatabase();
    const server = new URL(mysqlUrl);
    admin = await mysql.createConnection({ host: server.hostname, port: Number(server.port || 3306), user: decodeURIComponent(server.username), password: decodeURIComponent(server.password) });
    const name = new URL(database.url).pathname.slice(1);
    await admin.query(`CREATE USER IF NOT EXISTS '${USER}'@'%' IDENTIFIED BY '${PASSWORD}'`);
    await admin.query(`CREATE USER IF NOT EXISTS '${USER}'@'localhost' IDENTIFIED BY '${PASSWORD}'`);
    await admin.query(`GRANT ALL ON \`${name}\`.* TO '${USER}'@'%'`);
    await admin.query(`GRANT ALL ON \`${name}\`.* TO '${USER}'@'localhost'`);
  });
  afterAll(async () => {
    await admin?.query(`DROP USER IF EXISTS '${USER}'@'%'`);
    await admin?.query(`DROP USER IF EXISTS '${USER}'@'localhost'`);
    await admin?.end();
    await database?.drop();
  });

  it('writes only JSON lines: the failure once, a count per interval, "recovered" after the restore; no credentials', async () => {
    const real = new URL(database.url);
    const proxy = await startTcpProxy(real.hostname, Number(real.port || 3306));
    const url = `mysql://${USER}:${PASSWORD}@127.0.0.1:${proxy.port}${real.pathname}`;
    const child = spawn(process.execPath, conveyorArgs(['serve']), {
      env: {
        ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CONVEYOR_'))),
        CONVEYOR_DB_URL: url,
        CONVEYOR_SERVER_HTTP_PORT: '0',
        CONVEYOR_SERVER_GRPC_PORT: '0',
        CONVEYOR_SERVER_HOST: '127.0.0.1',
        CONVEYOR_LOG_LEVEL: 'info',
        CONVEYOR_QUEUE_CONFIG_REFRESH_INTERVAL: '200ms',
        CONVEYOR_TEST_LOG_REPEAT_MS: '1000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const parsed = () => stdout.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Line);
    try {
      const port = await until('conveyor listening', () => /"httpPort":(\d+)/.exec(stdout)?.[1], 30_000);
      const api = new Api(`http://127.0.0.1:${port}`);
      expect((await api.enqueue('cut', 'before')).status).toBe(201);

      await proxy.cut();
      const cutAt = Date.now();
      // Requests and the 200 ms catalog poll keep hitting the dead database for 3.5 s.
      while (Date.now() - cutAt < 3500) {
        expect((await api.enqueue('cut', 'during')).status).toBe(503);
        await sleep(150);
      }
      await proxy.restore();
      await until('the database connection to recover', () => withMsg(parsed(), 'database connection recovered').length > 0);
      await until('the catalog refresh to recover', () => withMsg(parsed(), 'catalog refresh recovered').length > 0);
      expect((await api.enqueue('cut', 'after')).status).toBe(201);
    } finally {
      await new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
      await proxy.cut().catch(() => {});
    }

    // Every line of stdout is a JSON object: no "Connection Error: ..." or stack lines from knex or mysql2.
    const nonJson = stdout.split('\n').filter((l) => l.trim() !== '' && !/^\{.*\}$/.test(l));
    expect(nonJson, stdout).toEqual([]);
    const lines = parsed();
    expect(stderr).toBe('');

    const failed = withMsg(lines, 'database connection failed');
    expect(failed, stdout).toHaveLength(1);
    expect(failed[0]).toMatchObject({ level: 'warn', db: 'mysql', err: { message: expect.any(String) } });
    expect(failed[0].err.stack).toBeUndefined();
    const counts = withMsg(lines, 'database connection still failing');
    // 3.5 s of failures at one line per second at most (the interval is 1 s here, 30 s in production).
    expect(counts.length).toBeGreaterThanOrEqual(1);
    expect(counts.length).toBeLessThanOrEqual(4);
    expect(counts.at(-1)!.failures).toBeGreaterThan(counts.length);
    const [recovered] = withMsg(lines, 'database connection recovered');
    expect(recovered).toMatchObject({ level: 'info', failures: expect.any(Number), downForSeconds: expect.any(Number) });
    expect(recovered.failures).toBeGreaterThanOrEqual(counts.at(-1)!.failures);
    expect(recovered.downForSeconds).toBeGreaterThanOrEqual(3);

    expect(withMsg(lines, 'catalog refresh failed; keeping the cached topic configuration')).toHaveLength(1);
    expect(withMsg(lines, 'catalog refresh still failing').length).toBeLessThanOrEqual(4);
    expect(withMsg(lines, 'catalog refresh recovered')).toHaveLength(1);

    // The start-up line says where the database is, never who logs in with what.
    const [listening] = withMsg(lines, 'conveyor listening');
    expect(listening).toMatchObject({ db: 'mysql', dbLocation: `127.0.0.1:${proxy.port}${real.pathname}`, version: VERSION, auth: false, reapers: 'in-process' });
    expect(stdout).not.toContain(PASSWORD);
    expect(stdout).not.toContain(`${USER}:`);
  }, 90_000);
});
