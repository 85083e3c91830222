import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { startTestServer, type TestServer } from './helpers/server.js';

describeEachEngine('list, stats, purge and delete by key', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });
  beforeEach(async () => {
    await server.db('messages').delete();
  });

  async function fill(topic: string, n: number, prefix = 'm'): Promise<string[]> {
    const res = await server.api.post('/api/messages/batch', { messages: Array.from({ length: n }, (_, i) => ({ topic, payload: `${prefix}${i}` })) });
    expect(res.status).toBe(201);
    return res.body.ids;
  }

  /** Puts messages of `topic` into every status: n pending, n processing, n failed, n expired. */
  async function everyStatus(topic: string, n: number) {
    // max_retries 0: the first nack fails the message (no retry, no dead letter).
    await server.api.put(`/api/topic-configs/${topic}`, { max_retries: 0 });
    const failing = await fill(topic, n, 'f');
    const dequeued = (await server.api.dequeue(topic, { count: n })).body.messages;
    expect(dequeued.map((m: any) => m.id)).toEqual(failing);
    for (const m of dequeued) expect((await server.api.post(`/api/messages/${m.id}/nack`, { error: 'boom' })).status).toBe(204);
    await server.api.delete(`/api/topic-configs/${topic}`);
    const expiring = await fill(topic, n, 'e');
    await server.db('messages').whereIn('id', expiring).update({ status: 'expired' });
    const processing = await fill(topic, n, 'p');
    expect((await server.api.dequeue(topic, { count: n })).body.messages.map((m: any) => m.id)).toEqual(processing);
    const pending = await fill(topic, n, 'q');
    return { pending, processing, expired: expiring, failed: failing };
  }

  describe('GET /api/messages', () => {
    it('pages with default limit 50 and offset 0, oldest first, with the total', async () => {
      const ids = await fill('paged', 120);
      const first = await server.api.get('/api/messages');
      expect(first.status).toBe(200);
      expect(first.body.limit).toBe(50);
      expect(first.body.offset).toBe(0);
      expect(first.body.total).toBe(120);
      expect(first.body.items.map((m: any) => m.id)).toEqual(ids.slice(0, 50));
      const last = await server.api.get('/api/messages?limit=50&offset=100');
      expect(last.body).toMatchObject({ total: 120, limit: 50, offset: 100 });
      expect(last.body.items.map((m: any) => m.id)).toEqual(ids.slice(100));
      const beyond = await server.api.get('/api/messages?offset=500');
      expect(beyond.body).toMatchObject({ items: [], total: 120, limit: 50, offset: 500 });
    });

    it('sends a page larger than one piece of text in pieces, whole and in order', async () => {
      // Each payload escapes to six times its length in JSON (\u0001): about 3.6 MB of text per message.
      const payloads = ['\u0001', '\u0002', '\u0003', '\u0004', '\u0005'].map((c) => c.repeat(600_000));
      const res = await server.api.post('/api/messages/batch', { messages: payloads.map((payload) => ({ topic: 'wide', payload })) });
      expect(res.status).toBe(201);
      const page = await server.api.get('/api/messages?topic=wide&limit=3&offset=1');
      expect(page.status).toBe(200);
      expect(page.headers.get('transfer-encoding')).toBe('chunked');
      expect(page.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(page.body.items.map((m: any) => m.payload)).toEqual(payloads.slice(1, 4));
      expect(page.body.items.map((m: any) => m.id)).toEqual(res.body.ids.slice(1, 4));
      expect({ ...page.body, items: undefined }).toEqual({ items: undefined, total: 5, limit: 3, offset: 1 });
      // A small page keeps its length, as every other answer does.
      expect((await server.api.get('/api/messages?topic=wide&limit=0')).status).toBe(400);
      const one = await server.api.get('/api/messages?topic=nothing-here');
      expect(one.headers.get('content-length')).toBe(String(Buffer.byteLength(one.text)));
      expect(one.body).toEqual({ items: [], total: 0, limit: 50, offset: 0 });
    });

    it('walking the pages returns every message exactly once', async () => {
      const ids = await fill('walk', 95);
      const seen: string[] = [];
      for (let offset = 0; offset < 95; offset += 20) {
        seen.push(...(await server.api.get(`/api/messages?limit=20&offset=${offset}`)).body.items.map((m: any) => m.id));
      }
      expect(seen).toEqual(ids);
    });

    it('list items carry every field of the message resource', async () => {
      await server.api.enqueue('fields', 'hello', { key: 'k1', metadata: { a: 'b' } });
      const [item] = (await server.api.get('/api/messages?topic=fields')).body.items;
      expect(Object.keys(item).sort()).toEqual(
        ['available_at', 'created_at', 'dlq_moved_at', 'expires_at', 'id', 'key', 'last_error', 'max_retries', 'metadata', 'ordering_key', 'original_topic', 'payload', 'retry_count', 'status', 'topic'].sort(),
      );
      expect(item).toMatchObject({ topic: 'fields', key: 'k1', payload: 'hello', metadata: { a: 'b' }, status: 'pending', last_error: '', original_topic: '', dlq_moved_at: null });
    });

    it('clamps a limit above 200 to 200 and echoes it', async () => {
      await fill('clamp', 230);
      const res = await server.api.get('/api/messages?limit=1000');
      expect(res.status).toBe(200);
      expect(res.body.limit).toBe(200);
      expect(res.body.items).toHaveLength(200);
      expect(res.body.total).toBe(230);
      expect((await server.api.get('/api/messages?limit=200')).body.items).toHaveLength(200);
      expect((await server.api.get('/api/messages?limit=201&offset=200')).body).toMatchObject({ limit: 200, offset: 200 });
    });

    it.each(['limit=0', 'limit=-5', 'limit=abc', 'limit=1.5', 'limit=1e3', 'offset=-1', 'offset=x', 'offset=2.5', 'limit=10&limit=20'])(
      'rejects %s with 400',
      async (query) => {
        expectErrorBody(await server.api.get(`/api/messages?${query}`), 400);
      },
    );

    it('filters by topic, with the total of that topic', async () => {
      const a = await fill('alpha', 7);
      await fill('beta', 5);
      const res = await server.api.get('/api/messages?topic=alpha&limit=5');
      expect(res.body.total).toBe(7);
      expect(res.body.items.map((m: any) => m.id)).toEqual(a.slice(0, 5));
      expect(res.body.items.every((m: any) => m.topic === 'alpha')).toBe(true);
      expect((await server.api.get('/api/messages?topic=gamma')).body).toEqual({ items: [], total: 0, limit: 50, offset: 0 });
      expect((await server.api.get('/api/messages')).body.total).toBe(12);
    });

    it('lists every status, with status, retry_count and last_error as stored', async () => {
      const s = await everyStatus('mixed', 2);
      const { items } = (await server.api.get('/api/messages?topic=mixed')).body;
      const statusOf = new Map(items.map((m: any) => [m.id, m.status]));
      for (const [status, ids] of Object.entries(s)) for (const id of ids) expect(statusOf.get(id)).toBe(status);
      const failed = items.find((m: any) => m.id === s.failed[0]);
      expect(failed).toMatchObject({ retry_count: 1, last_error: 'boom' });
    });

    it('filters by status (extension), alone or with a topic and paging, with the total of the filtered set', async () => {
      const s = await everyStatus('st1', 3);
      const other = await everyStatus('st2', 2);
      for (const status of ['pending', 'processing', 'failed', 'expired'] as const) {
        const res = await server.api.get(`/api/messages?topic=st1&status=${status}`);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ total: 3, limit: 50, offset: 0 });
        expect(res.body.items.map((m: any) => m.id)).toEqual(s[status]);
        expect(res.body.items.every((m: any) => m.status === status && m.topic === 'st1')).toBe(true);
      }
      const everywhere = await server.api.get('/api/messages?status=failed');
      expect(everywhere.body.total).toBe(5);
      expect(everywhere.body.items.map((m: any) => m.id)).toEqual([...s.failed, ...other.failed]);
      const page = await server.api.get('/api/messages?status=pending&limit=2&offset=2');
      expect(page.body).toMatchObject({ total: 5, limit: 2, offset: 2 });
      expect(page.body.items.map((m: any) => m.id)).toEqual([s.pending[2], other.pending[0]]);
      expect((await server.api.get('/api/messages?topic=nothing&status=pending')).body).toEqual({ items: [], total: 0, limit: 50, offset: 0 });
    });

    it('lists newest first with order=newest (extension), paged and filtered alike; oldest first by default', async () => {
      const s = await everyStatus('ord', 3);
      const oldest = (await server.api.get('/api/messages?topic=ord&status=pending')).body.items.map((m: any) => m.id);
      expect(oldest).toEqual(s.pending);
      const newest = await server.api.get('/api/messages?topic=ord&status=pending&order=newest');
      expect(newest.status).toBe(200);
      expect(newest.body.items.map((m: any) => m.id)).toEqual([...s.pending].reverse());
      expect((await server.api.get('/api/messages?topic=ord&status=pending&order=oldest')).body.items.map((m: any) => m.id)).toEqual(s.pending);
      const page = await server.api.get('/api/messages?topic=ord&order=newest&limit=2&offset=1');
      const all = (await server.api.get('/api/messages?topic=ord&order=newest')).body.items.map((m: any) => m.id);
      expect(page.body).toMatchObject({ total: 12, limit: 2, offset: 1 });
      expect(page.body.items.map((m: any) => m.id)).toEqual(all.slice(1, 3));
      // Unfiltered too: the latest enqueue of any topic comes first.
      const latest = (await server.api.enqueue('ord-latest', 'x')).body.id;
      expect((await server.api.get('/api/messages?order=newest&limit=1')).body.items[0].id).toBe(latest);
    });

    it.each([
      ['order=latest', 'unrecognised order "latest"; use oldest or newest'],
      ['order=newest&order=oldest', 'order must be given once, as a string'],
      ['status=done', 'unrecognised status "done"; use pending, processing, failed, expired'],
      ['status=', 'unrecognised status ""; use pending, processing, failed, expired'],
      ['status=PENDING', 'unrecognised status "PENDING"; use pending, processing, failed, expired'],
      ['status=pending&status=failed', 'status must be given once, as a string'],
    ])('rejects %s with 400 and says why', async (query, message) => {
      const res = await server.api.get(`/api/messages?${query}`);
      expectErrorBody(res, 400);
      expect(res.body.error).toBe(message);
    });
  });

  describe('GET /api/stats', () => {
    it('counts messages by topic and status', async () => {
      await everyStatus('s1', 2);
      await fill('s2', 3);
      const res = await server.api.get('/api/stats');
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['topics', 'consumer_groups', 'ordering']);
      expect(res.body.consumer_groups).toEqual([]);
      const sorted = [...res.body.topics].sort((x: any, y: any) => `${x.topic}/${x.status}`.localeCompare(`${y.topic}/${y.status}`));
      expect(sorted).toEqual([
        { topic: 's1', status: 'expired', count: 2 },
        { topic: 's1', status: 'failed', count: 2 },
        { topic: 's1', status: 'pending', count: 2 },
        { topic: 's1', status: 'processing', count: 2 },
        { topic: 's2', status: 'pending', count: 3 },
      ]);
    });

    it('is empty without messages', async () => {
      expect((await server.api.get('/api/stats')).body).toEqual({ topics: [], consumer_groups: [], ordering: [] });
    });
  });

  describe('POST /api/topics/:topic/purge', () => {
    it('without a body removes pending, processing and expired, and keeps failed', async () => {
      const s = await everyStatus('p1', 3);
      await fill('other', 2);
      const res = await server.api.post('/api/topics/p1/purge');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ deleted: 9 });
      const left = (await server.api.get('/api/messages?topic=p1')).body.items.map((m: any) => m.id);
      expect(left.sort()).toEqual([...s.failed].sort());
      expect((await server.api.get('/api/messages?topic=other')).body.total).toBe(2);
    });

    it.each([
      ['an empty body', ''],
      ['an empty object', {}],
      ['empty statuses', { statuses: [] }],
      ['null statuses', { statuses: null }],
    ])('with %s purges the default three', async (_what, body) => {
      await everyStatus('p2', 1);
      const res = await server.api.request('POST', '/api/topics/p2/purge', body, { 'content-type': 'application/json' });
      expect(res.body).toEqual({ deleted: 3 });
      expect((await server.api.get('/api/messages?topic=p2')).body.items.map((m: any) => m.status)).toEqual(['failed']);
    });

    it.each(['pending', 'processing', 'expired', 'failed'])('with statuses [%s] removes only those', async (status) => {
      const s = await everyStatus('p3', 2);
      const res = await server.api.post('/api/topics/p3/purge', { statuses: [status] });
      expect(res.body).toEqual({ deleted: 2 });
      const left = (await server.api.get('/api/messages?topic=p3')).body.items;
      expect(left).toHaveLength(6);
      expect(left.some((m: any) => (s as any)[status].includes(m.id))).toBe(false);
    });

    it('with every status empties the topic; a repeat deletes nothing', async () => {
      await everyStatus('p4', 2);
      expect((await server.api.post('/api/topics/p4/purge', { statuses: ['pending', 'processing', 'expired', 'failed', 'pending'] })).body).toEqual({ deleted: 8 });
      expect((await server.api.post('/api/topics/p4/purge', { statuses: ['pending', 'processing', 'expired', 'failed'] })).body).toEqual({ deleted: 0 });
      expect((await server.api.get('/api/messages?topic=p4')).body.total).toBe(0);
    });

    it('a purged processing message can no longer be acked', async () => {
      const [id] = await fill('p5', 1);
      await server.api.dequeue('p5');
      await server.api.post('/api/topics/p5/purge', { statuses: ['processing'] });
      expectErrorBody(await server.api.post(`/api/messages/${id}/ack`), 404);
    });

    it('purges more than one delete batch', async () => {
      await fill('p6', 1000);
      await fill('p6', 1000);
      await fill('p6', 500);
      expect((await server.api.post('/api/topics/p6/purge')).body).toEqual({ deleted: 2500 });
    });

    it('an unknown status is 400 and deletes nothing', async () => {
      await fill('p7', 2);
      expectErrorBody(await server.api.post('/api/topics/p7/purge', { statuses: ['pending', 'acked'] }), 400);
      expect((await server.api.get('/api/messages?topic=p7')).body.total).toBe(2);
    });

    it('a dead-letter topic can be purged', async () => {
      await server.api.put('/api/topic-configs/p8', { max_retries: 1 });
      const [id] = await fill('p8', 1);
      await server.api.dequeue('p8');
      await server.api.post(`/api/messages/${id}/nack`);
      expect((await server.api.get('/api/messages?topic=p8.dlq')).body.total).toBe(1);
      expect((await server.api.post('/api/topics/p8.dlq/purge')).body).toEqual({ deleted: 1 });
      await server.api.delete('/api/topic-configs/p8');
    });
  });

  describe('DELETE /api/topics/:topic/messages/by-key/:key', () => {
    it('removes every message of the key on that topic, whatever its status', async () => {
      await server.api.put('/api/topic-configs/k1', { max_retries: 0 });
      const failed = (await server.api.enqueue('k1', 'a', { key: 'order-1' })).body.id;
      await server.api.dequeue('k1');
      expect((await server.api.post(`/api/messages/${failed}/nack`)).status).toBe(204);
      const processing = (await server.api.enqueue('k1', 'b', { key: 'order-1' })).body.id;
      await server.api.dequeue('k1');
      const pending = (await server.api.enqueue('k1', 'c', { key: 'order-1' })).body.id;
      expect(new Set([failed, processing, pending]).size).toBe(3);
      const statuses = (await server.api.get('/api/messages?topic=k1')).body.items.map((m: any) => m.status);
      expect(statuses).toEqual(['failed', 'processing', 'pending']);
      await server.api.enqueue('k1', 'other', { key: 'order-2' });
      await server.api.enqueue('k1', 'no key');
      await server.api.enqueue('k2', 'same key, other topic', { key: 'order-1' });
      const res = await server.api.delete('/api/topics/k1/messages/by-key/order-1');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ deleted: 3 });
      expect((await server.api.get('/api/messages?topic=k1')).body.items.map((m: any) => m.key)).toEqual(['order-2', null]);
      expect((await server.api.get('/api/messages?topic=k2')).body.total).toBe(1);
      expectErrorBody(await server.api.post(`/api/messages/${processing}/ack`), 404);
      await server.api.delete('/api/topic-configs/k1');
    });

    it('an unknown key deletes nothing', async () => {
      await server.api.enqueue('k3', 'a', { key: 'x' });
      expect((await server.api.delete('/api/topics/k3/messages/by-key/y')).body).toEqual({ deleted: 0 });
      expect((await server.api.delete('/api/topics/nothing/messages/by-key/x')).body).toEqual({ deleted: 0 });
    });

    it('keys with URL-encoded characters are matched exactly', async () => {
      const key = 'user/42 ü?&#';
      await server.api.enqueue('k4', 'a', { key });
      await server.api.enqueue('k4', 'b', { key: 'user/42' });
      const res = await server.api.delete(`/api/topics/k4/messages/by-key/${encodeURIComponent(key)}`);
      expect(res.body).toEqual({ deleted: 1 });
      expect((await server.api.get('/api/messages?topic=k4')).body.items.map((m: any) => m.key)).toEqual(['user/42']);
    });

    it('after deleting, the key can be used again', async () => {
      await server.api.enqueue('k5', 'a', { key: 'x' });
      await server.api.delete('/api/topics/k5/messages/by-key/x');
      expect((await server.api.enqueue('k5', 'b', { key: 'x' })).status).toBe(201);
      expect((await server.api.get('/api/messages?topic=k5')).body.items.map((m: any) => m.payload)).toEqual(['b']);
    });
  });
});
