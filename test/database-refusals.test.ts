import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { engineByName } from './helpers/engines.js';
import { galeraMissing, startGaleraCluster, type GaleraCluster } from './helpers/galera-cluster.js';
import { startChildServer, startTestServer } from './helpers/server.js';

// What the service answers when the database refuses its statements for a while (an operator's lock or
// KILL QUERY, a server switched to read-only, a full disk under SQLite): a retry where one can succeed, a
// 503 where none can, never a 500, and nothing acknowledged lost.
const mysqlUrl = inject('mysqlUrl');

async function connect(url: string): Promise<mysql.Connection> {
  const u = new URL(url);
  return mysql.createConnection({ host: u.hostname, port: Number(u.port || 3306), user: decodeURIComponent(u.username), password: decodeURIComponent(u.password), database: u.pathname.slice(1) || undefined });
}

/** Ids of the other sessions on `schema` that wait for a table lock. */
async function waitingForTableLock(conn: mysql.Connection, schema: string): Promise<number[]> {
  const [rows] = await conn.query("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID() AND STATE LIKE 'Waiting for table%'", [schema]);
  return (rows as Array<{ ID: number }>).map((r) => r.ID);
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

(mysqlUrl ? describe : describe.skip)('a MySQL database that stops statements [mysql]', () => {
  it('a statement stopped by KILL QUERY is run again: the enqueue answers 201 and the message is stored once', async () => {
    const t = await startTestServer(engineByName.mysql);
    const locker = await connect(t.database.url);
    try {
      const schema = new URL(t.database.url).pathname.slice(1);
      await locker.query('LOCK TABLES messages WRITE');
      const pending = t.api.enqueue('interrupted', 'survives');
      const waiting = await until('the enqueue to wait for the table lock', async () => {
        const ids = await waitingForTableLock(locker, schema);
        return ids.length > 0 ? ids : undefined;
      });
      for (const id of waiting) await locker.query(`KILL QUERY ${Number(id)}`);
      await new Promise((r) => setTimeout(r, 100));
      await locker.query('UNLOCK TABLES');
      const res = await pending;
      expect(res.status, res.text).toBe(201);
      const got = await t.api.dequeue('interrupted', { count: 10 });
      expect(got.body.messages.map((m: { id: string; payload: string }) => [m.id, m.payload])).toEqual([[res.body.id, 'survives']]);
    } finally {
      await locker.end();
      await t.close();
    }
  });

  it('a table lock held past db.lock_wait_timeout answers "database busy, retry" (503) instead of holding the request', async () => {
    const t = await startTestServer(engineByName.mysql, { overrides: { db: { lock_wait_timeout: '1s' } } });
    const locker = await connect(t.database.url);
    // The lock ends by itself after 30 s, so a request that waits for it (the defect) fails this test, not the run.
    const release = setTimeout(() => void locker.query('UNLOCK TABLES').catch(() => {}), 30_000);
    try {
      await locker.query('LOCK TABLES messages WRITE');
      const res = await t.api.enqueue('locked', 'waits');
      expect(res.status, res.text).toBe(503);
      expect(res.body).toEqual({ error: 'database busy, retry' });
      expect(res.headers.get('retry-after')).toBe('1');
      expect((await t.api.get('/readyz')).status).toBe(200);
      await locker.query('UNLOCK TABLES');
      expect((await t.api.enqueue('locked', 'after')).status).toBe(201);
    } finally {
      clearTimeout(release);
      await locker.end();
      await t.close();
    }
  }, 60_000);
});

// read_only and max_allowed_packet are global: they get a server of their own (one MariaDB node, started by
// the Galera helper).
(mysqlUrl && !galeraMissing() ? describe : describe.skip)('a MySQL server whose settings refuse statements [mysql]', () => {
  let cluster: GaleraCluster | undefined;
  beforeAll(async () => {
    cluster = await startGaleraCluster({ nodes: 1 });
  }, 180_000);
  afterAll(async () => {
    await cluster?.stopAll();
  });

  it('switched to read-only: queue calls answer 503 "database unavailable" and /readyz 503 while it refuses writes; all is back once it accepts them', async () => {
    const database = await cluster!.createDatabase();
    const root = await connect(cluster!.nodes[0].url);
    try {
      // The service's user, as in production: root may write to a read-only server, an application user may not.
      await root.query("CREATE USER 'conveyor_app'@'127.0.0.1' IDENTIFIED BY 'app-password'");
      await root.query(`GRANT ALL ON \`${database.name}\`.* TO 'conveyor_app'@'127.0.0.1'`);
      const url = `mysql://conveyor_app:app-password@127.0.0.1:${cluster!.nodes[0].port}/${database.name}`;
      const t = await startTestServer(engineByName.mysql, { database: { url, drop: database.drop } });
      try {
        const before = await t.api.enqueue('ro', 'stored before');
        expect(before.status).toBe(201);
        await root.query('SET GLOBAL read_only = 1');
        for (const res of [await t.api.enqueue('ro', 'refused'), await t.api.dequeue('ro')]) {
          expect(res.status, res.text).toBe(503);
          expect(res.body).toEqual({ error: 'database unavailable' });
        }
        const ready = await t.api.get('/readyz');
        expect(ready.status).toBe(503);
        expect(ready.body).toEqual({ error: 'database is read-only (read_only is ON)' });
        await root.query('SET GLOBAL read_only = 0');
        expect((await t.api.get('/readyz')).status).toBe(200);
        const after = await t.api.enqueue('ro', 'stored after');
        expect(after.status).toBe(201);
        const got = await t.api.dequeue('ro', { count: 10 });
        expect(got.body.messages.map((m: { payload: string }) => m.payload)).toEqual(['stored before', 'stored after']);
      } finally {
        await root.query('SET GLOBAL read_only = 0');
        await t.close();
      }
    } finally {
      await root.end();
    }
  }, 120_000);

  it('max_allowed_packet lowered under a running service: a statement over it answers 503 "database unavailable", smaller ones go on; nothing lost', async () => {
    const database = await cluster!.createDatabase();
    const root = await connect(cluster!.nodes[0].url);
    const [[{ packet }]] = (await root.query('SELECT @@GLOBAL.max_allowed_packet AS packet')) as unknown as [[{ packet: number }]];
    // Sessions copy max_allowed_packet when they connect: end the service's so its pool opens new ones. A
    // session still connecting has no database yet: it may have copied the old value, so it goes too.
    const endServiceSessions = async () => {
      const [rows] = await root.query(
        "SELECT ID FROM information_schema.PROCESSLIST WHERE (DB = ? OR DB IS NULL) AND ID <> CONNECTION_ID() AND USER <> 'system user' AND COMMAND <> 'Daemon'",
        [database.name],
      );
      for (const { ID } of rows as Array<{ ID: number }>) await root.query(`KILL ${ID}`).catch(() => undefined);
    };
    const t = await startTestServer(engineByName.mysql, { database: { url: database.urlOn(0), drop: database.drop } });
    const large = 'x'.repeat(200_000);
    try {
      expect((await t.api.enqueue('packets', 'small before')).status).toBe(201);
      await root.query('SET GLOBAL max_allowed_packet = 65536');
      await endServiceSessions();
      const refused = await t.api.enqueue('packets', large);
      expect(refused.status, refused.text).toBe(503);
      expect(refused.body).toEqual({ error: 'database unavailable' });
      expect((await t.api.enqueue('packets', 'small during')).status).toBe(201);
      await root.query(`SET GLOBAL max_allowed_packet = ${Number(packet)}`);
      await endServiceSessions();
      const stored = await t.api.enqueue('packets', large);
      expect(stored.status, stored.text).toBe(201);
      const got = await t.api.dequeue('packets', { count: 10 });
      expect(got.body.messages.map((m: { payload: string }) => (m.payload.length > 100 ? `large ${m.payload.length}` : m.payload))).toEqual([
        'small before',
        'small during',
        'large 200000',
      ]);
    } finally {
      await root.query(`SET GLOBAL max_allowed_packet = ${Number(packet)}`);
      await t.close();
      await root.end();
    }
  }, 120_000);
});

describe('an SQLite file that cannot grow [sqlite]', () => {
  it('enqueues past the limit answer 503 "database unavailable", never 500; every 201 is there once the file can grow again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conveyor-full-'));
    const child = await startChildServer({ CONVEYOR_DB_URL: `sqlite:${join(dir, 'conveyor.db')}` });
    try {
      // As a full disk does: writes past 3 MiB in any file of the process fail (EFBIG, SQLite's I/O error).
      execFileSync('prlimit', ['--pid', String(child.process.pid), '--fsize=3145728:']);
      const stored: string[] = [];
      let refused: { status: number; text: string; body: unknown } | undefined;
      for (let i = 0; i < 200 && !refused; i++) {
        const payload = `${i}:${'x'.repeat(100_000)}`;
        const res = await child.api.enqueue('full', payload);
        if (res.status === 201) stored.push(payload);
        else refused = res;
      }
      expect(refused?.status, refused?.text).toBe(503);
      expect(refused?.body).toEqual({ error: 'database unavailable' });
      expect(stored.length).toBeGreaterThan(0);
      execFileSync('prlimit', ['--pid', String(child.process.pid), '--fsize=unlimited:']);
      const got = await child.api.dequeue('full', { count: 1000 });
      expect(got.status, got.text).toBe(200);
      expect(got.body.messages.map((m: { payload: string }) => m.payload)).toEqual(stored);
    } finally {
      expect(await child.stop()).toBe(0);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
