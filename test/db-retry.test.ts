import { execFileSync, spawn } from 'node:child_process';
import * as grpc from '@grpc/grpc-js';
import mysql from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { engineByName, type TestDatabase } from './helpers/engines.js';
import { expectGrpcError, QueueClient } from './helpers/grpc.js';
import { captureLogger } from './helpers/log-capture.js';
import { metricValue } from './helpers/metrics.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.js';

/**
 * The store's one retry policy (src/store/retry.ts) against real failures: deadlocks and lock waits that a
 * second connection causes on MariaDB, SQLite kept busy by another process, and connections that a TCP
 * proxy cuts, including right after a COMMIT reached the database but before its answer came back.
 */

const mysqlUrl = inject('mysqlUrl');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const conflicts = (server: TestServer, kind: string) => metricValue(server.api, 'conveyor_db_conflicts_total', { kind });
const retries = (server: TestServer, outcome: string) => metricValue(server.api, 'conveyor_db_retries_total', { outcome });

/** Waits (bounded) until some transaction of the database other than `other`'s waits for a row lock. */
async function waitForLockWait(other: mysql.Connection, timeoutMs = 10_000): Promise<void> {
  const [[{ id }]] = (await other.query('SELECT CONNECTION_ID() AS id')) as unknown as [[{ id: number }]];
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const [rows] = (await other.query("SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT' AND trx_mysql_thread_id <> ?", [id])) as unknown as [
      Array<{ n: number }>,
    ];
    if (Number(rows[0].n) > 0) return;
    // InnoDB refreshes INNODB_TRX only when it was not read for 100 ms: faster polls would see a stale table forever.
    await sleep(150);
  }
  throw new Error('no transaction started waiting for a lock');
}

