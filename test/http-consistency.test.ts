import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { singleBodyLimit } from '../src/http/app.js';
import { BODY_FIELDS } from '../src/http/operations.js';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import type { Api, ApiResponse } from './helpers/http.js';
import { rawRequest } from './helpers/raw-http.js';
import { MISSING_ID } from './helpers/messages.js';
import { manualClock, startTestServer, testConfig, type TestClock, type TestServer } from './helpers/server.js';

/** Issue item 7: the same input gets the same answer on every route that takes it. */

const NOT_AN_OBJECT = 'request body must be a JSON object';

/** Every route with a body, with a body that is valid but for what the test adds. */
const BODY_ROUTES: Array<[string, string, Record<string, unknown>]> = [
  ['POST', '/api/messages', { topic: 'cons', payload: 'x' }],
  ['POST', '/api/messages/batch', { messages: [{ topic: 'cons', payload: 'x' }] }],
  ['POST', '/api/messages/dequeue', { topic: 'cons-empty' }],
  ['POST', '/api/messages/ack', { ids: [MISSING_ID] }],
  ['POST', `/api/messages/${MISSING_ID}/ack`, {}],
  ['POST', `/api/messages/${MISSING_ID}/nack`, { error: 'e' }],
  ['POST', `/api/messages/${MISSING_ID}/visibility`, { visibility_timeout_seconds: 30 }],
  ['PUT', '/api/topic-configs/cons', { max_retries: 2 }],
  ['PUT', '/api/topic-schemas/cons', { schema_json: '"string"' }],
  ['POST', '/api/topics/cons/purge', { statuses: ['pending'] }],
  ['POST', '/api/topics/cons/consumer-groups', { consumer_group: 'g' }],
  ['POST', '/api/topics/cons/replay', {}],
  ['PUT', '/api/admin/delete-reaper/schedule', { schedule: '' }],
  ['POST', '/api/auth/login', { username: 'nobody', password: 'x' }],
  ['POST', '/api/users', { username: 'u', password: 'long-enough-password' }],
  ['PUT', `/api/users/${MISSING_ID}`, { is_admin: false }],
  ['POST', `/api/users/${MISSING_ID}/grants`, { action: 'read' }],
  ['POST', `/api/users/${MISSING_ID}/consumer-group-grants`, { consumer_group: 'g' }],
];

/** Routes that take no body fields. */
const NO_BODY_ROUTES: Array<[string, string]> = [
  ['GET', '/api/stats'],
  ['GET', '/api/topics'],
  ['GET', '/api/messages'],
  ['GET', `/api/messages/${MISSING_ID}`],
  ['GET', '/api/topic-configs/cons'],
  ['DELETE', '/api/topic-schemas/cons'],
  ['POST', `/api/messages/${MISSING_ID}/requeue`],
  ['POST', '/api/admin/expiry-reaper/run'],
  ['DELETE', '/api/topics/cons/messages/by-key/k'],
  ['POST', `/api/users/${MISSING_ID}/access-keys`],
  ['GET', '/healthz'],
];

/** The hot routes, also asked with a query string: the route table ignores it, so both must answer alike. */
const viaBoth = (path: string) => (['/api/messages', '/api/messages/dequeue', `/api/messages/${MISSING_ID}/ack`].includes(path) ? [path, `${path}?spelling=other`] : [path]);

