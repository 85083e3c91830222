import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { dequeueIds, enqueueId, MISSING_ID } from './helpers/messages.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Enqueue, dequeue and ack by id are served by a lean front dispatcher (src/http/fast-path.ts) unless the
 * request is unusual; a query string sends the same request through express instead. Both must answer alike.
 */
describeEachEngine('hot routes answer the same with or without the fast path', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  const IGNORED = new Set(['date', 'x-request-id', 'connection', 'keep-alive']);

  async function call(path: string, body: string | undefined, headers: Record<string, string> = {}) {
    const res = await fetch(`${server.url}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
    const kept = [...res.headers.entries()].filter(([name]) => !IGNORED.has(name));
    return { status: res.status, text: await res.text(), headers: Object.fromEntries(kept), requestId: res.headers.get('x-request-id') };
  }

  async function both(path: string, body: string | undefined) {
    const fast = await call(path, body);
    const viaExpress = await call(`${path}?via=express`, body);
    return { fast, viaExpress };
  }

  const errorCases: Array<[string, string, string | undefined, number]> = [
    ['enqueue, malformed JSON', '/api/messages', '{"topic":', 400],
    ['enqueue, JSON that is not an object', '/api/messages', '[1]', 400],
    ['enqueue, a bare string', '/api/messages', '"x"', 400],
    ['enqueue, no body', '/api/messages', undefined, 400],
    ['enqueue, payload not a string', '/api/messages', '{"topic":"parity","payload":1}', 400],
    ['dequeue, no topic', '/api/messages/dequeue', '{}', 400],
    ['dequeue, count out of range', '/api/messages/dequeue', '{"topic":"parity","count":0}', 400],
    ['ack, unknown id', `/api/messages/${MISSING_ID}/ack`, '{}', 404],
    ['ack, malformed id', '/api/messages/not-an-id/ack', '', 404],
    ['ack, consumer_group not a string', `/api/messages/${MISSING_ID}/ack`, '{"consumer_group":1}', 400],
  ];

  it.each(errorCases)('%s: same status, headers and body', async (_name, path, body, status) => {
    const { fast, viaExpress } = await both(path, body);
    expect(fast.status).toBe(status);
    expect(JSON.parse(fast.text)).toHaveProperty('error');
    expect(fast).toEqual({ ...viaExpress, requestId: fast.requestId });
  });

  it('enqueue answers 201 with an id and the same headers', async () => {
    const { fast, viaExpress } = await both('/api/messages', '{"topic":"parity-ok","payload":"p"}');
    expect(fast.status).toBe(201);
    expect(viaExpress.status).toBe(201);
    expect(JSON.parse(fast.text)).toEqual({ id: expect.any(String) });
    expect(Object.keys(fast.headers).sort()).toEqual(Object.keys(viaExpress.headers).sort());
    expect(fast.headers['content-type']).toBe(viaExpress.headers['content-type']);
  });

  it('dequeue and ack by id work on the fast path', async () => {
    const id = await enqueueId(server.api, 'parity-ack', 'x');
    const res = await call('/api/messages/dequeue', '{"topic":"parity-ack"}');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text).messages.map((m: { id: string }) => m.id)).toEqual([id]);
    const ack = await call(`/api/messages/${id}/ack`, '{}');
    expect(ack.status).toBe(204);
    expect(ack.text).toBe('');
    expect((await call(`/api/messages/${id}/ack`, '{}')).status).toBe(404);
    expect(await dequeueIds(server.api, 'parity-ack')).toEqual([]);
  });

  it('echoes a sane client X-Request-Id and replaces an unsafe one', async () => {
    const sane = await call('/api/messages/dequeue', '{"topic":"parity-rid"}', { 'x-request-id': 'client-id-1' });
    expect(sane.requestId).toBe('client-id-1');
    const unsafe = await call('/api/messages/dequeue', '{"topic":"parity-rid"}', { 'x-request-id': 'bad id!' });
    expect(unsafe.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });
});
