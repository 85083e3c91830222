import { spawn, type ChildProcess } from 'node:child_process';
import type { Knex } from 'knex';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { createLeasesTable } from '../migrations/20261123020000_leases.js';
import { migrationSource } from '../migrations/index.js';
import { createLogger } from '../src/log/logger.js';
import { createDb } from '../src/store/db.js';
import { LeaseBusy, LeaseLost, withLease, type Lease } from '../src/store/leases.js';
import { describeEachEngine, engineByName, type Engine, type TestDatabase } from './helpers/engines.js';
import { metricValue } from './helpers/metrics.js';
import { manualClock, startTestServer, type TestServer } from './helpers/server.js';
import { startTcpProxy } from './helpers/tcp-proxy.js';

/**
 * Leases (src/store/leases.ts): the cross-instance locks of the reapers and of migrations, rows of the
 * `leases` table on both engines (GET_LOCK was node-local on a Galera cluster).
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const quiet = () => createLogger('silent');
const STORE = (file: string) => new URL(`../src/store/${file}`, import.meta.url).href;

async function leaseRow(db: Knex, name: string): Promise<{ holder: string; token: number } | undefined> {
  const row = await db('leases').where({ name }).first('holder', 'token');
  return row ? { holder: String(row.holder), token: Number(row.token) } : undefined;
}

/** Waits (bounded) for `check`; returns its last answer. */
async function eventually(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(25);
  }
  return check();
}

/** A separate process holding a lease (renewing it) until killed: a real holder that can crash. */
function holderProcess(url: string, name: string, ttlMs: number, renewMs: number): { child: ChildProcess; token: Promise<number> } {
  const code = `
    const { createDb } = await import(${JSON.stringify(STORE('db.ts'))});
    const { createLogger } = await import(${JSON.stringify(new URL('../src/log/logger.ts', import.meta.url).href)});
    const { withLease } = await import(${JSON.stringify(STORE('leases.ts'))});
    const db = createDb({ url: ${JSON.stringify(url)}, poolSize: 2, logger: createLogger('silent') });
    await withLease(db, ${JSON.stringify(name)}, { ttlMs: ${ttlMs}, renewMs: ${renewMs} }, async (lease) => {
      console.log(JSON.stringify({ token: lease.token }));
      await new Promise(() => {});
    });`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const token = new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`lease holder did not start: ${out}`)), 20_000);
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const match = /"token":(\d+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`lease holder exited with ${code}: ${out}`)));
  });
  return { child, token };
}

