import type { Knex } from 'knex';
import mysql from 'mysql2/promise';
import { afterEach, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine, type Engine, type TestDatabase } from './helpers/engines.js';
import type { Api } from './helpers/http.js';
import { dequeueIds, enqueueId, findMessage, listTopic } from './helpers/messages.js';
import { withLease } from '../src/store/leases.js';
import { manualClock, startTestServer, type ConfigOverrides, type TestClock, type TestServer } from './helpers/server.js';

const EXPIRED = 'visibility timeout expired';

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

async function statuses(api: Api, topic: string): Promise<string[]> {
  return (await api.get(`/api/messages?topic=${topic}&limit=200`)).body.items.map((m: any) => m.status);
}

/** Holds a reaper's lease as a run in progress on another instance would, until released. */
async function holdLease(db: Knex, name: string): Promise<{ release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const holding = new Promise<void>((resolve) => (entered = resolve));
  const held = withLease(db, name, {}, async () => {
    entered();
    await released;
  });
  await holding;
  return {
    release: async () => {
      release();
      await held;
    },
  };
}

describeEachEngine('reapers', (engine: Engine) => {
  const servers: TestServer[] = [];
  let database: TestDatabase | undefined;
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
    await database?.drop();
    database = undefined;
  });

  async function start(clock: TestClock, overrides: ConfigOverrides = {}, shared = false): Promise<TestServer> {
    if (shared) database ??= await engine.createDatabase();
    const server = await startTestServer(engine, { now: clock.now, database: shared ? database : undefined, overrides: { reapers: { mode: 'external' }, ...overrides } });
    servers.push(server);
    return server;
  }

  it('expires pending messages past their TTL, deletes expired ones, and trims archive logs to their window', async () => {
    const clock = manualClock();
    const { api } = await start(clock);
    await api.put('/api/topic-configs/short', { message_ttl_seconds: 60 });
    await api.put('/api/topic-configs/logged', { replayable: true, replay_window_seconds: 3600 });
    await api.enqueue('short', 'a');
    await api.enqueue('short', 'b');
    const held = (await api.enqueue('short', 'held')).body.id;
    await api.enqueue('forever', 'c', {});
    await api.put('/api/topic-configs/forever', { message_ttl_seconds: 0 });
    await api.enqueue('forever', 'd');
    // Taken before the TTL ran out: a consumer holds it (its visibility lasts), so the reaper leaves it alone.
    await api.dequeue('short', { count: 1, visibility_timeout_seconds: 3600 }).then(async () => {
      const [m] = (await api.get('/api/messages?topic=short')).body.items.filter((x: any) => x.status === 'processing');
      expect(m).toBeDefined();
    });
    await api.enqueue('logged', 'x');
    const [logged] = (await api.dequeue('logged')).body.messages;
    await api.post(`/api/messages/${logged.id}/ack`);

    clock.advance(61_000);
    expect((await api.post('/api/admin/expiry-reaper/run')).body).toEqual({ expired: 2 });
    expect((await statuses(api, 'short')).sort()).toEqual(['expired', 'expired', 'processing']);
    expect((await api.post('/api/admin/expiry-reaper/run')).body).toEqual({ expired: 0 });
    expect((await api.post('/api/admin/delete-reaper/run')).body).toEqual({ deleted: 2 });
    expect(await statuses(api, 'short')).toEqual(['processing']);
    expect(held).toBeDefined();

    expect((await api.post('/api/admin/archive-reaper/run')).body).toEqual({ deleted: 0, audit_deleted: 0 });
    clock.advance(3600_000);
    expect((await api.post('/api/admin/archive-reaper/run')).body).toEqual({ deleted: 1, audit_deleted: 0 });
    expect((await api.get('/api/topics/logged/message-log')).body.total).toBe(0);

    const metrics = (await api.get('/metrics')).text;
    expect(metrics).toMatch(/conveyor_messages_expired_total\{[^}]*topic="short"[^}]*\} 2/);
    expect(metrics).toMatch(/conveyor_messages_deleted_total\{[^}]*topic="short"[^}]*\} 2/);
    expect(metrics).toMatch(/conveyor_reaper_runs_total\{[^}]*reaper="expiry"[^}]*outcome="success"[^}]*\} 2|conveyor_reaper_runs_total\{[^}]*outcome="success"[^}]*reaper="expiry"[^}]*\} 2/);
    expect(metrics).toMatch(/conveyor_reaper_last_run_timestamp_seconds\{[^}]*reaper="archive"[^}]*\} \d/);
  });

  it('gives back deliveries whose visibility timeout passed with no dequeue since: retried or dead-lettered, per group too', async () => {
    const clock = manualClock();
    const { api } = await start(clock);
    await api.put('/api/topic-configs/once', { max_retries: 1 });
    await api.put('/api/topic-configs/fan', { max_retries: 1 });
    await api.put('/api/topic-configs/brief', { message_ttl_seconds: 5 });
    expect((await api.post('/api/topics/fan/consumer-groups', { consumer_group: 'billing' })).status).toBe(201);
    const retried = await enqueueId(api, 'abandoned', 'a');
    const dead = await enqueueId(api, 'once', 'b');
    await enqueueId(api, 'fan', 'c');
    const brief = await enqueueId(api, 'brief', 'd');
    expect(await dequeueIds(api, 'abandoned', { visibility_timeout_seconds: 10 })).toEqual([retried]);
    expect(await dequeueIds(api, 'once', { visibility_timeout_seconds: 10 })).toEqual([dead]);
    expect(await dequeueIds(api, 'fan', { consumer_group: 'billing', visibility_timeout_seconds: 10 })).toHaveLength(1);
    expect(await dequeueIds(api, 'brief', { visibility_timeout_seconds: 10 })).toEqual([brief]);

    clock.advance(9_000);
    expect((await api.post('/api/admin/expiry-reaper/run')).body).toEqual({ expired: 0 });
    expect(await statuses(api, 'abandoned')).toEqual(['processing']);
    expect(await statuses(api, 'once')).toEqual(['processing']);

    // Nobody dequeues any of these topics again: the run alone gives them back, as a failed attempt each; the
    // one whose TTL passed while it was held comes back and expires in the same run.
    clock.advance(1_001);
    expect((await api.post('/api/admin/expiry-reaper/run')).body).toEqual({ expired: 1 });
    expect(await findMessage(api, 'brief', brief)).toMatchObject({ status: 'expired', retry_count: 1, last_error: EXPIRED });
    expect(await findMessage(api, 'abandoned', retried)).toMatchObject({ status: 'pending', retry_count: 1, last_error: EXPIRED });
    expect(await findMessage(api, 'once.dlq', dead)).toMatchObject({ status: 'pending', original_topic: 'once', retry_count: 1, last_error: EXPIRED });
    expect(await listTopic(api, 'fan.dlq')).toEqual([
      expect.objectContaining({ payload: 'c', original_topic: 'fan', retry_count: 1, last_error: EXPIRED, metadata: { consumer_group: 'billing' } }),
    ]);
    const metrics = (await api.get('/metrics')).text;
    for (const topic of ['abandoned', 'once', 'fan', 'brief']) expect(metrics).toMatch(new RegExp(`conveyor_messages_redelivered_total\\{[^}]*topic="${topic}"[^}]*\\} 1\\b`));

    // Once only: the next run finds nothing overdue, and the retried message waits for its consumer.
    clock.advance(60_000);
    expect((await api.post('/api/admin/expiry-reaper/run')).body).toEqual({ expired: 0 });
    expect(await findMessage(api, 'abandoned', retried)).toMatchObject({ status: 'pending', retry_count: 1 });
    expect(await dequeueIds(api, 'abandoned')).toEqual([retried]);
  });

  it('does the work once when two instances run a reaper at the same moment', async () => {
    const clock = manualClock();
    const first = await start(clock, {}, true);
    const second = await start(clock, {}, true);
    await first.api.put('/api/topic-configs/race', { message_ttl_seconds: 10 });
    await new Promise((resolve) => setTimeout(resolve, 400)); // the second instance's catalog poll
    const messages = Array.from({ length: 40 }, (_, i) => ({ topic: 'race', payload: `m${i}` }));
    expect((await first.api.post('/api/messages/batch', { messages })).status).toBe(201);
    clock.advance(11_000);

    const expired = await Promise.all([first.api.post('/api/admin/expiry-reaper/run'), second.api.post('/api/admin/expiry-reaper/run')]);
    expect(expired.map((r) => r.status)).toEqual([200, 200]);
    expect(expired[0].body.expired + expired[1].body.expired).toBe(40);
    const deleted = await Promise.all([second.api.post('/api/admin/delete-reaper/run'), first.api.post('/api/admin/delete-reaper/run')]);
    expect(deleted[0].body.deleted + deleted[1].body.deleted).toBe(40);
    expect(await statuses(first.api, 'race')).toEqual([]);
  });

  it('waits while another instance holds the run of a reaper', async () => {
    const clock = manualClock();
    const first = await start(clock, {}, true);
    const second = await start(clock, {}, true);
    // The first instance's database handle stands in for a run in progress there.
    const lease = await holdLease(first.db, 'reaper:delete');
    let answered = false;
    const run = second.api.post('/api/admin/delete-reaper/run').then((res) => {
      answered = true;
      return res;
    });
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(answered).toBe(false);
    await lease.release();
    expect((await run).body).toEqual({ deleted: 0 });
  });

  it('a run waiting for another instance answers 503 at once when its server shuts down', async () => {
    const clock = manualClock();
    const first = await start(clock, {}, true);
    const second = await start(clock, {}, true);
    const lease = await holdLease(first.db, 'reaper:expiry');
    const run = second.api.post('/api/admin/expiry-reaper/run');
    await new Promise((resolve) => setTimeout(resolve, 500));
    const closing = Date.now();
    const [answer] = await Promise.all([run, second.close()]);
    servers.splice(servers.indexOf(second), 1);
    expect(Date.now() - closing).toBeLessThan(5_000);
    expectErrorBody(answer, 503);
    expect(answer.body.error).toBe('the server is shutting down; the expiry reaper stopped after its last batch');
    await lease.release();
  });

  it("empties the archive log of a topic that is no longer replayable or lost its configuration; a replayable one's stays", async () => {
    const clock = manualClock();
    const { api } = await start(clock);
    const archive = async (topic: string) => {
      await api.put(`/api/topic-configs/${topic}`, { replayable: true, replay_window_seconds: 3600 });
      await api.enqueue(topic, `${topic}-secret`);
      const [m] = (await api.dequeue(topic)).body.messages;
      expect((await api.post(`/api/messages/${m.id}/ack`)).status).toBe(204);
    };
    for (const topic of ['switched-off', 'unconfigured', 'kept', 'kept-forever']) await archive(topic);
    await api.put('/api/topic-configs/kept-forever', { replayable: true });
    await api.put('/api/topic-configs/switched-off', { replayable: false, replay_window_seconds: 3600 });
    expect((await api.delete('/api/topic-configs/unconfigured')).status).toBe(204);
    expect((await api.post('/api/admin/archive-reaper/run')).body).toEqual({ deleted: 2, audit_deleted: 0 });
    // Made replayable again, the topics show no payloads kept from before.
    for (const topic of ['switched-off', 'unconfigured']) {
      await api.put(`/api/topic-configs/${topic}`, { replayable: true });
      expect((await api.get(`/api/topics/${topic}/message-log`)).body.total).toBe(0);
    }
    expect((await api.get('/api/topics/kept/message-log')).body.total).toBe(1);
    clock.advance(3600_000 * 48);
    expect((await api.post('/api/admin/archive-reaper/run')).body).toEqual({ deleted: 1, audit_deleted: 0 });
    expect((await api.get('/api/topics/kept-forever/message-log')).body.total).toBe(1);
  });

  it('stores the delete schedule: it wins over the configuration, "" included, and bad cron gets 400', async () => {
    const clock = manualClock();
    const { api } = await start(clock, { queue: { delete_reaper_schedule: '0 3 * * *' } });
    expect((await api.get('/api/admin/delete-reaper/schedule')).body).toEqual({ schedule: '0 3 * * *', active: true });
    expectErrorBody(await api.put('/api/admin/delete-reaper/schedule', { schedule: 'every day' }), 400);
    expectErrorBody(await api.put('/api/admin/delete-reaper/schedule', { schedule: '61 * * * *' }), 400);
    expectErrorBody(await api.put('/api/admin/delete-reaper/schedule', {}), 400);
    expect((await api.put('/api/admin/delete-reaper/schedule', { schedule: '' })).body).toEqual({ schedule: '', active: false });
    expect((await api.get('/api/admin/delete-reaper/schedule')).body).toEqual({ schedule: '', active: false });
    expect((await api.put('/api/admin/delete-reaper/schedule', { schedule: '*/5 * * * *' })).body).toEqual({ schedule: '*/5 * * * *', active: true });
  });

  it('applies a schedule change on another instance within seconds', async () => {
    const clock = manualClock();
    // The writer runs no reapers itself; only the second instance can do the scheduled deleting.
    const writer = await start(clock, { reapers: { mode: 'external' } }, true);
    const runner = await start(clock, { reapers: { mode: 'in-process' }, queue: { expiry_reaper_interval: 0, archive_reaper_interval: 0 } }, true);
    await writer.api.put('/api/topic-configs/sched', { message_ttl_seconds: 5 });
    await writer.api.enqueue('sched', 'a');
    await writer.api.enqueue('sched', 'b');
    clock.advance(6000);
    expect((await writer.api.post('/api/admin/expiry-reaper/run')).body).toEqual({ expired: 2 });
    expect((await runner.api.get('/api/admin/delete-reaper/schedule')).body).toEqual({ schedule: '', active: false });

    // Six fields: every second (the seconds field is accepted for in-process runs).
    expect((await writer.api.put('/api/admin/delete-reaper/schedule', { schedule: '* * * * * *' })).status).toBe(200);
    expect((await runner.api.get('/api/admin/delete-reaper/schedule')).body).toEqual({ schedule: '* * * * * *', active: true });
    expect(await waitFor(async () => (await statuses(writer.api, 'sched')).length === 0, 5000)).toBe(true);
    expect((await runner.api.get('/metrics')).text).toMatch(/conveyor_reaper_runs_total\{[^}]*reaper="delete"/);

    // Switched off again: new expired messages stay.
    await writer.api.put('/api/admin/delete-reaper/schedule', { schedule: '' });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await writer.api.enqueue('sched', 'c');
    clock.advance(6000);
    await writer.api.post('/api/admin/expiry-reaper/run');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await statuses(writer.api, 'sched')).toEqual(['expired']);
  });

  it('runs a schedule on the days a Kubernetes CronJob would: a day-of-month from * and a weekday must both match', async () => {
    const clock = manualClock();
    const { api } = await start(clock, { reapers: { mode: 'in-process' }, queue: { expiry_reaper_interval: 0, archive_reaper_interval: 0 } });
    await api.put('/api/topic-configs/days', { message_ttl_seconds: 5 });
    await api.enqueue('days', 'a');
    clock.advance(6000);
    expect((await api.post('/api/admin/expiry-reaper/run')).body).toEqual({ expired: 1 });
    const today = new Date().getDay();
    // Every second of every day of the month, but only on another weekday: never today (croner alone: every second).
    expect((await api.put('/api/admin/delete-reaper/schedule', { schedule: `* * * */1 * ${(today + 3) % 7}` })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(await statuses(api, 'days')).toEqual(['expired']);
    expect((await api.put('/api/admin/delete-reaper/schedule', { schedule: `* * * */1 * ${today}` })).status).toBe(200);
    expect(await waitFor(async () => (await statuses(api, 'days')).length === 0, 5000)).toBe(true);
    // Nicknames as Kubernetes spells them: lower case.
    for (const schedule of ['@DAILY', '@Weekly', '@every 1h']) expectErrorBody(await api.put('/api/admin/delete-reaper/schedule', { schedule }), 400);
    expect((await api.put('/api/admin/delete-reaper/schedule', { schedule: '@midnight' })).body).toEqual({ schedule: '@midnight', active: true });
  });

  // MySQL only: SQLite's batches run on the event loop, so the whole run is over before a close could start.
  if (engine.name === 'mysql') it('a run over a large backlog stops after its current batch when the server shuts down, keeping what it did', async () => {
    const clock = manualClock();
    const server = await start(clock, {}, true);
    const expiredRows = async () => {
      const conn = await mysql.createConnection(database!.url);
      try {
        const [rows] = await conn.query<mysql.RowDataPacket[]>("SELECT COUNT(*) AS n FROM messages WHERE topic = 'backlog' AND status = 'expired'");
        return Number(rows[0].n);
      } finally {
        await conn.end();
      }
    };
    await server.api.put('/api/topic-configs/backlog', { message_ttl_seconds: 60 });
    for (let i = 0; i < 30; i++) {
      const batch = await server.api.post('/api/messages/batch', { messages: Array.from({ length: 1000 }, (_, j) => ({ topic: 'backlog', payload: `${i}-${j}` })) });
      expect(batch.status, batch.text).toBe(201);
    }
    clock.advance(61_000);
    const run = server.api.post('/api/admin/expiry-reaper/run');
    // Let the run take its first batches (of 1,000), then shut down.
    await waitFor(async () => (await expiredRows()) > 0, 10_000);
    const closing = Date.now();
    const answer = await Promise.all([run, server.close()]).then(([res]) => res);
    expect(Date.now() - closing).toBeLessThan(5_000);
    expectErrorBody(answer, 503);
    expect(answer.body.error).toBe('the server is shutting down; the expiry reaper stopped after its last batch');
    servers.splice(servers.indexOf(server), 1);
    // What it did stays done; the rest is left for the next run.
    const expired = await expiredRows();
    expect(expired).toBeGreaterThan(0);
    expect(expired).toBeLessThan(30_000);
    expect(expired % 1000).toBe(0);
  }, 120_000);

  it('runs no reapers in-process with reapers.mode external', async () => {
    const clock = manualClock();
    const { api } = await start(clock, { reapers: { mode: 'external' }, queue: { delete_reaper_schedule: '* * * * * *', expiry_reaper_interval: '1s' } });
    await api.put('/api/topic-configs/ext', { message_ttl_seconds: 1 });
    await api.enqueue('ext', 'a');
    clock.advance(2000);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(await statuses(api, 'ext')).toEqual(['pending']);
    // Every run counter is there from the start (at 0), and none has moved.
    const runs = (await api.get('/metrics')).text.split('\n').filter((line) => line.startsWith('conveyor_reaper_runs_total{'));
    expect(runs).toHaveLength(9);
    for (const line of runs) expect(line.endsWith(' 0'), line).toBe(true);
  });
});
