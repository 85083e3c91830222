import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import { safeError, statementShape } from '../src/log/redact.js';
import { DomainError } from '../src/queue/errors.js';
import { startServer, type RunningServer } from '../src/server.js';
import { describeEachEngine, type Engine, type TestDatabase } from './helpers/engines.js';
import { QueueClient } from './helpers/grpc.js';
import { Api, type ApiResponse } from './helpers/http.js';
import { captureLogger, type LogLine as Line } from './helpers/log-capture.js';
import { testConfig } from './helpers/server.js';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Everything the workload sends that must never be logged, in every form it may take on the way to SQL. */
class Secrets {
  readonly values = new Set<string>();

  add(value: string): string {
    this.values.add(value);
    return value;
  }

  /** A payload also travels as bytes: knex writes a Buffer as X'<hex>' into the SQL of an error message. */
  payload(value: string): string {
    this.add(value);
    const bytes = Buffer.from(value);
    this.values.add(bytes.toString('hex'));
    this.values.add(bytes.toString('hex').toUpperCase());
    this.values.add(bytes.toString('base64'));
    return value;
  }
}

interface Broken {
  /** Makes every write fail (SQLite: locked; MySQL: unreachable); resolves once it is in place. */
  breakIt(): Promise<void>;
  /**
   * Back, but writes refused by triggers whose error messages quote the row: key, payload, metadata, the stored
   * password hash. A driver's message that can hold values, the way MySQL's `Duplicate entry '<key>'` does.
   */
  rejectWrites(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

const TRIGGERS = ['log_test_messages', 'log_test_users'];

/** SQLite: a second connection on the same file holds the write lock, so every write of the server is SQLITE_BUSY. */
async function breakableSqlite(database: TestDatabase): Promise<{ url: string; broken: Broken }> {
  const other = new Database(database.url.slice('sqlite:'.length));
  other.pragma('busy_timeout = 5000');
  let locked = false;
  const unlock = async () => {
    if (!locked) return;
    other.exec('ROLLBACK');
    locked = false;
  };
  return {
    url: database.url,
    broken: {
      async breakIt() {
        other.exec('BEGIN EXCLUSIVE');
        locked = true;
      },
      async rejectWrites() {
        await unlock();
        other.exec(`CREATE TRIGGER log_test_messages BEFORE INSERT ON messages
          BEGIN SELECT RAISE(ABORT, 'rejected ' || COALESCE(NEW.msg_key, '') || ' ' || CAST(NEW.payload AS TEXT) || ' ' || NEW.metadata); END`);
        other.exec(`CREATE TRIGGER log_test_users BEFORE UPDATE ON users BEGIN SELECT RAISE(ABORT, 'rejected ' || OLD.password_hash); END`);
      },
      async restore() {
        await unlock();
        for (const name of TRIGGERS) other.exec(`DROP TRIGGER IF EXISTS ${name}`);
      },
      async close() {
        other.close();
      },
    },
  };
}

/** MySQL: a user of its own, with a password to look for, reached through a TCP proxy that can drop every connection. */
async function breakableMysql(database: TestDatabase, urlPassword: string): Promise<{ url: string; broken: Broken }> {
  const real = new URL(database.url);
  const dbName = decodeURIComponent(real.pathname.slice(1));
  const user = `cv_log_${randomBytes(4).toString('hex')}`;
  const admin = await mysql.createConnection({
    host: real.hostname,
    port: Number(real.port || 3306),
    user: decodeURIComponent(real.username),
    password: decodeURIComponent(real.password),
    database: dbName,
  });
  const hosts = ['%', 'localhost'];
  for (const host of hosts) {
    await admin.query('CREATE USER ?@? IDENTIFIED BY ?', [user, host, urlPassword]);
    await admin.query(`GRANT ALL PRIVILEGES ON \`${dbName}\`.* TO ?@?`, [user, host]);
  }
  const proxy: TcpProxy = await startTcpProxy(real.hostname, Number(real.port || 3306));
  const url = `mysql://${user}:${encodeURIComponent(urlPassword)}@127.0.0.1:${proxy.port}/${encodeURIComponent(dbName)}`;
  let cut = false;
  const reconnect = async () => {
    if (cut) await proxy.restore();
    cut = false;
  };
  return {
    url,
    broken: {
      async breakIt() {
        await proxy.cut();
        cut = true;
      },
      async rejectWrites() {
        await reconnect();
        await admin.query(`CREATE TRIGGER log_test_messages BEFORE INSERT ON messages FOR EACH ROW BEGIN
          DECLARE msg VARCHAR(128);
          SET msg = LEFT(CONCAT('rejected ', COALESCE(NEW.msg_key, ''), ' ', CAST(NEW.payload AS CHAR CHARACTER SET utf8mb4), ' ', NEW.metadata), 128);
          SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
        END`);
        await admin.query(`CREATE TRIGGER log_test_users BEFORE UPDATE ON users FOR EACH ROW BEGIN
          DECLARE msg VARCHAR(128);
          SET msg = LEFT(CONCAT('rejected ', OLD.password_hash), 128);
          SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
        END`);
      },
      async restore() {
        await reconnect();
        for (const name of TRIGGERS) await admin.query(`DROP TRIGGER IF EXISTS ${name}`);
      },
      async close() {
        if (!cut) await proxy.cut();
        for (const host of hosts) await admin.query('DROP USER IF EXISTS ?@?', [user, host]);
        await admin.end();
      },
    },
  };
}

describeEachEngine('logs never hold payloads, keys, metadata values, passwords, hashes, tokens or URL passwords', (engine: Engine) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  });