describeEachEngine('leases', (engine: Engine) => {
  let database: TestDatabase | undefined;
  const pools: Knex[] = [];
  const children: ChildProcess[] = [];
  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }
    }
    for (const pool of pools.splice(0)) await pool.destroy();
    await database?.drop();
    database = undefined;
  });

  /** A fresh database with the leases table, and `n` independent pools on it (as n processes would have). */
  async function setup(n: number): Promise<Knex[]> {
    database = await engine.createDatabase();
    const made = Array.from({ length: n }, () => createDb({ url: database!.url, poolSize: 4, logger: quiet() }));
    pools.push(...made);
    await createLeasesTable(made[0]);
    return made;
  }

  it('many concurrent acquisitions from several pools never hold one lease at once; each turn gets a new, higher token', async () => {
    const dbs = await setup(3);
    let holders = 0;
    let most = 0;
    const tokens: number[] = [];
    const worker = async (db: Knex) => {
      for (let round = 0; round < 4; round++) {
        await withLease(db, 'exclusive', { waitMs: 20_000, ttlMs: 10_000 }, async (lease) => {
          holders++;
          most = Math.max(most, holders);
          tokens.push(lease.token);
          expect(lease.held).toBe(true);
          await sleep(5);
          holders--;
        });
      }
    };
    await Promise.all(Array.from({ length: 9 }, (_, i) => worker(dbs[i % 3])));
    expect(most).toBe(1);
    expect(tokens).toHaveLength(36);
    // Taken one after another, so the tokens are exactly 1..36 in the order the turns began.
    expect(tokens).toEqual(Array.from({ length: 36 }, (_, i) => i + 1));
    expect(await leaseRow(dbs[0], 'exclusive')).toEqual({ holder: '', token: 36 });
  });

  it('an expired lease is taken over with a higher token; its old holder stops claiming it and cannot release the new turn', async () => {
    const [a, b] = await setup(2);
    let first: Lease | undefined;
    let secondDone = false;
    // Renewals never come in time (every 60 s for a 600 ms lease): the holder's own clock ends its claim.
    const held = withLease(a, 'expiring', { ttlMs: 600, renewMs: 60_000 }, async (lease) => {
      first = lease;
      await eventually(() => lease.signal.aborted, 5000);
      // Keep running past the takeover: the release after it must not free the new holder's turn.
      await eventually(() => secondDone, 10_000);
    });
    await eventually(() => first !== undefined, 5000);
    expect(first!.held).toBe(true);
    await expect(withLease(b, 'expiring', { waitMs: 0 }, async () => 'never')).rejects.toBeInstanceOf(LeaseBusy);
    const takeover = await withLease(b, 'expiring', { waitMs: 5000 }, async (lease) => {
      expect(first!.held).toBe(false);
      expect(first!.signal.reason).toBeInstanceOf(LeaseLost);
      expect(lease.token).toBeGreaterThan(first!.token);
      secondDone = true;
      await held;
      // The old holder's release (holder and token no longer match) left this turn alone.
      expect(await leaseRow(b, 'expiring')).toEqual({ holder: lease.holder, token: lease.token });
      return lease.token;
    });
    expect(takeover).toBe(first!.token + 1);
  });

  it('a holder whose lease was taken over notices at its next renewal', async () => {
    const [a, b] = await setup(2);
    let lease: Lease | undefined;
    const run = withLease(a, 'stolen', { ttlMs: 5000, renewMs: 100 }, async (l) => {
      lease = l;
      return eventually(() => l.signal.aborted, 5000);
    });
    await eventually(() => lease !== undefined, 5000);
    // Another process taking the row (as an acquisition after an expiry would) raises the token.
    await b('leases').where({ name: 'stolen' }).update({ holder: 'someone-else', token: b.raw('token + 1') });
    expect(await run).toBe(true);
    expect(lease!.held).toBe(false);
    expect((lease!.signal.reason as Error).message).toMatch(/taken over/);
    expect(await leaseRow(b, 'stolen')).toEqual({ holder: 'someone-else', token: lease!.token + 1 });
  });

  it("renewals keep a live holder's lease past its length; a crashed holder's lease lapses and is taken with a higher token", async () => {
    const [db] = await setup(1);
    const { child, token } = holderProcess(database!.url, 'crashy', 1500, 300);
    children.push(child);
    const held = await token;
    await sleep(2000);
    // Longer than the lease length: only the renewals of the live process keep it.
    await expect(withLease(db, 'crashy', { waitMs: 0 }, async () => 'never')).rejects.toBeInstanceOf(LeaseBusy);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const next = await withLease(db, 'crashy', { waitMs: 10_000 }, async (lease) => lease.token);
    expect(next).toBe(held + 1);
  });

  describe('reapers across two servers on one database', () => {
    const servers: TestServer[] = [];
    afterEach(async () => {
      for (const server of servers.splice(0)) await server.close();
    });

    it('runs of one reaper never overlap: every run its own lease turn, every expired message counted once', async () => {
      database = await engine.createDatabase();
      const clock = manualClock();
      const start = () => startTestServer(engine, { database, now: clock.now, overrides: { reapers: { mode: 'external' } } });
      servers.push(await start(), await start());
      const [first, second] = servers;
      expect((await first.api.put('/api/topic-configs/brief', { message_ttl_seconds: 10 })).status).toBe(200);
      await sleep(500);
      for (let i = 0; i < 3; i++) {
        const messages = Array.from({ length: 1000 }, (_, j) => ({ topic: 'brief', payload: `m${i}-${j}` }));
        expect((await (i % 2 ? second : first).api.post('/api/messages/batch', { messages })).status).toBe(201);
      }
      clock.advance(11_000);
      let expired = 0;
      for (let round = 0; round < 3; round++) {
        const runs = await Promise.all([first.api.post('/api/admin/expiry-reaper/run'), second.api.post('/api/admin/expiry-reaper/run')]);
        for (const run of runs) {
          expect(run.status, run.text).toBe(200);
          expired += run.body.expired;
        }
      }
      // Overlapping runs would both count the batches they both selected.
      expect(expired).toBe(3000);
      const successes =
        (await metricValue(first.api, 'conveyor_reaper_runs_total', { reaper: 'expiry', outcome: 'success' })) +
        (await metricValue(second.api, 'conveyor_reaper_runs_total', { reaper: 'expiry', outcome: 'success' }));
      expect(successes).toBe(6);
      expect(await leaseRow(first.db, 'reaper:expiry')).toEqual({ holder: '', token: 6 });
    });
  });

  describe('the migrations lease', () => {
    const servers: TestServer[] = [];
    afterEach(async () => {
      for (const server of servers.splice(0)) await server.close();
    });

    it('three servers starting together on an empty database all start; each migrated under its own turn of the lease', async () => {
      database = await engine.createDatabase();
      servers.push(...(await Promise.all(Array.from({ length: 3 }, () => startTestServer(engine, { database })))));
      for (const server of servers) expect((await server.api.get('/readyz')).status).toBe(200);
      const names = (await servers[0].db('knex_migrations').pluck('name')).map(String);
      expect(names.sort()).toEqual(await migrationSource.getMigrations([]));
      expect(await leaseRow(servers[0].db, 'migrations')).toEqual({ holder: '', token: 3 });
    });

    it('a start waits while another process holds the migrations lease', async () => {
      const [db] = await setup(1);
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const holding = new Promise<void>((resolve) => (entered = resolve));
      const held = withLease(db, 'migrations', {}, async () => {
        entered();
        await released;
      });
      await holding;
      let started = false;
      const starting = startTestServer(engine, { database }).then((server) => {
        started = true;
        servers.push(server);
        return server;
      });
      await sleep(1000);
      expect(started).toBe(false);
      release();
      await held;
      expect((await (await starting).api.get('/readyz')).status).toBe(200);
    });
  });
});

