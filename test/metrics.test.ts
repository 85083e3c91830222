import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { parseMetrics, valueOf } from './helpers/metrics.js';
import { manualClock, startTestServer, type TestServer } from './helpers/server.js';

const SCHEMA = JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'string' }] });
const TOPICS = ['m-main', 'm-retry', 'm-dlq', 'm-fail', 'm-redeliver', 'm-super', 'm-cap', 'm-schema', 'm-invalid', 'm-old', 'm-delayed'];

describeEachEngine('metrics', (engine) => {
  let server: TestServer;
  let samples: Sample[];
  let text: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    server = await startTestServer(engine, { overrides: { queue: { require_topic_registration: true } } });
    const { api } = server;
    const config: Record<string, object> = { 'm-dlq': { max_retries: 1 }, 'm-fail': { max_retries: 0 }, 'm-cap': { max_depth: 1 } };
    for (const topic of TOPICS) expect((await api.put(`/api/topic-configs/${topic}`, config[topic] ?? {})).status).toBe(200);
    expect((await api.put('/api/topic-schemas/m-schema', { schema_json: SCHEMA })).status).toBe(200);

    // enqueue 5, dequeue 3, ack 2: one processing and two pending remain.
    for (let i = 0; i < 5; i++) expect((await api.enqueue('m-main', `x${i}`)).status).toBe(201);
    const taken = (await api.dequeue('m-main', { count: 3 })).body.messages;
    for (const m of taken.slice(0, 2)) expect((await api.post(`/api/messages/${m.id}/ack`)).status).toBe(204);
    ids.mainProcessing = taken[2].id;

    // nack outcomes: retry (attempt 1 of 3), dead letter (topic max_retries 1), failed (max_retries 0).
    for (const topic of ['m-retry', 'm-dlq', 'm-fail']) {
      await api.enqueue(topic, 'x');
      const [m] = (await api.dequeue(topic)).body.messages;
      expect((await api.post(`/api/messages/${m.id}/nack`, { error: 'boom' })).status).toBe(204);
      ids[topic] = m.id;
    }
    expect((await api.post(`/api/messages/${ids['m-dlq']}/requeue`)).status).toBe(204);

    // Redelivery after the visibility timeout.
    await api.enqueue('m-redeliver', 'x');
    expect((await api.dequeue('m-redeliver', { visibility_timeout_seconds: 1 })).body.messages).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await api.dequeue('m-redeliver')).body.messages).toHaveLength(1);

    // Supersede: a nacked message returns while a newer pending message holds its key.
    await api.enqueue('m-super', 'old', { key: 'k' });
    const [old] = (await api.dequeue('m-super')).body.messages;
    await api.enqueue('m-super', 'new', { key: 'k' });
    expect((await api.post(`/api/messages/${old.id}/nack`)).status).toBe(204);

    // Rejects by reason.
    expect((await api.enqueue('m-cap', 'a')).status).toBe(201);
    expect((await api.enqueue('m-cap', 'b')).status).toBe(429);
    expect((await api.enqueue('m-cap', 'c')).status).toBe(429);
    expect((await api.enqueue('m-schema', JSON.stringify({ nope: 1 }))).status).toBe(422);
    expect((await api.enqueue('m-schema', JSON.stringify({ id: 'ok' }))).status).toBe(201);
    expect((await api.enqueue('m-unregistered', 'x')).status).toBe(422);
    expect((await api.enqueue('m-invalid', '')).status).toBe(400);

    // A pending message that has waited two minutes.
    const { body } = await api.enqueue('m-old', 'x');
    await server.db('messages').where({ id: body.id }).update({ created_at: Date.now() - 120_000 });

    // Two delayed messages and one due: only the two count as delayed, and the due one has no age yet.
    for (const delay of [60, 120, 0]) expect((await api.enqueue('m-delayed', 'x', { delay_seconds: delay })).status).toBe(201);

    expect((await api.get('/no-such-route')).status).toBe(404);

    // One scrape after all the traffic: the gauges are cached between scrapes.
    const res = await api.get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    text = res.text;
    samples = parseMetrics(text);
  });
  afterAll(async () => {
    await server?.close();
  });

  const counter = (name: string, labels: Record<string, string>) => valueOf(samples, name, labels);

  it('counts enqueued, dequeued and acked messages per topic', () => {
    expect(counter('conveyor_messages_enqueued_total', { topic: 'm-main' })).toBe(5);
    expect(counter('conveyor_messages_dequeued_total', { topic: 'm-main' })).toBe(3);
    expect(counter('conveyor_messages_acked_total', { topic: 'm-main' })).toBe(2);
    expect(counter('conveyor_messages_enqueued_total', { topic: 'm-cap' })).toBe(1);
    expect(counter('conveyor_messages_enqueued_total', { topic: 'm-schema' })).toBe(1);
    expect(counter('conveyor_messages_acked_total', { topic: 'm-retry' })).toBeUndefined();
  });

  it('counts nacks by topic and outcome', () => {
    expect(counter('conveyor_messages_nacked_total', { topic: 'm-retry', outcome: 'retry' })).toBe(1);
    expect(counter('conveyor_messages_nacked_total', { topic: 'm-dlq', outcome: 'dlq' })).toBe(1);
    expect(counter('conveyor_messages_nacked_total', { topic: 'm-fail', outcome: 'failed' })).toBe(1);
    expect(counter('conveyor_messages_nacked_total', { topic: 'm-retry', outcome: 'dlq' })).toBeUndefined();
    expect(counter('conveyor_messages_nacked_total', { topic: 'm-fail', outcome: 'retry' })).toBeUndefined();
  });

  it('counts requeues, redeliveries and superseded messages', () => {
    expect(counter('conveyor_messages_requeued_total', { topic: 'm-dlq' })).toBe(1);
    expect(counter('conveyor_messages_redelivered_total', { topic: 'm-redeliver' })).toBe(1);
    expect(counter('conveyor_messages_dequeued_total', { topic: 'm-redeliver' })).toBe(2);
    expect(counter('conveyor_messages_superseded_total', { topic: 'm-super' })).toBe(1);
    expect(counter('conveyor_messages_superseded_total', { topic: 'm-retry' })).toBeUndefined();
  });

  it('counts rejected enqueues by topic and reason', () => {
    expect(counter('conveyor_enqueue_rejected_total', { topic: 'm-cap', reason: 'depth' })).toBe(2);
    expect(counter('conveyor_enqueue_rejected_total', { topic: 'm-schema', reason: 'schema' })).toBe(1);
    expect(counter('conveyor_enqueue_rejected_total', { topic: 'm-unregistered', reason: 'registration' })).toBe(1);
    expect(counter('conveyor_enqueue_rejected_total', { topic: 'm-invalid', reason: 'invalid' })).toBe(1);
  });

  it('reports queue depth by topic and status', () => {
    const depth = (topic: string, status: string) => counter('conveyor_queue_depth', { topic, status });
    expect(depth('m-main', 'pending')).toBe(2);
    expect(depth('m-main', 'processing')).toBe(1);
    expect(depth('m-fail', 'failed')).toBe(1);
    expect(depth('m-retry', 'pending')).toBe(1);
    expect(depth('m-dlq', 'pending')).toBe(1);
    expect(depth('m-dlq.dlq', 'pending')).toBeUndefined();
    expect(depth('m-cap', 'pending')).toBe(1);
    expect(depth('m-super', 'pending')).toBe(1);
    expect(depth('m-redeliver', 'processing')).toBe(1);
  });

  it('reports the age of the oldest pending message per topic', () => {
    const age = counter('conveyor_oldest_pending_age_seconds', { topic: 'm-old' });
    expect(age).toBeGreaterThanOrEqual(119);
    expect(age).toBeLessThan(300);
    const fresh = counter('conveyor_oldest_pending_age_seconds', { topic: 'm-main' });
    expect(fresh).toBeGreaterThanOrEqual(0);
    expect(fresh).toBeLessThan(60);
    // Only topics with pending messages have an age.
    expect(counter('conveyor_oldest_pending_age_seconds', { topic: 'm-fail' })).toBeUndefined();
  });

  it('reports the delayed messages per topic, which are left out of the oldest pending age', () => {
    expect(counter('conveyor_delayed_messages', { topic: 'm-delayed' })).toBe(2);
    expect(counter('conveyor_queue_depth', { topic: 'm-delayed', status: 'pending' })).toBe(3);
    expect(counter('conveyor_oldest_pending_age_seconds', { topic: 'm-delayed' })).toBeLessThan(60);
    expect(counter('conveyor_delayed_messages', { topic: 'm-main' })).toBeUndefined();
  });

  it('labels HTTP durations with route templates, never raw ids', () => {
    const count = (route: string, method: string, status: string) =>
      counter('conveyor_http_request_duration_seconds_count', { route, method, status });
    expect(count('/api/messages/:id/ack', 'POST', '204')).toBe(2);
    expect(count('/api/messages/:id/nack', 'POST', '204')).toBe(4);
    expect(count('/api/messages/:id/requeue', 'POST', '204')).toBe(1);
    expect(count('/api/messages', 'POST', '201')).toBeGreaterThanOrEqual(12);
    expect(count('/api/messages', 'POST', '429')).toBe(2);
    expect(count('/api/topic-configs/:topic', 'PUT', '200')).toBe(TOPICS.length);
    expect(count('unmatched', 'GET', '404')).toBe(1);
    const routes = new Set(samples.filter((s) => s.name.startsWith('conveyor_http_request_duration_seconds')).map((s) => s.labels.route));
    for (const route of routes) expect(route).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-|m-main|no-such-route/);
    for (const id of Object.values(ids)) expect(text).not.toContain(id);
    // Buckets are cumulative and end in +Inf equal to the count.
    const inf = counter('conveyor_http_request_duration_seconds_bucket', { route: '/api/messages/:id/ack', method: 'POST', status: '204', le: '+Inf' });
    expect(inf).toBe(2);
    const sum = counter('conveyor_http_request_duration_seconds_sum', { route: '/api/messages/:id/ack', method: 'POST', status: '204' });
    expect(sum).toBeGreaterThan(0);
  });
});