(mysqlUrl ? describe : describe.skip)('database retries: deadlocks and lock waits [mysql]', () => {
  const engine = engineByName.mysql;
  let server: TestServer & { database: TestDatabase };
  let other: mysql.Connection;
  let grpcClient: QueueClient;
  const log = captureLogger();
  beforeAll(async () => {
    // Lock waits give up after one second here (the server's default is 50), so exhausting eight attempts takes seconds.
    server = await startTestServer(engine, { overrides: { db: { lock_wait_timeout: '1s' } }, logger: log.logger });
    other = await mysql.createConnection(server.database.url);
    grpcClient = new QueueClient(server.server.grpcPort);
  });
  afterAll(async () => {
    grpcClient?.close();
    await other?.end();
    await server?.close();
  });

  it('a deadlock victim is run again whole: the schema PUT succeeds once, version 2 not 3', async () => {
    expect((await server.api.put('/api/topic-schemas/dl', { schema_json: '"string"' })).body.version).toBe(1);
    const before = await conflicts(server, 'deadlock');
    await other.beginTransaction();
    // Many changed rows make this transaction the heavier one, so InnoDB rolls back the server's instead.
    const heavy = Array.from({ length: 200 }, (_, i) => [`heavy-${i}`, 1, 0]);
    await other.query('INSERT INTO topic_buckets (topic, tokens, refilled_at) VALUES ?', [heavy]);
    await other.query("UPDATE settings SET revision = revision + 1 WHERE name = 'catalog'");
    // The server's transaction locks and updates the schema row, then waits for the catalog row held above.
    const put = server.api.put('/api/topic-schemas/dl', { schema_json: '"bytes"' });
    await waitForLockWait(other);
    // Now this one waits for the schema row: a cycle, and InnoDB picks the server's transaction as the victim.
    await other.query("SELECT topic FROM topic_schemas WHERE topic = 'dl' FOR UPDATE");
    await other.rollback();
    const res = await put;
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ schema_json: '"bytes"', version: 2 });
    expect((await server.api.get('/api/topic-schemas/dl')).body.version).toBe(2);
    expect(await conflicts(server, 'deadlock')).toBeGreaterThan(before);
    expect(await retries(server, 'recovered')).toBeGreaterThan(0);
  });

  it('a lock wait that times out is retried, and an enqueue stored once when the lock goes', async () => {
    expect((await server.api.put('/api/topic-configs/capped', { max_depth: 100 })).status).toBe(200);
    const before = await conflicts(server, 'lock_wait');
    await other.beginTransaction();
    // Every enqueue to a capped topic locks its configuration row first (max_depth is counted under it).
    await other.query("SELECT topic FROM topic_configs WHERE topic = 'capped' FOR UPDATE");
    const enqueue = server.api.enqueue('capped', 'first');
    await sleep(1600);
    await other.rollback();
    const res = await enqueue;
    expect(res.status, res.text).toBe(201);
    expect(await conflicts(server, 'lock_wait')).toBeGreaterThan(before);
    const stored = await server.api.get('/api/messages?topic=capped');
    expect(stored.body.items.map((m: { id: string }) => m.id)).toEqual([res.body.id]);
  });

  it('when every attempt waits in vain: HTTP 503 "database busy, retry" with Retry-After, gRPC UNAVAILABLE, nothing stored', async () => {
    const exhausted = await retries(server, 'exhausted');
    await other.beginTransaction();
    await other.query("SELECT topic FROM topic_configs WHERE topic = 'capped' FOR UPDATE");
    try {
      const [http] = await Promise.all([
        server.api.enqueue('capped', 'never'),
        expectGrpcError(grpcClient.call('Enqueue', { topic: 'capped', payload: Buffer.from('never either') }), grpc.status.UNAVAILABLE, /^database busy, retry$/),
      ]);
      expect(http.status).toBe(503);
      expect(http.body).toEqual({ error: 'database busy, retry' });
      expect(http.headers.get('retry-after')).toBe('1');
    } finally {
      await other.rollback();
    }
    expect(await retries(server, 'exhausted')).toBeGreaterThan(exhausted);
    expect((await server.api.get('/api/messages?topic=capped')).body.total).toBe(1);
    // Both transports log it the same way: a warning (the client is told to retry) naming the route or method.
    const busy = log.lines.filter((l) => l.msg === 'database busy');
    expect(busy.find((l) => l.method === 'Enqueue')).toMatchObject({ level: 'warn' });
    expect(busy.find((l) => l.method !== 'Enqueue')).toMatchObject({ level: 'warn' });
  });
});