  it('while the database fails under a mixed workload, and after it is back (log level trace)', async () => {
    const run = randomBytes(4).toString('hex');
    const secrets = new Secrets();
    const jwtSecret = secrets.add(`jwt-secret-${run}-0123456789abcdefghijklmnop`);
    const adminPassword = secrets.add(`admin-password-${run}`);
    const urlPassword = secrets.add(`UrlPw${run}Secret`);
    const redisPassword = secrets.add(`redis-pw-${run}`);
    const topic = `logs-${run}`;

    const database = await engine.createDatabase();
    cleanups.push(() => database.drop());
    let server: RunningServer | undefined;
    const { url, broken } = engine.name === 'sqlite' ? await breakableSqlite(database) : await breakableMysql(database, urlPassword);
    cleanups.push(() => broken.close());

    // At trace, so knex's query lines are there too.
    const { logger, raw, lines } = captureLogger('trace');
    const config = testConfig(url, {
      auth: { enabled: true, jwt_secret: jwtSecret, username: 'admin', password: adminPassword },
      // Nothing listens on port 1: the Redis clients fail and retry with this password in their URL.
      redis: { url: `redis://default:${redisPassword}@127.0.0.1:1` },
      // SQLite's outage is another connection holding the file's lock: each statement waits 20 ms for it
      // rather than 5 s, so that each phase's failing calls end in a second or two.
      db: { pool_size: 4, lock_wait_timeout: engine.name === 'sqlite' ? '20ms' : '0' },
    });
    server = await startServer(config, { logger });
    cleanups.push(async () => server?.close());
    const api = new Api(`http://127.0.0.1:${server.httpPort}`);

    const login = async (username: string, password: string) => {
      const res = await api.post('/api/auth/login', { username, password });
      if (res.status === 200) secrets.add(res.body.token);
      return res;
    };
    const adminLogin = await login('admin', adminPassword);
    expect(adminLogin.status, adminLogin.text).toBe(200);
    const adminApi = api.withToken(adminLogin.body.token);
    const grpc = new QueueClient(server.grpcPort, adminLogin.body.token);
    cleanups.push(async () => grpc.close());

    // A user made while all is well, whose password the workload changes.
    const firstPassword = secrets.add(`user-password-${run}-first`);
    const created = await adminApi.post('/api/users', { username: `user-${run}`, password: firstPassword, is_admin: false });
    expect(created.status, created.text).toBe(201);
    const userId = created.body.id as string;

    let n = 0;
    /** Every kind of call that carries something secret: enqueues with keys and metadata, users, logins, grants. */
    const workload = async (phase: string): Promise<number[]> => {
      const mark = (what: string) => `${what}-${run}-${phase}-${++n}`;
      const message = () => ({ topic, payload: secrets.payload(mark('payload')), key: secrets.add(mark('key')), metadata: { trace: secrets.add(mark('meta')) } });
      const password = secrets.add(mark('password'));
      const calls: Array<Promise<ApiResponse | { status: number }>> = [
        adminApi.post('/api/messages', message()),
        adminApi.post('/api/messages/batch', { messages: [message(), message()] }),
        grpc
          .call('Enqueue', (({ payload, ...rest }) => ({ ...rest, payload: Buffer.from(payload) }))(message()))
          .then(() => ({ status: 201 }), (err: { code: number }) => ({ status: 1000 + err.code })),
        adminApi.post('/api/messages/dequeue', { topic, count: 5 }).then(async (res) => {
          const ids = ((res.body?.messages ?? []) as Array<{ id: string }>).map((m) => m.id);
          if (ids.length > 0) await adminApi.post('/api/messages/ack', { ids: ids.slice(1) });
          if (ids.length > 0) return adminApi.post(`/api/messages/${ids[0]}/ack`, {});
          return res;
        }),
        adminApi.post('/api/users', { username: mark('user'), password, is_admin: false }),
        adminApi.put(`/api/users/${userId}`, { password: secrets.add(mark('changed-password')) }),
        login(`user-${run}`, firstPassword),
        login('admin', adminPassword),
        adminApi.post(`/api/users/${userId}/grants`, { action: 'write', topic_pattern: `${topic}-${n}` }),
        adminApi.post(`/api/users/${userId}/consumer-group-grants`, { topic_pattern: topic, consumer_group: `group-${n}` }),
      ];
      return (await Promise.all(calls)).map((r) => r.status);
    };

    // Healthy, then broken: every write fails.
    const healthy = await workload('ok1');
    expect(healthy.filter((s) => s >= 500), healthy.join()).toEqual([]);
    // Authentication is cached for a few seconds: a fresh lookup now, so the outage reaches the store itself.
    expect((await adminApi.get('/api/stats')).status).toBe(200);
    await broken.breakIt();
    const failing = await workload('down');
    expect(failing.filter((s) => s >= 500).length, failing.join()).toBeGreaterThanOrEqual(3);

    // Reachable again, but the database refuses writes with messages that quote what was written.
    await broken.rejectWrites();
    const rejected = await workload('rej');
    expect(rejected.filter((s) => s >= 500).length, rejected.join()).toBeGreaterThanOrEqual(3);

    // Back: everything succeeds again, and each query is traced.
    await broken.restore();
    const deadline = Date.now() + 20_000;
    while ((await adminApi.post('/api/messages', { topic, payload: secrets.payload(`probe-${run}-${++n}`) })).status !== 201) {
      if (Date.now() > deadline) throw new Error('the database did not come back');
      await sleep(200);
    }
    const again = await workload('ok2');
    expect(again.filter((s) => s >= 500), again.join()).toEqual([]);

    // The hashes as stored, to look for them too.
    const hashes = (await server.db('users').select('password_hash')) as Array<{ password_hash: string }>;
    expect(hashes.length).toBeGreaterThanOrEqual(3);
    for (const { password_hash: hash } of hashes) {
      secrets.add(hash);
      // argon2's encoded form ends in $<salt>$<digest>: each alone is as secret.
      for (const part of hash.split('$').filter((p) => p.length >= 16)) secrets.add(part);
    }
    await server.close();
    server = undefined;

    // The test proves something only if database failures were logged, with their codes.
    const failures = lines.filter((l) => l.err && (l.level === 'error' || l.level === 'warn') && /database|unhandled|failed/.test(l.msg));
    // An error as logged, and the errors it wraps (a retry that gave up carries the last driver error as its cause).
    const chain = (err: Line | undefined): Line[] => (err ? [err, ...chain(err.cause)] : []);
    const errors = failures.flatMap((l) => chain(l.err));
    const codes = errors.map((e) => e.code).filter(Boolean);
    const rejectedBy = (statement: string) => errors.find((e) => e.statement === statement && /TRIGGER|SIGNAL/.test(e.code ?? ''));
    if (engine.name === 'sqlite') {
      expect(codes, JSON.stringify(failures.slice(0, 5))).toContain('SQLITE_BUSY');
      expect(rejectedBy('insert messages'), JSON.stringify(failures)).toMatchObject({ code: 'SQLITE_CONSTRAINT_TRIGGER' });
      expect(rejectedBy('update users'), JSON.stringify(failures)).toMatchObject({ code: 'SQLITE_CONSTRAINT_TRIGGER' });
    } else {
      // The outage: lost connections and pool timeouts.
      expect(failures.some((l) => /database unavailable/.test(l.msg)), JSON.stringify(failures.slice(0, 5))).toBe(true);
      // The refused writes: MySQL's own error, with its errno and SQL state.
      expect(rejectedBy('insert messages'), JSON.stringify(failures)).toMatchObject({ code: 'ER_SIGNAL_EXCEPTION', errno: 1644, sqlState: '45000' });
      expect(rejectedBy('update users'), JSON.stringify(failures)).toMatchObject({ code: 'ER_SIGNAL_EXCEPTION', errno: 1644, sqlState: '45000' });
    }
    for (const err of errors) expect(Object.keys(err)).toEqual(expect.arrayContaining(['message']));
    // Queries were traced (shape and number of values only).
    const traced = lines.filter((l) => l.source === 'knex' && l.msg === 'query');
    expect(traced.length).toBeGreaterThan(20);
    // The group commit's INSERT and the ack batch's DELETE go to the driver directly on MySQL (src/store/statement.ts), traced all the same.
    expect(traced.map((l) => l.statement)).toEqual(expect.arrayContaining(['insert messages', 'delete messages']));
    for (const line of traced) expect(Object.keys(line).sort()).toEqual(['bindings', 'level', 'msg', 'service', 'source', 'statement', 'time']);
    // The Redis clients failed too (with the password in their URL).
    expect(lines.some((l) => /^redis connection/.test(l.msg))).toBe(true);

    // Not one line holds any of it.
    expect(secrets.values.size).toBeGreaterThan(50);
    expect(raw.length).toBeGreaterThan(100);
    for (const line of raw) {
      expect(line.length, line.slice(0, 300)).toBeLessThan(4000);
      for (const secret of secrets.values) {
        if (line.includes(secret)) throw new Error(`a log line holds "${secret}": ${line.slice(0, 2000)}`);
      }
    }
  }, 90_000);
});