const mysqlUrl = inject('mysqlUrl');

(mysqlUrl ? describe : describe.skip)('leases when the database goes away [mysql]', () => {
  let database: TestDatabase | undefined;
  const pools: Knex[] = [];
  afterEach(async () => {
    for (const pool of pools.splice(0)) await pool.destroy();
    await database?.drop();
  });

  it('a holder that cannot renew stops claiming the lease within its length; another takes it over afterwards', async () => {
    database = await engineByName.mysql.createDatabase();
    const direct = new URL(database.url);
    const proxy = await startTcpProxy(direct.hostname, Number(direct.port || 3306));
    const viaProxy = new URL(database.url);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    const cutOff = createDb({ url: viaProxy.toString(), poolSize: 2, logger: quiet() });
    const other = createDb({ url: database.url, poolSize: 2, logger: quiet() });
    pools.push(cutOff, other);
    await createLeasesTable(other);
    let lease: Lease | undefined;
    const run = withLease(cutOff, 'cut', { ttlMs: 1000, renewMs: 200 }, async (l) => {
      lease = l;
      return eventually(() => l.signal.aborted, 10_000);
    });
    await eventually(() => lease !== undefined, 5000);
    await sleep(1200);
    // Renewed while the database answered.
    expect(lease!.held).toBe(true);
    await proxy.cut();
    try {
      expect(await run).toBe(true);
      expect(lease!.held).toBe(false);
      expect(lease!.signal.reason).toBeInstanceOf(LeaseLost);
      const token = await withLease(other, 'cut', { waitMs: 5000 }, async (l) => l.token);
      expect(token).toBe(lease!.token + 1);
    } finally {
      await proxy.restore();
    }
  });
});