describeEachEngine('queue gauges', (engine) => {
  const clock = manualClock();
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine, { now: clock.now });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('drop the series of a topic that emptied: no stale depth or age keeps an alert firing', async () => {
    const scrape = async () => parseMetrics((await server.api.get('/metrics')).text);
    await server.api.enqueue('g-purged', 'x');
    await server.api.enqueue('g-kept', 'x');
    clock.advance(60_000);
    let samples = await scrape();
    expect(valueOf(samples, 'conveyor_queue_depth', { topic: 'g-purged', status: 'pending' })).toBe(1);
    expect(valueOf(samples, 'conveyor_oldest_pending_age_seconds', { topic: 'g-purged' })).toBe(60);

    expect((await server.api.post('/api/topics/g-purged/purge', {})).body).toEqual({ deleted: 1 });
    // The snapshot is reused for 10 s; the next one no longer holds the topic.
    clock.advance(11_000);
    samples = await scrape();
    expect(valueOf(samples, 'conveyor_queue_depth', { topic: 'g-purged', status: 'pending' })).toBeUndefined();
    expect(valueOf(samples, 'conveyor_oldest_pending_age_seconds', { topic: 'g-purged' })).toBeUndefined();
    expect(valueOf(samples, 'conveyor_queue_depth', { topic: 'g-kept', status: 'pending' })).toBe(1);
    expect(valueOf(samples, 'conveyor_oldest_pending_age_seconds', { topic: 'g-kept' })).toBe(71);
  });

  it("show each consumer group's backlog, which a fan-out topic's own figures cannot show once one group consumes", async () => {
    const t = 'g-fanout';
    const scrape = async () => parseMetrics((await server.api.get('/metrics')).text);
    for (const group of ['live', 'gone']) expect((await server.api.post(`/api/topics/${t}/consumer-groups`, { consumer_group: group })).status).toBe(201);
    for (let i = 0; i < 3; i++) expect((await server.api.enqueue(t, `m${i}`)).status).toBe(201);
    const taken = (await server.api.dequeue(t, { count: 10, consumer_group: 'live' })).body.messages;
    expect(taken).toHaveLength(3);
    expect((await server.api.post(`/api/messages/${taken[0].id}/ack`, { consumer_group: 'live' })).status).toBe(204);
    clock.advance(60_000);
    const samples = await scrape();
    // The topic shows its messages as processing (the live group took them), nothing pending and no age.
    expect(valueOf(samples, 'conveyor_queue_depth', { topic: t, status: 'pending' })).toBeUndefined();
    expect(valueOf(samples, 'conveyor_oldest_pending_age_seconds', { topic: t })).toBeUndefined();
    const group = (name: string, consumer_group: string, status?: string) => valueOf(samples, name, { topic: t, consumer_group, ...(status && { status }) });
    expect(group('conveyor_group_depth', 'gone', 'pending')).toBe(3);
    expect(group('conveyor_group_oldest_pending_age_seconds', 'gone')).toBe(60);
    expect(group('conveyor_group_depth', 'live', 'processing')).toBe(2);
    expect(group('conveyor_group_depth', 'live', 'pending')).toBeUndefined();
    expect(group('conveyor_group_oldest_pending_age_seconds', 'live')).toBeUndefined();
  });

  // MySQL only: a table lock makes the database hang without an error; SQLite's reads cannot wait.
  if (engine.name === 'mysql') it('are left out of a scrape while the database does not answer, instead of holding it past the scrape timeout', async () => {
    const depth = (samples: ReturnType<typeof parseMetrics>) => valueOf(samples, 'conveyor_queue_depth', { topic: 'g-hung', status: 'pending' });
    expect((await server.api.enqueue('g-hung', 'x')).status).toBe(201);
    clock.advance(11_000);
    const locker = await server.db.transaction();
    try {
      await locker.raw('LOCK TABLES messages WRITE');
      const answered = await Promise.race([server.api.get('/metrics'), sleep(8_000).then(() => undefined)]);
      expect(answered?.status, 'the scrape is answered within 8 s').toBe(200);
      const samples = parseMetrics(answered!.text);
      expect(depth(samples)).toBeUndefined();
      // Everything the instance counts itself is there.
      expect(valueOf(samples, 'conveyor_messages_enqueued_total', { topic: 'g-hung' })).toBe(1);
    } finally {
      await locker.raw('UNLOCK TABLES');
      await locker.commit();
    }
    await expect.poll(async () => depth(parseMetrics((await server.api.get('/metrics')).text))).toBe(1);
  });
});