(mysqlUrl ? describe : describe.skip)('database retries: connections lost under load [mysql]', () => {
  const engine = engineByName.mysql;
  let database: TestDatabase;
  let proxy: TcpProxy;
  let server: TestServer;
  beforeAll(async () => {
    database = await engine.createDatabase();
    const direct = new URL(database.url);
    proxy = await startTcpProxy(direct.hostname, Number(direct.port || 3306));
    const viaProxy = new URL(database.url);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    // No in-process reapers: a lost COMMIT answer must be the one of the statement a test arms it for.
    server = await startTestServer(engine, {
      database: { url: viaProxy.toString(), drop: async () => {} },
      overrides: { queue: { expiry_reaper_interval: 0, archive_reaper_interval: 0 } },
    });
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
  });
  afterEach(() => proxy.loseAnswerAfter('', 0));

  async function topicIds(topic: string): Promise<string[]> {
    const res = await server.api.get(`/api/messages?topic=${topic}&limit=1000`);
    expect(res.status, res.text).toBe(200);
    return res.body.items.map((m: { id: string }) => m.id);
  }

  it('an enqueue whose INSERT committed but whose answer was lost is answered 201 and stored once', async () => {
    const lost = proxy.lostAnswers;
    // The plain enqueue is one autocommit INSERT (src/store/messages/insert.ts); its answer never arrives.
    proxy.loseAnswerAfter('INSERT INTO messages', 1);
    const res = await server.api.enqueue('lost-insert', 'once');
    expect(res.status, res.text).toBe(201);
    expect(proxy.lostAnswers).toBe(lost + 1);
    expect(await topicIds('lost-insert')).toEqual([res.body.id]);
    expect(await conflicts(server, 'connection_lost')).toBeGreaterThan(0);
  });

  it('a batch whose COMMIT answer was lost is answered 201, every message stored once, keyed ones too', async () => {
    const lost = proxy.lostAnswers;
    proxy.loseAnswerAfter('COMMIT', 1);
    const messages = [
      { topic: 'lost-commit', payload: 'a', key: 'ka' },
      { topic: 'lost-commit', payload: 'b' },
      { topic: 'lost-commit', payload: 'c', key: 'kc' },
    ];
    const res = await server.api.post('/api/messages/batch', { messages });
    expect(res.status, res.text).toBe(201);
    expect(proxy.lostAnswers).toBe(lost + 1);
    expect((await topicIds('lost-commit')).sort()).toEqual([...res.body.ids].sort());
    expect(new Set(res.body.ids).size).toBe(3);
  });

  it('an ack whose answer was lost is answered as acked, not 404', async () => {
    const id = (await server.api.enqueue('lost-ack', 'x')).body.id;
    expect((await server.api.dequeue('lost-ack')).body.messages.map((m: { id: string }) => m.id)).toEqual([id]);
    const lost = proxy.lostAnswers;
    proxy.loseAnswerAfter('RETURNING id, topic', 1);
    const res = await server.api.post(`/api/messages/${id}/ack`);
    expect(res.status, res.text).toBe(204);
    expect(proxy.lostAnswers).toBe(lost + 1);
    expect(await topicIds('lost-ack')).toEqual([]);
  });

  it('a nack whose COMMIT answer was lost counts one attempt, not two', async () => {
    const id = (await server.api.enqueue('lost-nack', 'x')).body.id;
    expect((await server.api.dequeue('lost-nack')).body.messages).toHaveLength(1);
    proxy.loseAnswerAfter('COMMIT', 1);
    const res = await server.api.post(`/api/messages/${id}/nack`, { error: 'boom' });
    expect(res.status, res.text).toBe(204);
    const again = await server.api.dequeue('lost-nack');
    expect(again.body.messages.map((m: { id: string; retry_count: number }) => [m.id, m.retry_count])).toEqual([[id, 1]]);
  });

  it('a claim whose COMMIT answer was lost delays its message until the visibility timeout, never loses it', async () => {
    // A dequeue first checks its topic for expired claims, in a transaction of its own, unless it did so in
    // the last 100 ms. On a slow machine the armed COMMIT can be that check's: its re-run then finds nothing
    // to release and the claim runs normally (the message comes back at once). Tried on fresh topics until
    // the lost COMMIT is the claim's (bounded).
    for (let round = 0; round < 5; round++) {
      const topic = `lost-claim-${round}`;
      expect((await server.api.dequeue(topic)).body.messages).toEqual([]);
      const id = (await server.api.enqueue(topic, 'x')).body.id;
      const lost = proxy.lostAnswers;
      proxy.loseAnswerAfter('COMMIT', 1);
      const first = await server.api.dequeue(topic, { visibility_timeout_seconds: 1 });
      expect(first.status, first.text).toBe(200);
      expect(proxy.lostAnswers).toBe(lost + 1);
      if (first.body.messages.length > 0) continue;
      await sleep(1200);
      expect((await server.api.dequeue(topic)).body.messages.map((m: { id: string }) => m.id)).toEqual([id]);
      return;
    }
    expect.unreachable('the lost COMMIT was never the claim\'s in five rounds');
  });

  it('under load with connections cut and answers lost: no 5xx, every confirmed message delivered, none twice, none extra', async () => {
    const statuses: number[] = [];
    const confirmed = new Set<string>();
    const received: string[] = [];
    const notFound: string[] = [];
    let producing = true;
    const failures: string[] = [];
    const note = (status: number, text = '') => {
      statuses.push(status);
      if (status >= 500) failures.push(`${status} ${text}`);
    };

    const single = async (worker: number) => {
      for (let i = 0; i < 50; i++) {
        const res = await server.api.enqueue('load', `s${worker}-${i}`, worker === 0 ? { key: `k${i}` } : {});
        note(res.status, res.text);
        if (res.status === 201) confirmed.add(res.body.id);
      }
    };
    const batches = async () => {
      for (let i = 0; i < 8; i++) {
        const messages = Array.from({ length: 20 }, (_, j) => ({ topic: 'load', payload: `b${i}-${j}`, ...(j % 5 === 0 ? { key: `bk${i}-${j}` } : {}) }));
        const res = await server.api.post('/api/messages/batch', { messages });
        note(res.status, res.text);
        if (res.status === 201) for (const id of res.body.ids) confirmed.add(id);
      }
    };
    const consume = async () => {
      const deadline = Date.now() + 40_000;
      let idle = 0;
      while (Date.now() < deadline) {
        const res = await server.api.dequeue('load', { count: 10, visibility_timeout_seconds: 3 });
        note(res.status, res.text);
        const batch = res.status === 200 ? (res.body.messages as Array<{ id: string }>) : [];
        if (batch.length === 0) {
          // Done once producers stopped and nothing came for longer than a visibility timeout.
          if (!producing && ++idle > 40) return;
          await sleep(100);
          continue;
        }
        idle = 0;
        received.push(...batch.map((m) => m.id));
        const ack = await server.api.post('/api/messages/ack', { ids: batch.map((m) => m.id) });
        note(ack.status, ack.text);
        if (ack.status === 200) notFound.push(...ack.body.not_found);
      }
    };
    const chaos = async () => {
      const faults: Array<() => void> = [
        () => proxy.loseAnswerAfter('COMMIT', 1),
        () => proxy.loseAnswerAfter('INSERT INTO messages', 1),
        () => proxy.loseAnswerAfter('RETURNING id, topic', 1),
        () => proxy.dropConnections(),
      ];
      for (let i = 0; producing && i < 100; i++) {
        faults[i % faults.length]();
        await sleep(120);
      }
    };
    const lostBefore = proxy.lostAnswers;
    const consumers = [consume(), consume()];
    const faults = chaos();
    await Promise.all([single(0), single(1), single(2), batches()]);
    producing = false;
    await faults;
    proxy.loseAnswerAfter('', 0);
    await Promise.all(consumers);

    expect(failures).toEqual([]);
    expect(proxy.lostAnswers).toBeGreaterThan(lostBefore);
    expect(confirmed.size).toBe(3 * 50 + 8 * 20);
    // Every confirmed message was delivered; nothing was delivered that was not confirmed (no second copy).
    expect([...new Set(received)].sort()).toEqual([...confirmed].sort());
    expect(notFound).toEqual([]);
    expect(await topicIds('load')).toEqual([]);
    expect(await retries(server, 'recovered')).toBeGreaterThan(0);
  });

  it('a database that cannot be reached at all is still "database unavailable", at once', async () => {
    await proxy.cut();
    try {
      const res = await server.api.enqueue('gone', 'x');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: 'database unavailable' });
    } finally {
      await proxy.restore();
    }
  });
});

