import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { engineByName, type TestDatabase } from './helpers/engines.js';
import { startChildServer, type ChildServer } from './helpers/server.js';
import { conveyorArgs } from './helpers/conveyor-command.js';

// Two `conveyor serve` processes over one MySQL database: the production shape (SQLite is single-node).
const mysqlUrl = inject('mysqlUrl');

(mysqlUrl ? describe : describe.skip)('two instances sharing one MySQL database [mysql]', () => {
  let database: TestDatabase;
  let a: ChildServer;
  let b: ChildServer;

  beforeAll(async () => {
    database = await engineByName.mysql.createDatabase();
    // The production default refresh interval (1s), not the tests' 200ms.
    const env = { CONVEYOR_DB_URL: database.url, CONVEYOR_QUEUE_CONFIG_REFRESH_INTERVAL: '1s' };
    // Started together, so both race to migrate the same empty database under the migration lock.
    [a, b] = await Promise.all([startChildServer(env), startChildServer(env)]);
  });
  afterAll(async () => {
    const codes = await Promise.all([a?.stop(), b?.stop()]);
    await database?.drop();
    expect(codes).toEqual([0, 0]);
  });

  it('both instances start on the same empty database and are ready', async () => {
    expect(a.url).not.toBe(b.url);
    for (const s of [a, b]) expect((await s.api.get('/readyz')).status).toBe(200);
  });

  it('producers and consumers on both instances: no message delivered twice, none lost', async () => {
    const total = 1200;
    const produce = async (server: ChildServer, from: number, to: number): Promise<string[]> => {
      const ids: string[] = [];
      // Half in batches, half one by one in parallel: both the batch path and the group commit.
      const middle = from + (to - from) / 2;
      for (let start = from; start < middle; start += 100) {
        const messages = Array.from({ length: Math.min(100, middle - start) }, (_, i) => ({ topic: 'shared', payload: `p${start + i}` }));
        const res = await server.api.post('/api/messages/batch', { messages });
        expect(res.status).toBe(201);
        ids.push(...res.body.ids);
      }
      const singles = await Promise.all(Array.from({ length: to - middle }, (_, i) => server.api.enqueue('shared', `p${middle + i}`)));
      for (const r of singles) expect(r.status).toBe(201);
      ids.push(...singles.map((r) => r.body.id));
      return ids;
    };

    const received = new Map<string, string>();
    const duplicates: string[] = [];
    let producing = true;
    const consume = async (server: ChildServer, name: string, count: number) => {
      let idleAfterProduction = 0;
      while (idleAfterProduction < 3) {
        const res = await server.api.dequeue('shared', { count });
        expect(res.status).toBe(200);
        const messages = res.body.messages as Array<{ id: string }>;
        if (messages.length === 0) {
          if (!producing) idleAfterProduction++;
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        idleAfterProduction = 0;
        for (const m of messages) {
          if (received.has(m.id)) duplicates.push(m.id);
          received.set(m.id, name);
        }
        // Ack through either instance: settlement must not depend on where the message was claimed.
        const acker = Math.random() < 0.5 ? a : b;
        const ack = await acker.api.post('/api/messages/ack', { ids: messages.map((m) => m.id) });
        expect(ack.body.not_found).toEqual([]);
      }
    };

    const consumers = Promise.all([
      consume(a, 'a1', 1),
      consume(a, 'a2', 7),
      consume(a, 'a3', 25),
      consume(b, 'b1', 3),
      consume(b, 'b2', 10),
      consume(b, 'b3', 50),
    ]);
    const produced = (await Promise.all([produce(a, 0, total / 2), produce(b, total / 2, total)])).flat();
    producing = false;
    await consumers;

    expect(duplicates).toEqual([]);
    expect(new Set(produced).size).toBe(total);
    expect([...received.keys()].sort()).toEqual([...produced].sort());
    const byInstance = { a: 0, b: 0 };
    for (const name of received.values()) byInstance[name[0] as 'a' | 'b']++;
    expect(byInstance.a).toBeGreaterThan(0);
    expect(byInstance.b).toBeGreaterThan(0);
    expect((await a.api.get('/api/messages?topic=shared')).body.total).toBe(0);
    expect((await b.api.get('/api/messages?topic=shared')).body.total).toBe(0);
  });

  it('keyed enqueues on both instances keep one pending message per key', async () => {
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).api.enqueue('shared-keys', `v${i}`, { key: `k${i % 3}` })));
    expect(results.every((r) => r.status === 201)).toBe(true);
    const { items } = (await a.api.get('/api/messages?topic=shared-keys')).body;
    expect(items.map((m: any) => m.key).sort()).toEqual(['k0', 'k1', 'k2']);
    expect(new Set(results.map((r) => r.body.id))).toEqual(new Set(items.map((m: any) => m.id)));
  });

  it('ordering keys: an ack on the instance that dequeued the head hands its line over, unless another instance gave it back meanwhile', async () => {
    const enqueue = async (payload: string) => (await a.api.enqueue('shared-ordered', payload, { ordering_key: 'K' })).body.id as string;
    const [k1, k2, k3] = [await enqueue('k1'), await enqueue('k2'), await enqueue('k3')];
    const dequeue = async (server: ChildServer) => (await server.api.dequeue('shared-ordered', { count: 10, visibility_timeout_seconds: 600 })).body.messages.map((m: any) => m.id);
    expect(await dequeue(a)).toEqual([k1]);
    // b nacks k1 back (a retry keeps its turn); a, which dequeued it, still knows its line and acks it: the
    // ack finds it pending, settles nothing, and must not hand the line on to k2.
    expect((await b.api.post(`/api/messages/${k1}/nack`, { error: 'busy' })).status).toBe(204);
    expect((await a.api.post(`/api/messages/${k1}/ack`)).status).toBe(404);
    expect(await dequeue(b)).toEqual([k1]);
    expect(await dequeue(b)).toEqual([]);
    // Dequeued and acked on b: the ack and the hand-over to k2 go in one transaction.
    expect((await b.api.post(`/api/messages/${k1}/ack`)).status).toBe(204);
    expect(await dequeue(a)).toEqual([k2]);
    expect((await a.api.post(`/api/messages/${k2}/ack`)).status).toBe(204);
    expect(await dequeue(b)).toEqual([k3]);
    expect((await b.api.post('/api/messages/ack', { ids: [k3] })).body.acked).toEqual([k3]);
    expect((await a.api.get('/api/messages?topic=shared-ordered')).body.total).toBe(0);
  });

  it('the depth cap holds across instances', async () => {
    await a.api.put('/api/topic-configs/shared-capped', { max_depth: 15 });
    await waitFor(async () => (await b.api.get('/api/topic-configs/shared-capped')).status === 200, 3000);
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).api.enqueue('shared-capped', `v${i}`)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(15);
    expect(results.filter((r) => r.status === 429)).toHaveLength(45);
    expect((await b.api.get('/api/messages?topic=shared-capped')).body.total).toBe(15);
  });

  it('a group registered on one instance gets what the other enqueues before its cache knows the group', async () => {
    // b enqueues on this topic first, so its catalog has the topic cached without groups (refresh: 1 s).
    expect((await b.api.enqueue('shared-fanout', 'before')).status).toBe(201);
    expect((await a.api.post('/api/topics/shared-fanout/consumer-groups', { consumer_group: 'billing' })).status).toBe(201);
    // Single enqueues and a batch: both go through b's one-statement insert, which must see the new group.
    const singles = await Promise.all(Array.from({ length: 5 }, (_, i) => b.api.enqueue('shared-fanout', `single-${i}`)));
    const batch = await b.api.post('/api/messages/batch', { messages: [{ topic: 'shared-fanout', payload: 'batched' }] });
    expect([...singles, batch].every((r) => r.status === 201)).toBe(true);
    const expected = [...singles.map((r) => r.body.id), ...batch.body.ids];

    const got = await a.api.dequeue('shared-fanout', { consumer_group: 'billing', count: 100 });
    expect(got.status).toBe(200);
    const ids = got.body.messages.map((m: any) => m.id);
    // "before" was adopted at registration; every later message has a delivery for the group.
    expect(ids).toHaveLength(expected.length + 1);
    expect(ids).toEqual(expect.arrayContaining(expected));
  });

  it('a topic configuration PUT on one instance is seen by the other within two seconds', async () => {
    const put = await a.api.put('/api/topic-configs/shared-config', { max_retries: 7, message_ttl_seconds: 0 });
    expect(put.status).toBe(200);
    const started = Date.now();
    // Not a timing assertion on speed, only the contract's bound: the other instance applies it within seconds.
    const seenAfter = await waitFor(async () => {
      const res = await b.api.enqueue('shared-config', 'x');
      const { items } = (await b.api.get('/api/messages?topic=shared-config&limit=200')).body;
      const mine = items.find((m: any) => m.id === res.body.id);
      return mine.max_retries === 7 && mine.expires_at === null;
    }, 2500);
    expect(seenAfter).toBeLessThan(2500);
    expect(Date.now() - started).toBeLessThan(5000);
    expect((await b.api.get('/api/topic-configs/shared-config')).body).toMatchObject({ topic: 'shared-config', max_retries: 7, message_ttl_seconds: 0 });

    await b.api.delete('/api/topic-configs/shared-config');
    await waitFor(async () => (await a.api.get('/api/topic-configs/shared-config')).status === 404, 2500);
    const after = await a.api.enqueue('shared-config', 'y');
    const row = (await a.api.get('/api/messages?topic=shared-config&limit=200')).body.items.find((m: any) => m.id === after.body.id);
    expect(row.max_retries).toBe(3);
    expect(row.expires_at).not.toBeNull();
  });
});