describeEachEngine('counters of rare events', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine, { overrides: { reapers: { mode: 'external' } } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('hold every reaper and outcome from the start, at 0, so the first success of an instance shows in increase()', async () => {
    const samples = parseMetrics((await server.api.get('/metrics')).text);
    for (const reaper of ['expiry', 'delete', 'archive']) {
      for (const outcome of ['success', 'error', 'skipped']) expect(valueOf(samples, 'conveyor_reaper_runs_total', { reaper, outcome }), `${reaper} ${outcome}`).toBe(0);
    }
    expect((await server.api.post('/api/admin/expiry-reaper/run')).status).toBe(200);
    const after = parseMetrics((await server.api.get('/metrics')).text);
    expect(valueOf(after, 'conveyor_reaper_runs_total', { reaper: 'expiry', outcome: 'success' })).toBe(1);
  });

  it('hold every database conflict kind and retry outcome from the start, at 0, so the first conflict shows in rate()', async () => {
    const samples = parseMetrics((await server.api.get('/metrics')).text);
    for (const kind of ['deadlock', 'lock_wait', 'wsrep_not_ready', 'connection_lost']) expect(valueOf(samples, 'conveyor_db_conflicts_total', { kind }), kind).toBe(0);
    for (const outcome of ['recovered', 'exhausted']) expect(valueOf(samples, 'conveyor_db_retries_total', { outcome }), outcome).toBe(0);
  });
});