/**
 * Another process holding the SQLite file's write lock (as `conveyor reap` or a second `serve` would) from
 * BEGIN IMMEDIATE until the test says "release", or until maxMs passed: `released` tells which came first.
 */
async function holdSqliteWriteLock(file: string, maxMs: number): Promise<{ release(): Promise<'command' | 'timeout'> }> {
  const holder = spawn(
    process.execPath,
    [
      '-e',
      `const D = require('better-sqlite3'); const d = new D(${JSON.stringify(file)}); d.exec('BEGIN IMMEDIATE');
       const end = (how) => { d.exec('COMMIT'); d.close(); console.log('released:' + how); process.exit(0); };
       const timer = setTimeout(() => end('timeout'), ${maxMs});
       process.stdin.on('data', () => { clearTimeout(timer); end('command'); });
       console.log('locked');`,
    ],
    { cwd: process.cwd(), stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let output = '';
  holder.stdout!.on('data', (chunk) => (output += String(chunk)));
  // "release" may reach a holder that already let go on its own.
  holder.stdin!.on('error', () => undefined);
  const exited = new Promise<void>((resolve) => holder.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    holder.stdout!.on('data', () => output.includes('locked') && resolve());
    holder.once('exit', (code) => reject(new Error(`lock holder exited with ${code}`)));
  });
  return {
    async release() {
      holder.stdin!.end('release\n');
      await exited;
      const how = /released:(\w+)/.exec(output)?.[1];
      if (how !== 'command' && how !== 'timeout') throw new Error(`lock holder said: ${output}`);
      return how;
    },
  };
}

describe('database retries: SQLite busy [sqlite]', () => {
  let server: TestServer & { database: TestDatabase };
  beforeAll(async () => {
    server = await startTestServer(engineByName.sqlite);
  });
  afterAll(async () => {
    await server?.close();
  });
  const fileOf = (s: TestServer & { database: TestDatabase }) => s.database.url.slice('sqlite:'.length);

  it('an enqueue whose wait for the lock ran out is retried, and stored once when the lock is let go', async () => {
    const short = await startTestServer(engineByName.sqlite, { overrides: { db: { lock_wait_timeout: '1s' } } });
    const lock = await holdSqliteWriteLock(fileOf(short), 30_000);
    let released: Promise<unknown> | undefined;
    try {
      const enqueued = short.api.enqueue('busy', 'once');
      // The first attempt gives up after the 1 s lock wait (a lock_wait conflict); the lock goes while the retry
      // policy's later attempts (0.4-0.8 s of backoff) still run.
      await expect.poll(() => conflicts(short, 'lock_wait'), { timeout: 10_000, interval: 20 }).toBeGreaterThan(0);
      released = lock.release();
      const res = await enqueued;
      expect(res.status, res.text).toBe(201);
      expect((await short.api.get('/api/messages?topic=busy')).body.items.map((m: { id: string }) => m.id)).toEqual([res.body.id]);
      expect(await retries(short, 'recovered')).toBeGreaterThan(0);
    } finally {
      await (released ?? lock.release());
      await short.close();
    }
  });

  it('waiting for the lock leaves the process serving: /healthz answers while an enqueue waits, and the enqueue then lands', async () => {
    // The server runs in this test's process: had the wait blocked the event loop (SQLite's own busy handler
    // sleeps on it), the health check could only be answered after the holder gave up on its own after 3 s.
    const lock = await holdSqliteWriteLock(fileOf(server), 3_000);
    let settled = false;
    const enqueued = server.api.enqueue('patient', 'waits').finally(() => (settled = true));
    let released: Promise<'command' | 'timeout'> | undefined;
    try {
      await sleep(200);
      const health = await server.api.get('/healthz');
      expect(health.status).toBe(200);
      expect(settled).toBe(false);
      released = lock.release();
      expect(await released).toBe('command');
      const res = await enqueued;
      expect(res.status, res.text).toBe(201);
      expect((await server.api.get('/api/messages?topic=patient')).body.items.map((m: { id: string }) => m.id)).toEqual([res.body.id]);
    } finally {
      await (released ?? lock.release());
      await enqueued.catch(() => undefined);
    }
  });

  it('db.lock_wait_timeout bounds the wait of every request at once: a lock held for good ends in 503 "database busy, retry", nothing stored', async () => {
    const short = await startTestServer(engineByName.sqlite, { overrides: { db: { lock_wait_timeout: '1s' } } });
    const lock = await holdSqliteWriteLock(fileOf(short), 60_000);
    let released: Promise<'command' | 'timeout'> | undefined;
    try {
      const started = Date.now();
      // Requests queue for the process's one connection: had each statement waited its own second, each of
      // these ten would wait through all the others' attempts (eight each), for half a minute and more.
      const answers = await Promise.all([
        ...Array.from({ length: 8 }, (_, i) => short.api.enqueue('held', `never ${i}`)),
        short.api.dequeue('held'),
        short.api.put('/api/topic-configs/held', { max_retries: 2 }),
      ]);
      expect(Date.now() - started).toBeLessThan(15_000);
      for (const res of answers) {
        expect(res.status, res.text).toBe(503);
        expect(res.body).toEqual({ error: 'database busy, retry' });
        expect(res.headers.get('retry-after')).toBe('1');
      }
      released = lock.release();
      expect(await released).toBe('command');
      expect(await retries(short, 'exhausted')).toBeGreaterThan(0);
      // The first write through the released lock ends the lock-out: the process waits again from here on.
      expect((await short.api.enqueue('held', 'after')).status).toBe(201);
      expect((await short.api.get('/api/messages?topic=held')).body.items.map((m: { payload: string }) => m.payload)).toEqual(['after']);
    } finally {
      await (released ?? lock.release());
      await short.close();
    }
  });

  it('a lock-out that ended without a write does not cut short the next wait: a later brief lock is waited for', async () => {
    const server3 = await startTestServer(engineByName.sqlite, { overrides: { db: { lock_wait_timeout: '3s' } } });
    try {
      const held = await holdSqliteWriteLock(fileOf(server3), 60_000);
      try {
        expect((await server3.api.enqueue('gap', 'refused')).status).toBe(503);
      } finally {
        await held.release();
      }
      // Nothing writes meanwhile; then another process holds the lock for 1.5 s, longer than the retry
      // policy's backoff alone (at most 0.81 s) and shorter than the 3 s lock wait.
      await sleep(1_500);
      const brief = await holdSqliteWriteLock(fileOf(server3), 1_500);
      const res = await server3.api.enqueue('gap', 'waited');
      expect(await brief.release()).toBe('timeout');
      expect(res.status, res.text).toBe(201);
    } finally {
      await server3.close();
    }
  });

  it('shutting down while the lock is held for good takes the lock wait, not the lock holder\'s time', async () => {
    const doomed = await startTestServer(engineByName.sqlite);
    const lock = await holdSqliteWriteLock(fileOf(doomed), 60_000);
    try {
      const pending = Array.from({ length: 4 }, (_, i) => doomed.api.enqueue('closing', `never ${i}`).catch((err: Error) => err));
      await sleep(200);
      const started = Date.now();
      await doomed.close();
      // The 5 s lock wait and the retries after it, well inside server.shutdown_timeout (25 s); before, each of
      // the four requests waited through eight attempts of its own and the process with them.
      expect(Date.now() - started).toBeLessThan(15_000);
      for (const res of await Promise.all(pending)) if (!(res instanceof Error)) expect(res.status, res.text).toBe(503);
    } finally {
      await lock.release();
    }
  });

  it('a file not yet in WAL mode that another process holds: start-up waits for the lock instead of failing', async () => {
    const database = await engineByName.sqlite.createDatabase();
    const file = database.url.slice('sqlite:'.length);
    // A file made by another tool, in SQLite's default rollback-journal mode: switching it to WAL needs it unlocked.
    execFileSync(process.execPath, ['-e', `const D = require('better-sqlite3'); const d = new D(${JSON.stringify(file)}); d.exec('CREATE TABLE other_tool (x)'); d.close();`]);
    const lock = await holdSqliteWriteLock(file, 1_500);
    let late: (TestServer & { database: TestDatabase }) | undefined;
    try {
      late = await startTestServer(engineByName.sqlite, { database });
      expect(await lock.release()).toBe('timeout');
      expect((await late.api.enqueue('late', 'started')).status).toBe(201);
    } finally {
      await lock.release();
      await late?.close();
    }
  });
});