(mysqlUrl ? describe : describe.skip)('several pods migrating one empty database at once [mysql]', () => {
  it('four `conveyor migrate` processes started together all succeed and exactly one applies the migrations', async () => {
    const database = await engineByName.mysql.createDatabase();
    try {
      const runs = await Promise.all(Array.from({ length: 4 }, () => runCli(['migrate'], { CONVEYOR_DB_URL: database.url })));
      for (const run of runs) expect(run.code, run.stderr).toBe(0);
      const applied = runs.map((r) => JSON.parse(r.stdout.trim().split('\n').pop()!).applied as string[]);
      expect(applied.filter((a) => a.length > 0)).toHaveLength(1);
      expect(applied.find((a) => a.length > 0)).toContain('20261122000000_initial');
      // The database is usable afterwards: a server starts on it without migrating again.
      const server = await startChildServer({ CONVEYOR_DB_URL: database.url });
      expect((await server.api.enqueue('after-race', 'x')).status).toBe(201);
      expect(server.output()).not.toContain('applied database migrations');
      expect(await server.stop()).toBe(0);
    } finally {
      await database.drop();
    }
  }, 120_000);
});

function runCli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, conveyorArgs(args), { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    // 'close', not 'exit': the process can be gone before its last output was read from the pipes.
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Polls `check` until it holds; returns the milliseconds it took, or throws after `limitMs`. */
async function waitFor(check: () => Promise<boolean>, limitMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > limitMs) throw new Error(`condition not met within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
