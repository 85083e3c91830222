import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { expect, it } from 'vitest';
import { createLeasesTable } from '../migrations/20261123020000_leases.js';
import { createLogger } from '../src/log/logger.js';
import { createDb } from '../src/store/db.js';
import { releaseLease, tryAcquireLease } from '../src/store/leases.js';
import { describeEachEngine, type Engine } from './helpers/engines.js';
import { startChildServer } from './helpers/server.js';
import { startTestServer } from './helpers/server.js';
import { conveyorArgs } from './helpers/conveyor-command.js';

const SHUTDOWN_TIMEOUT_SECONDS = 5;

describeEachEngine('graceful shutdown', (engine) => {
  it('SIGTERM under a stream of enqueues: every 201 is stored, nothing half-written, exit 0 in time', async () => {
    const database = await engine.createDatabase();
    try {
      const child = await startChildServer({ CONVEYOR_DB_URL: database.url, CONVEYOR_SERVER_SHUTDOWN_TIMEOUT: `${SHUTDOWN_TIMEOUT_SECONDS}s` });
      const acknowledged = new Map<string, string>();
      const batches: Array<{ ids: string[]; payloads: string[] }> = [];
      let failures = 0;
      let stopping = false;
      const sent = new Set<string>();

      const singleProducer = async (worker: number) => {
        for (let seq = 0; ; seq++) {
          const payload = `w${worker}-s${seq}-${'x'.repeat(2000)}`;
          sent.add(payload);
          try {
            const res = await child.api.enqueue('stream', payload, { metadata: { worker: String(worker), seq: String(seq) } });
            if (res.status === 201) acknowledged.set(res.body.id, payload);
            else failures++;
          } catch {
            failures++;
            if (stopping) return;
          }
          if (stopping && failures > 50) return;
        }
      };
      const batchProducer = async (worker: number) => {
        for (let seq = 0; ; seq++) {
          const payloads = Array.from({ length: 25 }, (_, i) => `b${worker}-s${seq}-${i}-${'y'.repeat(500)}`);
          for (const p of payloads) sent.add(p);
          try {
            const res = await child.api.post('/api/messages/batch', { messages: payloads.map((payload) => ({ topic: 'stream', payload })) });
            if (res.status === 201) batches.push({ ids: res.body.ids, payloads });
            else failures++;
          } catch {
            failures++;
            if (stopping) return;
          }
          if (stopping && failures > 50) return;
        }
      };

      const producers = Promise.all([...Array.from({ length: 6 }, (_, i) => singleProducer(i)), batchProducer(100), batchProducer(101)]);
      // Let the stream get going, then pull the plug while requests are in flight.
      while (acknowledged.size < 200) await new Promise((r) => setTimeout(r, 20));
      const signalledAt = Date.now();
      stopping = true;
      const exited = child.stop('SIGTERM');
      const code = await exited;
      const exitMs = Date.now() - signalledAt;
      await producers;

      expect(code).toBe(0);
      expect(exitMs).toBeLessThan(SHUTDOWN_TIMEOUT_SECONDS * 1000 + 2000);
      expect(child.output()).toContain('conveyor stopped');
      expect(acknowledged.size).toBeGreaterThanOrEqual(200);

      // Read back what was stored, through a fresh server over the same database.
      const reader = await startTestServer(engine, { database: { url: database.url, drop: async () => {} } });
      try {
        const rows = await reader.db('messages').where({ topic: 'stream' }).select('id', 'payload', 'metadata', 'status');
        const stored = new Map(rows.map((r: any) => [String(r.id), { payload: Buffer.from(r.payload).toString('utf8'), metadata: JSON.parse(r.metadata), status: r.status }]));
        // Every acknowledged enqueue is stored with exactly the payload it sent.
        for (const [id, payload] of acknowledged) expect(stored.get(id)?.payload).toBe(payload);
        for (const batch of batches) batch.ids.forEach((id, i) => expect(stored.get(id)?.payload).toBe(batch.payloads[i]));
        // Nothing half-written: each stored row is a whole message that some producer sent, and batches are all or nothing.
        for (const [id, row] of stored) {
          expect(row.status).toBe('pending');
          expect(sent.has(row.payload), `row ${id} has a payload nobody sent`).toBe(true);
          if (row.payload.startsWith('w')) expect(row.payload.startsWith(`w${row.metadata.worker}-s${row.metadata.seq}-`)).toBe(true);
        }
        const batchCounts = new Map<string, number>();
        for (const row of stored.values()) {
          const match = /^(b\d+-s\d+)-/.exec(row.payload);
          if (match) batchCounts.set(match[1], (batchCounts.get(match[1]) ?? 0) + 1);
        }
        for (const [batch, n] of batchCounts) expect(n, `batch ${batch}`).toBe(25);
        const list = await reader.api.get('/api/messages?topic=stream&limit=1');
        expect(list.body.total).toBe(stored.size);
      } finally {
        await reader.close();
      }
    } finally {
      await database.drop();
    }
  }, 120_000);

  it('an idle server exits 0 promptly on SIGTERM and on SIGINT', async () => {
    const database = await engine.createDatabase();
    try {
      for (const signal of ['SIGTERM', 'SIGINT'] as const) {
        const child = await startChildServer({ CONVEYOR_DB_URL: database.url, CONVEYOR_SERVER_SHUTDOWN_TIMEOUT: '30s' });
        // A keep-alive connection that stays open must not hold the process for the whole timeout.
        expect((await child.api.enqueue('idle', 'x')).status).toBe(201);
        const started = Date.now();
        expect(await child.stop(signal)).toBe(0);
        expect(Date.now() - started).toBeLessThan(10_000);
      }
    } finally {
      await database.drop();
    }
  }, 120_000);
});

