import { afterEach, beforeEach, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import type { Api } from './helpers/http.js';
import { manualClock, startTestServer, type TestClock, type TestServer } from './helpers/server.js';

async function consume(api: Api, topic: string, count = 1, group?: string): Promise<any[]> {
  const res = await api.dequeue(topic, { count, ...(group ? { consumer_group: group } : {}) });
  expect(res.status, res.text).toBe(200);
  const ids = res.body.messages.map((m: any) => m.id);
  const ack = await api.post('/api/messages/ack', { ids, ...(group ? { consumer_group: group } : {}) });
  expect(ack.body, ack.text).toEqual({ acked: ids, not_found: [] });
  return res.body.messages;
}

async function log(api: Api, topic: string, query = ''): Promise<any> {
  const res = await api.get(`/api/topics/${topic}/message-log${query}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

async function pending(api: Api, topic: string): Promise<any[]> {
  return (await api.get(`/api/messages?topic=${topic}&limit=200`)).body.items.filter((m: any) => m.status === 'pending');
}

describeEachEngine('archive log and replay', (engine) => {
  let server: TestServer;
  let api: Api;
  let clock: TestClock;
  beforeEach(async () => {
    clock = manualClock(Date.parse('2026-11-22T10:00:00.000Z'));
    server = await startTestServer(engine, { now: clock.now, overrides: { reapers: { mode: 'external' } } });
    api = server.api;
  });
  afterEach(async () => {
    await server?.close();
  });

  it('archives acked messages of replayable topics, with a base64 payload and paging', async () => {
    await api.put('/api/topic-configs/kept', { replayable: true });
    const { id } = (await api.enqueue('kept', 'héllo', { key: 'k1' })).body;
    await api.enqueue('kept', 'second');
    clock.advance(500);
    await consume(api, 'kept', 2);

    const page = await log(api, 'kept');
    expect(page).toMatchObject({ total: 2, limit: 50, offset: 0 });
    expect(page.items[0]).toEqual({
      id,
      topic: 'kept',
      key: 'k1',
      ordering_key: null,
      payload: Buffer.from('héllo').toString('base64'),
      retry_count: 0,
      original_topic: '',
      created_at: '2026-11-22T10:00:00.000Z',
      acked_at: '2026-11-22T10:00:00.500Z',
    });
    expect(await log(api, 'kept', '?limit=1&offset=1')).toMatchObject({ total: 2, limit: 1, offset: 1, items: [{ payload: Buffer.from('second').toString('base64') }] });
    expect((await log(api, 'kept', '?limit=500')).limit).toBe(200);
    expectErrorBody(await api.get('/api/topics/kept/message-log?limit=0'), 400);
    expectErrorBody(await api.get('/api/topics/kept/message-log?offset=-1'), 400);
  });

  it('keeps no log for topics that are not replayable, and refuses to replay them', async () => {
    await api.enqueue('plain', 'x');
    await consume(api, 'plain');
    expect(await log(api, 'plain')).toEqual({ items: [], total: 0, limit: 50, offset: 0 });
    expectErrorBody(await api.post('/api/topics/plain/replay'), 422);
  });

  it('archives nothing when the ack fails, and only once per message', async () => {
    await api.put('/api/topic-configs/atomic', { replayable: true });
    const { id } = (await api.enqueue('atomic', 'x')).body;
    expectErrorBody(await api.post(`/api/messages/${id}/ack`), 404);
    expect((await api.dequeue('atomic')).body.messages).toHaveLength(1);

    // Make the delete of the ack fail inside the database: the archive insert before it must roll back too.
    const failDelete =
      engine.name === 'mysql'
        ? "CREATE TRIGGER fail_ack BEFORE DELETE ON messages FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no'"
        : "CREATE TRIGGER fail_ack BEFORE DELETE ON messages BEGIN SELECT RAISE(ABORT, 'no'); END";
    await server.db.raw(failDelete);
    const failed = await api.post(`/api/messages/${id}/ack`);
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(failed.text).not.toMatch(/no'|SIGNAL|RAISE/);
    expect((await log(api, 'atomic')).total).toBe(0);
    await server.db.raw('DROP TRIGGER fail_ack');

    expect((await api.post(`/api/messages/${id}/ack`)).status).toBe(204);
    expectErrorBody(await api.post(`/api/messages/${id}/ack`), 404);
    expect((await log(api, 'atomic')).items.map((e: any) => e.id)).toEqual([id]);
  });

  it('archives a fan-out message once, when its last group acks it', async () => {
    await api.put('/api/topic-configs/fan', { replayable: true });
    await api.post('/api/topics/fan/consumer-groups', { consumer_group: 'a' });
    await api.post('/api/topics/fan/consumer-groups', { consumer_group: 'b' });
    await api.enqueue('fan', 'x');
    await consume(api, 'fan', 1, 'a');
    expect((await log(api, 'fan')).total).toBe(0);
    await consume(api, 'fan', 1, 'b');
    expect((await log(api, 'fan')).total).toBe(1);
  });

  it('replays from the window start, exactly at it, and refuses from_time before it or malformed', async () => {
    await api.put('/api/topic-configs/win', { replayable: true, replay_window_seconds: 100 });
    await api.enqueue('win', 'old', { key: 'a' }); // created at t0
    clock.advance(30_000);
    await api.enqueue('win', 'mid'); // t0 + 30 s
    await consume(api, 'win', 2);
    clock.advance(90_000); // now = t0 + 120 s: the window starts at t0 + 20 s
    const windowStart = new Date(clock.now() - 100_000).toISOString();

    expectErrorBody(await api.post('/api/topics/win/replay', { from_time: new Date(clock.now() - 100_001).toISOString() }), 422);
    expectErrorBody(await api.post('/api/topics/win/replay', { from_time: 'yesterday' }), 422);
    expectErrorBody(await api.post('/api/topics/win/replay', { from_time: '2026-11-22 10:00' }), 422);

    const atStart = await api.post('/api/topics/win/replay', { from_time: windowStart });
    expect(atStart.status, atStart.text).toBe(200);
    expect(atStart.body).toEqual({ topic: 'win', enqueued: 1, from_time: windowStart, replayed_from: windowStart });
    const replayed = await pending(api, 'win');
    expect(replayed.map((m) => [m.payload, m.retry_count])).toEqual([['mid', 0]]);

    await api.post(`/api/topics/win/purge`);
    const noFrom = await api.post('/api/topics/win/replay');
    // Without from_time the spec's from_time is "", and replayed_from names where the replay started: the window start.
    expect(noFrom.body).toEqual({ topic: 'win', enqueued: 1, from_time: '', replayed_from: windowStart });
    expect((await pending(api, 'win')).map((m) => m.payload)).toEqual(['mid']);
  });

  it('replays the whole log when the topic has no window, applying key upserts, with new ids', async () => {
    await api.put('/api/topic-configs/all', { replayable: true });
    const first = (await api.enqueue('all', 'v1', { key: 'k' })).body.id;
    await consume(api, 'all');
    await api.enqueue('all', 'v2', { key: 'k' });
    await consume(api, 'all');
    clock.advance(10 * 86_400_000);

    const res = await api.post('/api/topics/all/replay', {});
    // No window: the whole log, from its oldest entry.
    expect(res.body).toMatchObject({ topic: 'all', from_time: '', replayed_from: '2026-11-22T10:00:00.000Z' });
    const now = await pending(api, 'all');
    // Both entries carry key k: the second replayed one upserts the first (one pending message per key).
    expect(now).toHaveLength(1);
    expect(now[0]).toMatchObject({ key: 'k', payload: 'v2', retry_count: 0 });
    expect(now[0].id).not.toBe(first);
  });

  it('replays a log larger than one page completely and only once', async () => {
    await api.put('/api/topic-configs/big', { replayable: true });
    const messages = Array.from({ length: 250 }, (_, i) => ({ topic: 'big', payload: `m${i}` }));
    expect((await api.post('/api/messages/batch', { messages })).status).toBe(201);
    const consumed = await consume(api, 'big', 250);
    expect(consumed).toHaveLength(250);

    expect((await api.post('/api/topics/big/replay')).body.enqueued).toBe(250);
    const items = (await api.dequeue('big', { count: 1000 })).body.messages;
    expect(items).toHaveLength(250);
    expect(new Set(items.map((m: any) => m.payload)).size).toBe(250);
    const metrics = await api.get('/metrics');
    expect(metrics.text).toMatch(/conveyor_messages_replayed_total\{[^}]*topic="big"[^}]*\} 250/);
    // Replays are enqueues too: 250 by the batch, 250 by the replay.
    expect(metrics.text).toMatch(/conveyor_messages_enqueued_total\{[^}]*topic="big"[^}]*\} 500/);
  });

  it('deletes log entries acked before a time, and needs a valid before', async () => {
    await api.put('/api/topic-configs/trim', { replayable: true });
    await api.enqueue('trim', 'a');
    await consume(api, 'trim');
    clock.advance(60_000);
    await api.enqueue('trim', 'b');
    await consume(api, 'trim');

    expectErrorBody(await api.delete('/api/topics/trim/message-log'), 400);
    expectErrorBody(await api.delete('/api/topics/trim/message-log?before=soon'), 400);
    const cut = encodeURIComponent(new Date(clock.now() - 1000).toISOString());
    expect((await api.delete(`/api/topics/trim/message-log?before=${cut}`)).body).toEqual({ deleted: 1 });
    expect((await log(api, 'trim')).items.map((e: any) => Buffer.from(e.payload, 'base64').toString())).toEqual(['b']);
  });
});