describeEachEngine('consistent answers across routes', (engine) => {
  let server: TestServer;
  let api: Api;

  /** Any method with any body (fetch sends none with GET), as the Api helper answers. */
  async function send(method: string, path: string, body: unknown): Promise<ApiResponse> {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    const port = Number(new URL(server.url).port);
    const res = await rawRequest(port, { method, path, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) }, body: text });
    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') headers.set(name, value);
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed, headers, text: res.text };
  }
  beforeAll(async () => {
    server = await startTestServer(engine, { overrides: { queue: { max_payload_bytes: 1024 }, auth: { credentials_key: Buffer.alloc(32, 7).toString('base64') } } });
    api = server.api;
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('a topic name PUT refuses is refused (400) by GET and DELETE of the same path', () => {
    const names: Array<[string, string]> = [
      ['an encoded slash', 'a%2Fb'],
      ['201 characters', 'a'.repeat(201)],
      ['a leading dot', '.hidden'],
      ['unicode', '%C3%A9t%C3%A9'],
      ['a dead-letter topic', 'orders.dlq'],
      ['the dead-letter topic of a 200-character name', `${'b'.repeat(200)}.dlq`],
    ];
    it.each(names)('%s', async (_what, name) => {
      for (const kind of ['topic-configs', 'topic-schemas']) {
        const put = await api.put(`/api/${kind}/${name}`, kind === 'topic-configs' ? { max_retries: 1 } : { schema_json: '"string"' });
        expectErrorBody(put, 400);
        for (const method of ['GET', 'DELETE']) {
          const res = await api.request(method, `/api/${kind}/${name}`);
          expectErrorBody(res, 400);
          expect(res.body.error, `${method} /api/${kind}/${name}`).toBe(put.body.error);
        }
      }
    });

    it('a valid name without a configuration or schema is still 404 on GET and 204 on DELETE', async () => {
      expectErrorBody(await api.get('/api/topic-configs/unconfigured'), 404);
      expectErrorBody(await api.get('/api/topic-schemas/unconfigured'), 404);
      expect((await api.delete('/api/topic-configs/unconfigured')).status).toBe(204);
      expect((await api.delete('/api/topic-schemas/unconfigured')).status).toBe(204);
    });
  });

  describe('delete-by-key takes exactly the keys enqueue takes (1-255 code points)', () => {
    it('a 256-character key is 400, as on enqueue', async () => {
      const key = 'k'.repeat(256);
      const enqueue = await api.post('/api/messages', { topic: 'keys', payload: 'x', key });
      expectErrorBody(enqueue, 400);
      const del = await api.delete(`/api/topics/keys/messages/by-key/${key}`);
      expectErrorBody(del, 400);
      expect(del.body.error).toBe(enqueue.body.error);
      const emoji = '\u{1F4E6}'.repeat(256);
      expectErrorBody(await api.delete(`/api/topics/keys/messages/by-key/${encodeURIComponent(emoji)}`), 400);
    });

    it('the longest key enqueue takes can be deleted by key', async () => {
      for (const key of ['k'.repeat(255), '\u{1F4E6}'.repeat(255)]) {
        expect((await api.enqueue('keys', 'x', { key })).status).toBe(201);
        const del = await api.delete(`/api/topics/keys/messages/by-key/${encodeURIComponent(key)}`);
        expect(del.body, del.text).toEqual({ deleted: 1 });
      }
    });
  });

  describe('a JSON body that is not an object says so', () => {
    const bodies: Array<[string, string, string]> = [
      ['null', 'null', NOT_AN_OBJECT],
      ['a string', '"hello"', NOT_AN_OBJECT],
      ['a number', '42', NOT_AN_OBJECT],
      ['true', 'true', NOT_AN_OBJECT],
      ['an array', '[{"topic":"cons","payload":"x"}]', NOT_AN_OBJECT],
      ['  a number after whitespace', ' \n 7 ', NOT_AN_OBJECT],
      ['malformed JSON', '{"topic":', 'malformed JSON body'],
      ['a bare word', 'hello', 'malformed JSON body'],
      ['only whitespace', '   ', 'malformed JSON body'],
    ];
    it.each(bodies)('%s', async (_what, raw, message) => {
      for (const [method, path] of [...BODY_ROUTES.map(([m, p]): [string, string] => [m, p]), ...NO_BODY_ROUTES]) {
        for (const target of viaBoth(path)) {
          const res = await send(method, target, raw);
          expectErrorBody(res, 400);
          expect(res.body.error, `${method} ${target}`).toBe(message);
        }
      }
    });

    it('an empty body is an empty object', async () => {
      const res = await api.request('POST', '/api/messages/dequeue', '', { 'content-type': 'application/json' });
      expectErrorBody(res, 400);
      expect(res.body.error).toBe('topic is required and must be a string');
      expect((await api.request('POST', `/api/messages/${MISSING_ID}/requeue`, '')).status).toBe(404);
    });

    it('a batch item that is not an object is named', async () => {
      const res = await api.post('/api/messages/batch', { messages: [{ topic: 'cons', payload: 'x' }, null] });
      expectErrorBody(res, 400);
      expect(res.body.error).toBe('messages[1] must be a JSON object');
    });
  });

  describe('unknown request fields are refused (400) on every route', () => {
    it('every route with a body is in the field table', () => {
      const templates = BODY_ROUTES.map(([method, path]) => `${method} ${path.replace(MISSING_ID, ':id').replace('/cons/', '/:topic/').replace(/\/cons$/, '/:topic')}`);
      expect(templates.sort()).toEqual(Object.keys(BODY_FIELDS).sort());
    });

    it.each(BODY_ROUTES)('%s %s: a known body plus an unknown field is 400 naming it', async (method, path, body) => {
      for (const target of viaBoth(path)) {
        const res = await api.request(method, target, { ...body, bogus_field: 1 });
        expectErrorBody(res, 400);
        expect(res.body.error).toMatch(/^unknown field "bogus_field"; allowed: /);
      }
    });

    it.each(NO_BODY_ROUTES)('%s %s: a route without body fields refuses any', async (method, path) => {
      const res = await send(method, path, { topic: 'cons' });
      expectErrorBody(res, 400);
      expect(res.body.error).toBe('unknown field "topic"; this request takes no body fields');
      expect((await send(method, path, {})).status).toBeLessThan(500);
    });

    it('several unknown fields are named, and a batch item is checked too', async () => {
      const res = await api.post('/api/messages', { topic: 'cons', payload: 'x', priority: 1, ttl: 2 });
      expect(res.body.error).toBe('unknown fields "priority", "ttl"; allowed: topic, payload, metadata, key, ordering_key, delay_seconds, deliver_at');
      const batch = await api.post('/api/messages/batch', { messages: [{ topic: 'cons', payload: 'x' }, { topic: 'cons', payload: 'y', priority: 1 }] });
      expectErrorBody(batch, 400);
      expect(batch.body.error).toBe('messages[1]: unknown field "priority"; allowed: topic, payload, metadata, key, ordering_key, delay_seconds, deliver_at');
      const typo = await api.put('/api/topic-configs/cons', { max_retires: 5 });
      expectErrorBody(typo, 400);
      expect(typo.body.error).toMatch(/^unknown field "max_retires"; allowed: max_retries, /);
      // Metadata is the client's own map: any key goes.
      expect((await api.enqueue('cons-meta', 'x', { metadata: { bogus_field: 'fine' } })).status).toBe(201);
    });

    it('nothing was stored or changed by the refused requests', async () => {
      expect((await api.get('/api/messages?topic=cons')).body.total).toBe(0);
      expectErrorBody(await api.get('/api/topic-configs/cons'), 404);
      expect((await api.get('/api/topics/cons/consumer-groups')).body.items).toEqual([]);
      expect((await api.get('/api/admin/delete-reaper/schedule')).body).toEqual({ schedule: '', active: false });
    });
  });

  describe('the delete-reaper schedule error states the rule once', () => {
    it.each([
      ['three fields', '1 2 3', 3],
      ['seven fields', '0 0 3 * * * 2030', 7],
      ['eight fields', '1 2 3 4 5 6 7 8', 8],
      ['a nickname with more', '@daily now', 2],
    ])('%s', async (_what, schedule, count) => {
      const res = await api.put('/api/admin/delete-reaper/schedule', { schedule });
      expectErrorBody(res, 400);
      expect(res.body.error).toBe(
        `schedule is not a valid cron expression: it needs 5 fields (minute hour day-of-month month day-of-week), or 6 with a leading seconds field; got ${count}`,
      );
      expect(res.body.error).not.toMatch(/seven/);
    });

    it('five fields, six with seconds and a nickname are accepted; a bad field is still named', async () => {
      for (const schedule of ['0 3 * * *', '30 0 3 * * *', '@daily']) {
        expect((await api.put('/api/admin/delete-reaper/schedule', { schedule })).body).toEqual({ schedule, active: true });
      }
      const bad = await api.put('/api/admin/delete-reaper/schedule', { schedule: '61 * * * *' });
      expectErrorBody(bad, 400);
      expect(bad.body.error).toMatch(/^schedule is not a valid cron expression: .*minute/i);
      await api.put('/api/admin/delete-reaper/schedule', { schedule: '' });
    });

    it('only standard cron is accepted, the grammar the delete-reaper CronJob takes: not L, W, # or a 7 for Sunday', async () => {
      const notStandard = (field: string, item: string) =>
        `schedule is not a valid cron expression: ${field} "${item}" is not standard cron (numbers, names, *, ?, ranges, lists and steps; L, W and # are not), which a Kubernetes CronJob would refuse`;
      const refused: Array<[string, string]> = [
        ['0 3 L * *', notStandard('day-of-month', 'L')],
        ['0 3 15W * *', notStandard('day-of-month', '15W')],
        ['0 3 LW * *', notStandard('day-of-month', 'LW')],
        ['0 3 * * 5L', notStandard('day-of-week', '5L')],
        ['0 3 * * 1#2', notStandard('day-of-week', '1#2')],
        ['0 0 3 * * 1#2', notStandard('day-of-week', '1#2')],
        ['0 3 * * 7', 'schedule is not a valid cron expression: day-of-week "7" is not in 0-6 or a name, Sunday is 0'],
        ['0 3 * * 1-7', 'schedule is not a valid cron expression: day-of-week "7" is not in 0-6 or a name, Sunday is 0'],
      ];
      for (const [schedule, error] of refused) {
        const res = await api.put('/api/admin/delete-reaper/schedule', { schedule });
        expectErrorBody(res, 400);
        expect(res.body.error, schedule).toBe(error);
      }
      expect((await api.get('/api/admin/delete-reaper/schedule')).body).toEqual({ schedule: '', active: false });
      for (const schedule of ['0 3 * * SUN', '0 3 ? Jan-Mar mon-fri', '*/15 0-6/2 1,15 * *', '0 3 * * 0-6', '0 0 3 * * sat']) {
        expect((await api.put('/api/admin/delete-reaper/schedule', { schedule })).body, schedule).toEqual({ schedule, active: true });
      }
      await api.put('/api/admin/delete-reaper/schedule', { schedule: '' });
    });

    it('a schedule no date matches is refused rather than stored as active and never run', async () => {
      for (const schedule of ['0 3 31 2 *', '* * 30 2 *', '0 0 0 31 4 *']) {
        const res = await api.put('/api/admin/delete-reaper/schedule', { schedule });
        expectErrorBody(res, 400);
        expect(res.body.error).toBe('schedule never runs: no date matches all of its fields');
      }
      expect((await api.get('/api/admin/delete-reaper/schedule')).body).toEqual({ schedule: '', active: false });
      // The 29th of February comes every four years: it runs.
      expect((await api.put('/api/admin/delete-reaper/schedule', { schedule: '0 3 29 2 *' })).body).toEqual({ schedule: '0 3 29 2 *', active: true });
      await api.put('/api/admin/delete-reaper/schedule', { schedule: '' });
    });
  });
});