const TEST_HOLDER = 'shutdown test';

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Holds (or gives back) the migrations lease the way another pod migrating would, from a pool opened for it alone. */
async function withTestDb<T>(url: string, work: (db: ReturnType<typeof createDb>) => Promise<T>): Promise<T> {
  const db = createDb({ url, poolSize: 1, logger: createLogger('silent') });
  try {
    return await work(db);
  } finally {
    await db.destroy();
  }
}

/**
 * Until another process has the database open, which `serve` does only once it is inside start-up: SQLite
 * creates the -wal file when a connection opens the database (and the last one to close removes it), MySQL
 * lists the connection.
 */
async function untilOpenedElsewhere(engine: Engine, url: string): Promise<void> {
  if (engine.name === 'sqlite') return until(() => existsSync(`${url.slice('sqlite:'.length)}-wal`), 'serve to open the database');
  await withTestDb(url, (db) =>
    until(async () => {
      const [rows] = await db.raw('SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()');
      return Number(rows[0].n) > 0;
    }, 'serve to connect'),
  );
}

describeEachEngine('shutdown during start-up', (engine) => {
  it('SIGTERM while start-up waits for another pod\'s migrations: the wait ends, clean stop, exit 0, nothing migrated', async () => {
    const database = await engine.createDatabase();
    // Start-up blocks on the migrations lease while "another pod" holds it, with nothing migrated yet. Its
    // pool is closed again, so that only serve has the database open.
    await withTestDb(database.url, async (db) => {
      await createLeasesTable(db);
      expect(await tryAcquireLease(db, 'migrations', 120_000, TEST_HOLDER)).not.toBeNull();
    });
    const child = spawn(process.execPath, conveyorArgs(['serve']), {
      env: { ...process.env, CONVEYOR_DB_URL: database.url, CONVEYOR_SERVER_HTTP_PORT: '0', CONVEYOR_SERVER_GRPC_PORT: '0', CONVEYOR_SERVER_HOST: '127.0.0.1', CONVEYOR_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    try {
      await untilOpenedElsewhere(engine, database.url);
      expect(output).not.toContain('conveyor listening');
      const signalled = Date.now();
      child.kill('SIGTERM');
      // Not after the 60 s the wait would last: the pod's grace period is shorter.
      expect(await exited, output).toEqual({ code: 0, signal: null });
      expect(Date.now() - signalled).toBeLessThan(15_000);
      const lines = output
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line));
      expect(lines.find((line) => line.msg === 'shutting down once start-up reaches a safe point')).toMatchObject({ signal: 'SIGTERM', duringStartup: true });
      expect(lines.find((line) => line.msg === 'conveyor stopped during start-up')).toMatchObject({ level: 'info', signal: 'SIGTERM' });
      expect(lines.filter((line) => line.level === 'error' || line.level === 'warn')).toEqual([]);
      // It never took the lease or migrated: the other pod still holds it.
      await withTestDb(database.url, async (db) => {
        const held = await db('leases').where({ name: 'migrations' }).first();
        expect(held).toMatchObject({ holder: TEST_HOLDER });
        expect(await db.schema.hasTable('messages')).toBe(false);
        await releaseLease(db, 'migrations', TEST_HOLDER, Number(held.token));
      });

      // The next start migrates and serves.
      const next = await startChildServer({ CONVEYOR_DB_URL: database.url });
      expect(next.output()).toContain('applied database migrations');
      expect((await next.api.enqueue('after-restart', 'x')).status).toBe(201);
      expect(await next.stop('SIGTERM')).toBe(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      await database.drop();
    }
  }, 120_000);
});