describe('safeError', () => {
  it('keeps code, errno, SQL state and the statement shape of a database error, never its values', () => {
    const err = Object.assign(new Error("insert into `users` (`id`, `password_hash`) values (?, ?) - Duplicate entry 'alice' for key 'username'"), {
      code: 'ER_DUP_ENTRY',
      errno: 1062,
      sqlState: '23000',
      sqlMessage: "Duplicate entry 'alice' for key 'username'",
      sql: "insert into `users` (`id`, `password_hash`) values ('1', '$argon2id$v=19$secret')",
    });
    const safe = safeError(err);
    expect(safe).toMatchObject({ type: 'Error', code: 'ER_DUP_ENTRY', errno: 1062, sqlState: '23000', statement: 'insert users', message: 'insert users failed (ER_DUP_ENTRY)' });
    expect(JSON.stringify(safe)).not.toMatch(/alice|argon2|password_hash/);
    expect(safe.stack).toMatch(/^Error: insert users failed \(ER_DUP_ENTRY\)\n\s+at /);
  });

  it('keeps a driver message that cannot quote a value, and masks URL passwords in any message', () => {
    const busy = Object.assign(new Error('update `messages` set `status` = ? where `id` = ? - SQLITE_BUSY: database is locked'), { code: 'SQLITE_BUSY' });
    expect(safeError(busy, false)).toMatchObject({ message: 'SQLITE_BUSY: database is locked', statement: 'update messages', code: 'SQLITE_BUSY' });
    const url = new Error('cannot connect to redis://default:hunter2-secret@redis:6379/0 or mysql://app:p%40ss@db/q?password=also-secret');
    expect(safeError(url, false).message).toBe('cannot connect to redis://default:***@redis:6379/0 or mysql://app:***@db/q?password=***');
    // Unencoded passwords that a URL parser would read as a port and a path: hidden whole all the same.
    const pasted = new Error('cannot connect to mysql://app:1234/abc@db:3306/q or redis://:99?x#y@cache/0');
    expect(safeError(pasted, false).message).toBe('cannot connect to mysql://app:***@db:3306/q or redis://:***@cache/0');
    // JSON.parse quotes what it could not parse.
    let parseError: unknown;
    try {
      JSON.parse('{"payload": "top-secret-payload"');
    } catch (e) {
      parseError = e;
    }
    expect(safeError(parseError, false).message).not.toContain('top-secret-payload');
    // Our own domain errors keep their words, even ones that look like a statement.
    expect(safeError(new DomainError('invalid_argument', 'set - a value the client sent'), false).message).toBe('set - a value the client sent');
  });

  it('shapes statements without taking a word of a value for a table', () => {
    expect(statementShape("select * from `topic_configs` where `topic` = 'x from secret'")).toBe('select topic_configs');
    expect(statementShape("select 'a from secret' as x from messages")).toBe('select messages');
    expect(statementShape('BEGIN IMMEDIATE;')).toBe('begin');
    expect(statementShape('delete from `deliveries` where `message_id` in (?, ?)')).toBe('delete deliveries');
    expect(statementShape('not sql at all')).toBeUndefined();
  });
});