describeEachEngine('replay answers the time it replayed from', (engine) => {
  let server: TestServer;
  let clock: TestClock;
  beforeEach(async () => {
    clock = manualClock(Date.parse('2026-11-22T10:00:00.000Z'));
    server = await startTestServer(engine, { now: clock.now, overrides: { reapers: { mode: 'external' } } });
  });
  afterEach(async () => {
    await server?.close();
  });

  async function archive(api: Api, topic: string, payload: string): Promise<void> {
    expect((await api.enqueue(topic, payload)).status).toBe(201);
    const ids = (await api.dequeue(topic)).body.messages.map((m: any) => m.id);
    expect((await api.post('/api/messages/ack', { ids })).body.acked).toEqual(ids);
  }

  it('without from_time: the window start', async () => {
    const { api } = server;
    await api.put('/api/topic-configs/win', { replayable: true, replay_window_seconds: 60 });
    await archive(api, 'win', 'a');
    clock.advance(30_500);
    const res = await api.post('/api/topics/win/replay');
    expect(res.body).toEqual({ topic: 'win', enqueued: 1, from_time: '', replayed_from: '2026-11-22T09:59:30.500Z' });
  });

  it('without from_time and without a window: the created_at of the oldest entry, or the request time on an empty log', async () => {
    const { api } = server;
    await api.put('/api/topic-configs/all', { replayable: true });
    expect((await api.post('/api/topics/all/replay', {})).body).toEqual({ topic: 'all', enqueued: 0, from_time: '', replayed_from: '2026-11-22T10:00:00.000Z' });
    clock.advance(1234);
    await archive(api, 'all', 'first');
    clock.advance(10 * 86_400_000);
    await archive(api, 'all', 'second');
    const res = await api.post('/api/topics/all/replay');
    expect(res.body).toEqual({ topic: 'all', enqueued: 2, from_time: '', replayed_from: '2026-11-22T10:00:01.234Z' });
    // Replaying again from that time takes the same entries.
    expect((await api.post('/api/topics/all/replay', { from_time: res.body.replayed_from })).body.enqueued).toBe(2);
  });

  it('with from_time: that instant, in UTC with milliseconds', async () => {
    const { api } = server;
    await api.put('/api/topic-configs/given', { replayable: true });
    await archive(api, 'given', 'x');
    const res = await api.post('/api/topics/given/replay', { from_time: '2026-11-22T11:00:00+02:00' });
    expect(res.body).toEqual({ topic: 'given', enqueued: 1, from_time: '2026-11-22T09:00:00.000Z', replayed_from: '2026-11-22T09:00:00.000Z' });
    expect((await api.post('/api/topics/given/replay', { from_time: '2026-11-22T10:00:00.001Z' })).body).toEqual({
      topic: 'given',
      enqueued: 0,
      from_time: '2026-11-22T10:00:00.001Z',
      replayed_from: '2026-11-22T10:00:00.001Z',
    });
  });
});

