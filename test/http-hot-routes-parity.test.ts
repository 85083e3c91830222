import { afterAll, beforeAll, expect, it } from 'vitest';
import { createUser, startAuthServer, type AuthServer, type TestUser } from './helpers/auth.js';
import { describeEachEngine } from './helpers/engines.js';
import { dequeueIds, enqueueId, MISSING_ID } from './helpers/messages.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Enqueue, dequeue and ack by id, the hot routes, go through the one request pipeline of every route
 * (src/http/app.ts, router.ts). A path spelled another way that the router accepts (a trailing slash
 * and a query string) reaches the same route and must answer exactly alike, with auth off and on: there is no
 * second way in.
 */
/** The same route, spelled with a trailing slash and a query string. */
const respelt = (path: string) => `${path}/?spelling=other`;

const IGNORED = new Set(['date', 'x-request-id', 'connection', 'keep-alive']);

async function post(url: string, body: string | undefined, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  const kept = [...res.headers.entries()].filter(([name]) => !IGNORED.has(name));
  return { status: res.status, text: await res.text(), headers: Object.fromEntries(kept), requestId: res.headers.get('x-request-id') };
}

describeEachEngine('hot routes answer the same however the path is spelt', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  const call = (path: string, body: string | undefined, headers: Record<string, string> = {}) => post(`${server.url}${path}`, body, headers);

  async function both(path: string, body: string | undefined) {
    const plain = await call(path, body);
    const other = await call(respelt(path), body);
    return { plain, other };
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
    const { plain, other } = await both(path, body);
    expect(plain.status).toBe(status);
    expect(JSON.parse(plain.text)).toHaveProperty('error');
    expect(plain).toEqual({ ...other, requestId: plain.requestId });
  });

  it('enqueue answers 201 with an id and the same headers', async () => {
    const { plain, other } = await both('/api/messages', '{"topic":"parity-ok","payload":"p"}');
    expect(plain.status).toBe(201);
    expect(other.status).toBe(201);
    expect(JSON.parse(plain.text)).toEqual({ id: expect.any(String) });
    expect(Object.keys(plain.headers).sort()).toEqual(Object.keys(other.headers).sort());
    expect(plain.headers['content-type']).toBe(other.headers['content-type']);
  });

  it('dequeue and ack by id work', async () => {
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

describeEachEngine('hot routes with auth on: authentication and grants in the one pipeline', (engine) => {
  let server: AuthServer;
  let writer: TestUser;
  let stranger: TestUser;
  let consumer: TestUser;
  beforeAll(async () => {
    server = await startAuthServer(engine);
    writer = await createUser(server, ['write:secure.*']);
    stranger = await createUser(server, ['write:elsewhere']);
    consumer = await createUser(server, ['consume:secure.*:billing']);
  });
  afterAll(async () => {
    await server?.close();
  });

  const bearer = (user?: TestUser | string): Record<string, string> => (user === undefined ? {} : { authorization: `Bearer ${typeof user === 'string' ? user : user.token}` });

  async function both(path: string, body: string | undefined, user?: TestUser | string) {
    const plain = await post(`${server.url}${path}`, body, bearer(user));
    const other = await post(`${server.url}${respelt(path)}`, body, bearer(user));
    expect(plain).toEqual({ ...other, requestId: plain.requestId });
    return plain;
  }

  it('answers 401 without a token, with a bad one, and before any body error', async () => {
    expect((await both('/api/messages', '{"topic":"secure.a","payload":"p"}')).status).toBe(401);
    expect((await both('/api/messages/dequeue', '{"topic":"secure.a"}', 'not.a.token')).status).toBe(401);
    expect((await both(`/api/messages/${MISSING_ID}/ack`, '{}', 'Bearer-less')).status).toBe(401);
    expect((await both('/api/messages', '{"topic":', undefined)).status).toBe(401);
    expect((await both('/api/messages', '[1]', 'x.y.z')).status).toBe(401);
    expect((await server.admin.get('/api/messages?topic=secure.a')).body.total).toBe(0);
  });

  it('answers 403 for a topic the caller holds no grant on, and 400 for a bad body of a granted one', async () => {
    const refused = await both('/api/messages', '{"topic":"secure.a","payload":"p"}', stranger);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.text)).toEqual({ error: 'insufficient permissions' });
    expect((await both('/api/messages/dequeue', '{"topic":"secure.a"}', stranger)).status).toBe(403);
    expect((await both('/api/messages', '{"topic":"secure.a","payload":1}', writer)).status).toBe(400);
    expect((await both('/api/messages', '{"topic":"secure.a","payload":"p","extra":1}', writer)).status).toBe(400);
    // A non-string topic is validation's 400, for any authenticated caller.
    expect((await both('/api/messages', '{"topic":7,"payload":"p"}', stranger)).status).toBe(400);
    expect((await server.admin.get('/api/messages?topic=secure.a')).body.total).toBe(0);
  });

  it('enqueues, dequeues and acks with grants, and refuses an ack on a topic not granted', async () => {
    expect((await server.admin.post('/api/topics/secure.jobs/consumer-groups', { consumer_group: 'billing' })).status).toBe(201);
    const enqueued = await post(`${server.url}/api/messages`, '{"topic":"secure.jobs","payload":"p"}', bearer(writer));
    expect(enqueued.status).toBe(201);
    const { id } = JSON.parse(enqueued.text);
    // A consume grant covers its group only; without the group it is no grant at all.
    expect((await post(`${server.url}/api/messages/dequeue`, '{"topic":"secure.jobs"}', bearer(consumer))).status).toBe(403);
    const dequeued = await post(`${server.url}/api/messages/dequeue`, '{"topic":"secure.jobs","consumer_group":"billing"}', bearer(consumer));
    expect(dequeued.status, dequeued.text).toBe(200);
    expect(JSON.parse(dequeued.text).messages.map((m: { id: string }) => m.id)).toEqual([id]);
    expect((await both(`/api/messages/${id}/ack`, '{"consumer_group":"billing"}', stranger)).status).toBe(403);
    expect((await post(`${server.url}/api/messages/${id}/ack`, '{"consumer_group":"billing"}', bearer(consumer))).status).toBe(204);
    expect((await both(`/api/messages/${id}/ack`, '{"consumer_group":"billing"}', consumer)).status).toBe(404);
  });

  it('stops a deleted user', async () => {
    const gone = await createUser(server, ['write:secure.*']);
    expect((await post(`${server.url}/api/messages`, '{"topic":"secure.gone","payload":"p"}', bearer(gone))).status).toBe(201);
    expect((await server.admin.delete(`/api/users/${gone.id}`)).status).toBe(204);
    const after = await both('/api/messages', '{"topic":"secure.gone","payload":"p"}', gone);
    expect(after.status).toBe(401);
  });
});