describeEachEngine('the single-request body limit is sized for JSON escaping', (engine) => {
  const MAX = 100_000;
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine, { overrides: { queue: { max_payload_bytes: MAX } } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('is 6 x queue.max_payload_bytes + 64 KiB', () => {
    expect(singleBodyLimit(testConfig('sqlite::memory:', { queue: { max_payload_bytes: MAX } }))).toBe(6 * MAX + 65_536);
    expect(singleBodyLimit(testConfig('sqlite::memory:'))).toBe(6 * 1_048_576 + 65_536);
  });

  /** An enqueue body whose payload is `count` times `escaped` (one payload character, written escaped). */
  const body = (escaped: string, count: number, extra = '') => `{"topic":"esc","payload":"${escaped.repeat(count)}"${extra}}`;

  /** [what, escaped form, payload bytes per repetition] */
  const ESCAPES: Array<[string, string, number]> = [
    ['control characters (6 bytes each on the wire)', '\\u0001', 1],
    ['quotes (2 bytes each)', '\\"', 1],
    ['2-byte characters written as \\u00e9 (3 bytes per payload byte)', '\\u00e9', 2],
    ['emoji written as surrogate pairs (3 bytes per payload byte)', '\\ud83d\\udce6', 4],
  ];

  it.each(ESCAPES)('a payload of exactly max_payload_bytes of %s is accepted, one more is 413', async (_what, escaped, bytes) => {
    const count = MAX / bytes;
    for (const path of ['/api/messages', '/api/messages?via=express']) {
      const ok = await server.api.request('POST', path, body(escaped, count), { 'content-type': 'application/json' });
      expect(ok.status, ok.text).toBe(201);
      const over = await server.api.request('POST', path, body(escaped, count + 1), { 'content-type': 'application/json' });
      expectErrorBody(over, 413);
      expect(over.body.error).toBe(`payload exceeds ${MAX} bytes`);
    }
    const stored = (await server.api.get('/api/messages?topic=esc&limit=1')).body.items[0];
    expect(Buffer.byteLength(stored.payload)).toBe(MAX);
    expect((await server.api.post('/api/topics/esc/purge')).body.deleted).toBe(2);
  });

  it('a body over the limit is 413 before any parsing, on both paths', async () => {
    const limit = 6 * MAX + 65_536;
    const padding = `,"metadata":{"pad":"${'p'.repeat(limit)}"}`;
    for (const path of ['/api/messages', '/api/messages?via=express', '/api/topics/esc/purge']) {
      const res = await server.api.request('POST', path, body('x', 1, padding), { 'content-type': 'application/json' });
      expectErrorBody(res, 413);
      expect(res.body.error).toBe('request body too large');
    }
  });
});
