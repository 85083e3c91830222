import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { Validator } from '@seriousme/openapi-schema-validator';
import _Ajv2020 from 'ajv/dist/2020.js';
import _addFormats from 'ajv-formats';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../src/http/openapi/document.js';
import { uiTypes, UI_TYPES_PATH } from '../scripts/openapi-types.js';
import { registeredRoutes } from '../src/http/router.js';
import { OPERATIONS } from '../src/http/operations.js';
import { createUser, startAuthServer, USER_PASSWORD, ADMIN, type AuthServer } from './helpers/auth.js';
import { describeEachEngine } from './helpers/engines.js';
import type { Api, ApiResponse } from './helpers/http.js';

// ajv and ajv-formats are CommonJS: the default import may be module.exports, whose `default` is the class.
const Ajv2020 = ((_Ajv2020 as any).default ?? _Ajv2020) as typeof _Ajv2020.default;
const addFormats = ((_addFormats as any).default ?? _addFormats) as typeof _addFormats.default;

type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete'] as const;

/**
 * Every answer of the scenario below is checked against the served document: its status must be documented
 * for that path and method, and its body must match the schema documented for that status. Successful
 * requests' bodies are checked against the documented request body too, so the document is no stricter than
 * the service. `seen` records which operations answered which statuses.
 */
class Conformance {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly templates: Array<{ template: string; pattern: RegExp }>;
  readonly seen = new Map<string, Set<number>>();

  constructor(readonly doc: Json) {
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: 'doc', components: doc.components });
    // Literal paths before templated ones: /api/messages/ack is not /api/messages/{id}/ack.
    this.templates = Object.keys(doc.paths)
      .map((template) => ({ template, pattern: new RegExp(`^${template.replace(/[.]/g, '\\.').replace(/\{\w+\}/g, '[^/]+')}$`) }))
      .sort((a, b) => a.template.split('{').length - b.template.split('{').length);
  }

  private resolve(node: Json): Json {
    const ref: string | undefined = node?.$ref;
    if (!ref) return node;
    return this.resolve(ref.slice(2).split('/').reduce((at: Json, part) => at[part], this.doc));
  }

  private validate(schema: Json, value: unknown, what: string): void {
    const validator = schema.$ref ? this.ajv.getSchema(`doc${schema.$ref}`)! : this.ajv.compile(schema);
    expect(validator, `${what}: no schema at ${schema.$ref}`).toBeTypeOf('function');
    if (!validator(value)) expect.fail(`${what} does not match ${schema.$ref ?? 'its schema'}: ${this.ajv.errorsText(validator.errors)}\n${JSON.stringify(value).slice(0, 500)}`);
  }

  check(method: string, url: string, requestBody: unknown, res: ApiResponse): void {
    const path = url.split('?')[0];
    const template = this.templates.find((t) => t.pattern.test(path))?.template;
    expect(template, `${method} ${path} is not a documented path`).toBeDefined();
    const operation: Json | undefined = this.doc.paths[template!][method.toLowerCase()];
    expect(operation, `${method} ${template} is not documented`).toBeDefined();
    const what = `${method} ${template} → ${res.status}`;
    const documented = operation!.responses[String(res.status)];
    expect(documented, `${what} is not a documented status (${Object.keys(operation!.responses).join(', ')}): ${res.text}`).toBeDefined();
    const response = this.resolve(documented);
    const type = res.headers.get('content-type') ?? '';
    if (!response.content) {
      expect(res.text, `${what} has a body, documented as none`).toBe('');
    } else if (response.content['application/json']) {
      expect(type, what).toMatch(/^application\/json/);
      this.validate(response.content['application/json'].schema, res.body, what);
    } else {
      expect(Object.keys(response.content), what).toEqual(['text/plain']);
      expect(type, what).toMatch(/^text\/plain/);
    }
    if (res.status < 300 && requestBody !== undefined) {
      const declared = operation!.requestBody?.content?.['application/json']?.schema;
      expect(declared, `${method} ${template} takes no documented body`).toBeDefined();
      this.validate(declared, requestBody, `${method} ${template} request body`);
    }
    const key = `${method.toUpperCase()} ${template}`;
    if (!this.seen.has(key)) this.seen.set(key, new Set());
    this.seen.get(key)!.add(res.status);
  }

  /** An Api whose every answer is checked. */
  wrap(api: Api) {
    const call = async (method: string, url: string, body?: unknown) => {
      const res = await api.request(method, url, body);
      this.check(method, url, body, res);
      return res;
    };
    return {
      get: (url: string) => call('GET', url),
      post: (url: string, body?: unknown) => call('POST', url, body),
      put: (url: string, body?: unknown) => call('PUT', url, body),
      delete: (url: string) => call('DELETE', url),
    };
  }
}

/** `/api/messages/{id}/ack` → `/api/messages/:id/ack`, as express templates are written. */
const expressPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');

const documentedRoutes = (doc: Json) =>
  Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${expressPath(path)}`));

/** A request as fetch will not send it (a GET with a body) and any body as given, answered as Api answers. */
function rawRequest(baseUrl: string, method: string, path: string, headers: Record<string, string>, body: string | Buffer): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const data = typeof body === 'string' ? Buffer.from(body) : body;
    const req = httpRequest(`${baseUrl}${path}`, { method, headers: { ...headers, 'content-length': String(data.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const answerHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) answerHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
        let parsed: unknown;
        try {
          parsed = text.length > 0 ? JSON.parse(text) : undefined;
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body: parsed, headers: answerHeaders, text });
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

const AVRO = JSON.stringify({ type: 'record', name: 'Click', fields: [{ name: 'page', type: 'string' }] });

describeEachEngine('OpenAPI document', (engine) => {
  let server: AuthServer;
  let doc: Json;
  beforeAll(async () => {
    server = await startAuthServer(engine, { overrides: { auth: { credentials_key: Buffer.alloc(32, 3).toString('base64') } } });
    const res = await server.api.get('/api/openapi.json');
    expect(res.status).toBe(200);
    doc = res.body;
  });
  afterAll(async () => {
    await server?.close();
  });

  it('is served without a token, as JSON, and is valid OpenAPI 3.1', async () => {
    const res = await server.api.get('/api/openapi.json');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(doc.openapi).toBe('3.1.0');
    expect(doc).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument(OPERATIONS))));
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents every route the service registers, and nothing else', () => {
    expect([...registeredRoutes].sort()).toEqual(documentedRoutes(doc).sort());
    const ids = documentedRoutes(doc).map((route) => {
      const [method, path] = route.split(' ');
      return doc.paths[path.replace(/:(\w+)/g, '{$1}')][method.toLowerCase()].operationId;
    });
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('answers each documented path with exactly the documented methods (405 and Allow for the others)', async () => {
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      const url = path.replace(/\{(\w+)\}/g, (_, name) => (name === 'id' || name === 'grantId' ? '0190a5c4-0000-7000-8000-000000000000' : `sample-${name}`));
      const res = await server.admin.request('PATCH', url);
      expect(res.status, `PATCH ${url}: ${res.text}`).toBe(405);
      const methods = METHODS.filter((m) => item[m]).map((m) => m.toUpperCase());
      const allow = (res.headers.get('allow') ?? '').split(', ').filter((m) => m !== 'HEAD');
      expect(allow.sort(), path).toEqual(methods.sort());
    }
  });

  it('declares operation ids, tags, security and the error statuses of every operation', () => {
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      for (const method of METHODS.filter((m) => item[m])) {
        const op = item[method];
        const where = `${method} ${path}`;
        expect(op.operationId, where).toMatch(/^[a-z][A-Za-z]+$/);
        expect(op.summary, where).toBeTruthy();
        expect(op.tags, where).toHaveLength(1);
        const open = ['/healthz', '/readyz', '/api/version', '/api/openapi.json', '/api/auth/status', '/api/auth/login'].includes(path);
        expect(op.security, where).toEqual(open ? [] : [{ bearerAuth: [] }]);
        // Open operations answer 401 only for a failed login.
        expect(Object.keys(op.responses).includes('401'), where).toBe(!open || op.operationId === 'login');
        expect(op.responses['500'], where).toBeDefined();
        for (const name of path.match(/\{(\w+)\}/g) ?? []) expect(op.parameters.some((p: Json) => p.in === 'path' && `{${p.name}}` === name), where).toBe(true);
      }
    }
  });

  it('every answer of a realistic session conforms to the document', async () => {
    const check = new Conformance(doc);
    const admin = check.wrap(server.admin);
    const anonymous = check.wrap(server.api);

    // Service, authentication.
    await anonymous.get('/healthz');
    await anonymous.get('/readyz');
    await anonymous.get('/api/version');
    await anonymous.get('/api/openapi.json');
    expect((await anonymous.get('/metrics')).status).toBe(401);
    expect((await admin.get('/metrics')).status).toBe(200);
    await anonymous.get('/api/auth/status');
    expect((await admin.get('/api/auth/status')).body.user.username).toBe(ADMIN.username);
    expect((await anonymous.post('/api/auth/login', { username: ADMIN.username })).status).toBe(400);
    expect((await anonymous.post('/api/auth/login', { username: ADMIN.username, password: 'wrong-password-123' })).status).toBe(401);
    expect((await anonymous.post('/api/auth/login', ADMIN)).status).toBe(200);
    expect((await admin.post('/api/auth/refresh')).status).toBe(200);
    expect((await anonymous.post('/api/auth/refresh')).status).toBe(401);
    expect((await anonymous.get('/api/messages')).status).toBe(401);

    // Topic configuration and schemas.
    expect((await admin.put('/api/topic-configs/orders', { max_retries: 3, replayable: true, replay_window_seconds: 3600 })).status).toBe(200);
    expect((await admin.put('/api/topic-configs/jobs', { max_retries: 1 })).status).toBe(200);
    expect((await admin.put('/api/topic-configs/tiny', { max_depth: 1, message_ttl_seconds: 60, throughput_limit: 100 })).status).toBe(200);
    expect((await admin.put('/api/topic-configs/gone', {})).status).toBe(200);
    expect((await admin.get('/api/topic-configs/orders')).body.replayable).toBe(true);
    expect((await admin.get('/api/topic-configs')).body.items).toHaveLength(4);
    expect((await admin.put('/api/topic-configs/orders', { max_retries: -1 })).status).toBe(400);
    expect((await admin.put('/api/topic-configs/orders', { max_retires: 1 })).status).toBe(400);
    expect((await admin.put('/api/topic-configs/orders.dlq', {})).status).toBe(400);
    expect((await admin.get('/api/topic-configs/unconfigured')).status).toBe(404);
    expect((await admin.delete('/api/topic-configs/gone')).status).toBe(204);
    expect((await admin.put('/api/topic-schemas/events', { schema_json: AVRO })).body.version).toBe(1);
    expect((await admin.put('/api/topic-schemas/events', { schema_json: '{"type":"nope"}' })).status).toBe(400);
    expect((await admin.get('/api/topic-schemas/events')).status).toBe(200);
    expect((await admin.get('/api/topic-schemas')).body.items).toHaveLength(1);
    expect((await admin.post('/api/messages', { topic: 'events', payload: '{"page":"/home"}' })).status).toBe(201);
    expect((await admin.post('/api/messages', { topic: 'events', payload: '{"page":7}' })).status).toBe(422);
    expect((await admin.delete('/api/topic-schemas/events')).status).toBe(204);
    expect((await admin.get('/api/topic-schemas/events')).status).toBe(404);

    // Enqueue, batch, dequeue, ack, nack.
    const first = await admin.post('/api/messages', { topic: 'orders', payload: 'one', key: 'k1', metadata: { source: 'shop' } });
    expect(first.status).toBe(201);
    expect((await admin.post('/api/messages/batch', { messages: [{ topic: 'orders', payload: 'two' }, { topic: 'orders', payload: 'three', key: 'k3' }] })).body.ids).toHaveLength(2);
    expect((await admin.post('/api/messages/batch', { messages: [{ topic: 'orders' }] })).status).toBe(400);
    expect((await admin.post('/api/messages', { topic: 'orders.dlq', payload: 'x' })).status).toBe(400);
    const claimed = (await admin.post('/api/messages/dequeue', { topic: 'orders', count: 3, visibility_timeout_seconds: 60 })).body.messages;
    expect(claimed).toHaveLength(3);
    expect((await admin.post('/api/messages/dequeue', { topic: 'orders', count: 0 })).status).toBe(400);
    expect((await admin.post(`/api/messages/${claimed[0].id}/visibility`, { visibility_timeout_seconds: 120 })).status).toBe(200);
    expect((await admin.post(`/api/messages/${claimed[0].id}/ack`)).status).toBe(204);
    expect((await admin.post(`/api/messages/${claimed[0].id}/ack`)).status).toBe(404);
    expect((await admin.post(`/api/messages/${claimed[1].id}/nack`, { error: 'try again' })).status).toBe(204);
    expect((await admin.post('/api/messages/ack', { ids: [claimed[2].id, 'not-a-message'] })).body).toEqual({ acked: [claimed[2].id], not_found: ['not-a-message'] });
    expect((await admin.post('/api/messages/ack', { ids: 'x' })).status).toBe(400);
    expect((await admin.post('/api/messages', { topic: 'tiny', payload: 'a' })).status).toBe(201);
    expect((await admin.post('/api/messages', { topic: 'tiny', payload: 'b' })).status).toBe(429);

    // Dead letters and requeue.
    await admin.post('/api/messages', { topic: 'jobs', payload: 'resize image 7' });
    const job = (await admin.post('/api/messages/dequeue', { topic: 'jobs' })).body.messages[0];
    expect((await admin.post(`/api/messages/${job.id}/nack`, { error: 'thumbnailer down' })).status).toBe(204);
    const dead = (await admin.get('/api/messages?topic=jobs.dlq&status=pending')).body.items;
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ original_topic: 'jobs', last_error: 'thumbnailer down' });
    expect((await admin.post(`/api/messages/${dead[0].id}/requeue`)).status).toBe(204);
    expect((await admin.post(`/api/messages/${dead[0].id}/requeue`)).status).toBe(404);
    expect((await admin.get('/api/messages?limit=2&offset=1')).body).toMatchObject({ limit: 2, offset: 1 });
    expect((await admin.get('/api/messages?status=sideways')).status).toBe(400);
    expect((await admin.get('/api/messages?limit=0')).status).toBe(400);

    // Consumer groups.
    expect((await admin.post('/api/topics/fan/consumer-groups', { consumer_group: 'billing' })).status).toBe(201);
    expect((await admin.post('/api/topics/fan/consumer-groups', { consumer_group: 'billing' })).status).toBe(409);
    expect((await admin.post('/api/topics/fan/consumer-groups', { consumer_group: 'bad name!' })).status).toBe(400);
    expect((await admin.get('/api/topics/fan/consumer-groups')).body.items).toEqual(['billing']);
    expect((await admin.get('/api/topics/fan/consumer-groups/billing')).body).toEqual({ topic: 'fan', consumer_group: 'billing', managed_by: null });
    expect((await admin.get('/api/topics/fan/consumer-groups/nobody')).status).toBe(404);
    await admin.post('/api/messages', { topic: 'fan', payload: 'for every group' });
    const delivered = (await admin.post('/api/messages/dequeue', { topic: 'fan', consumer_group: 'billing' })).body.messages;
    expect(delivered).toHaveLength(1);
    expect((await admin.post(`/api/messages/${delivered[0].id}/ack`, { consumer_group: 'billing' })).status).toBe(204);
    expect((await admin.post('/api/messages/dequeue', { topic: 'fan', consumer_group: 'nobody' })).status).toBe(422);
    expect((await admin.delete('/api/topics/fan/consumer-groups/billing')).status).toBe(204);
    expect((await admin.delete('/api/topics/fan/consumer-groups/billing')).status).toBe(404);

    // Archive log and replay (the acked messages of `orders` were archived).
    const log = await admin.get('/api/topics/orders/message-log?limit=10');
    expect(log.body.total).toBe(2);
    expect((await admin.post('/api/topics/orders/replay', {})).body.enqueued).toBe(2);
    expect((await admin.post('/api/topics/orders/replay', { from_time: 'yesterday' })).status).toBe(422);
    expect((await admin.post('/api/topics/jobs/replay')).status).toBe(422);
    expect((await admin.delete(`/api/topics/orders/message-log?before=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).body.deleted).toBe(2);
    expect((await admin.delete('/api/topics/orders/message-log')).status).toBe(400);

    // Topics, and one message by id.
    const topics = (await admin.get('/api/topics?limit=200')).body;
    expect(topics.items.find((t: Json) => t.topic === 'orders')).toMatchObject({ configured: true, managed: false });
    expect((await admin.get('/api/topics?limit=0')).status).toBe(400);
    expect((await admin.get(`/api/messages/${claimed[1].id}`)).body).toMatchObject({ id: claimed[1].id, topic: 'orders', status: 'pending' });
    expect((await admin.get('/api/messages/not-a-message')).status).toBe(404);

    // Stats, purge, delete by key.
    expect((await admin.get('/api/stats')).body.topics.length).toBeGreaterThan(0);
    expect((await admin.delete('/api/topics/orders/messages/by-key/k3')).body.deleted).toBeGreaterThanOrEqual(1);
    expect((await admin.post('/api/topics/orders/purge', { statuses: ['pending'] })).status).toBe(200);
    expect((await admin.post('/api/topics/orders/purge', { statuses: ['archived'] })).status).toBe(400);
    expect((await admin.post('/api/topics/tiny/purge')).body.deleted).toBe(1);

    // Users and grants.
    const created = await admin.post('/api/users', { username: 'carol', password: USER_PASSWORD });
    expect(created.status).toBe(201);
    const carol = created.body.id;
    expect((await admin.post('/api/users', { username: 'carol', password: USER_PASSWORD })).status).toBe(409);
    expect((await admin.post('/api/users', { username: 'dave', password: 'short' })).status).toBe(400);
    expect((await admin.put(`/api/users/${carol}`, { is_admin: false, username: 'carol2' })).body.username).toBe('carol2');
    expect((await admin.put('/api/users/0190a5c4-0000-7000-8000-000000000000', { is_admin: true })).status).toBe(404);
    expect((await admin.put(`/api/users/${carol}`, { username: 'admin' })).status).toBe(409);
    const grant = await admin.post(`/api/users/${carol}/grants`, { action: 'read', topic_pattern: 'orders' });
    expect(grant.status).toBe(201);
    expect((await admin.post(`/api/users/${carol}/grants`, { action: 'read', topic_pattern: 'orders' })).status).toBe(409);
    expect((await admin.post(`/api/users/${carol}/grants`, { action: 'consume' })).status).toBe(400);
    expect((await admin.post(`/api/users/${carol}/consumer-group-grants`, { consumer_group: 'billing', topic_pattern: 'fan' })).status).toBe(201);
    expect((await admin.get(`/api/users/${carol}/grants`)).body.items).toHaveLength(2);
    expect((await admin.get('/api/users/0190a5c4-0000-7000-8000-000000000000/grants')).status).toBe(404);
    expect((await admin.delete(`/api/users/${carol}/grants/${grant.body.id}`)).status).toBe(204);
    expect((await admin.delete(`/api/users/${carol}/grants/${grant.body.id}`)).status).toBe(404);
    expect((await admin.get('/api/users')).body.items).toHaveLength(2);

    // Access keys: created (the secret once), used, listed, revoked.
    const key = await admin.post(`/api/users/${carol}/access-keys`);
    expect(key.status).toBe(201);
    expect((await admin.post('/api/users/0190a5c4-0000-7000-8000-000000000000/access-keys')).status).toBe(404);
    expect((await check.wrap(server.api.withToken(`${key.body.access_key_id}.${key.body.secret}`)).get('/api/messages?topic=fan')).status).toBe(403);
    // Its use is recorded in the background.
    await expect.poll(async () => (await admin.get(`/api/users/${carol}/access-keys`)).body.items[0].last_used_at).not.toBeNull();
    expect((await admin.delete(`/api/users/${carol}/access-keys/${key.body.access_key_id}`)).status).toBe(204);
    expect((await admin.delete(`/api/users/${carol}/access-keys/${key.body.access_key_id}`)).status).toBe(404);
    expect((await admin.delete(`/api/users/${carol}`)).status).toBe(204);
    expect((await admin.delete(`/api/users/${server.adminId}`)).status).toBe(400);

    // What a user with a read grant may and may not do.
    const reader = check.wrap((await createUser(server, ['read:orders'])).api);
    expect((await reader.get('/api/messages?topic=orders')).status).toBe(200);
    expect((await reader.get('/api/messages?topic=jobs')).status).toBe(403);
    expect((await reader.post('/api/messages', { topic: 'orders', payload: 'x' })).status).toBe(403);
    expect((await reader.get('/api/users')).status).toBe(403);
    expect((await reader.get('/api/audit-log')).status).toBe(403);
    expect((await reader.get('/api/stats')).status).toBe(200);

    // Reapers and their schedule.
    expect((await admin.post('/api/admin/expiry-reaper/run')).status).toBe(200);
    expect((await admin.post('/api/admin/delete-reaper/run')).status).toBe(200);
    expect((await admin.post('/api/admin/archive-reaper/run')).status).toBe(200);
    expect((await admin.put('/api/admin/delete-reaper/schedule', { schedule: '0 3 * * *' })).body).toEqual({ schedule: '0 3 * * *', active: true });
    expect((await admin.put('/api/admin/delete-reaper/schedule', { schedule: 'often' })).status).toBe(400);
    expect((await admin.get('/api/admin/delete-reaper/schedule')).body.active).toBe(true);

    // The audit log saw all of it.
    const audit = await admin.get('/api/audit-log?limit=200');
    expect(audit.body.total).toBeGreaterThan(10);
    expect((await admin.get('/api/audit-log?topic=orders&actor=admin')).status).toBe(200);
    expect((await admin.get('/api/audit-log?offset=-1')).status).toBe(400);

    // Every documented operation answered its success status at least once.
    const successes = Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m]).map((m) => {
        const status = Object.keys(item[m].responses).find((s) => s.startsWith('2'));
        return `${m.toUpperCase()} ${path} ${status}`;
      }),
    );
    const answered = [...check.seen].flatMap(([key, statuses]) => [...statuses].map((s) => `${key} ${s}`));
    expect(successes.filter((s) => !answered.includes(s))).toEqual([]);
    for (const status of [400, 401, 403, 404, 409, 422, 429]) expect(answered.some((a) => a.endsWith(` ${status}`)), String(status)).toBe(true);
  });

  it('documents, for every operation, what the request pipeline answers: unknown fields, bodies that are not JSON objects, charsets, encodings, oversized bodies', async () => {
    const check = new Conformance(doc);
    const { token } = await createUser(server, [], true);
    const auth = { authorization: `Bearer ${token}` };
    const id = '0190a5c4-0000-7000-8000-000000000000';
    const json = { 'content-type': 'application/json' };
    const cases: Array<[method: string, url: string, headers: Record<string, string>, body: string | Buffer, status: number]> = [
      // Operations that take no body still read one, and refuse its fields.
      ['POST', '/api/admin/archive-reaper/run', { ...auth, ...json }, '{"x":1}', 400],
      ['GET', '/api/stats', { ...auth, ...json }, '{"x":1}', 400],
      ['GET', '/healthz', json, '{"x":', 400],
      ['POST', '/api/auth/refresh', { ...auth, ...json }, '[1]', 400],
      ['GET', '/api/version', { ...json, 'content-encoding': 'gzip' }, 'not gzip', 400],
      ['POST', `/api/messages/${id}/requeue`, { ...auth, ...json }, Buffer.alloc(7 * 1024 * 1024, 0x20), 413],
      ['DELETE', `/api/users/${id}`, { ...auth, 'content-type': 'application/json; charset=latin1' }, '{}', 415],
      ['GET', '/api/topic-configs', { ...auth, ...json, 'content-encoding': 'compress' }, '{}', 415],
      // And operations that take one refuse the same.
      ['PUT', '/api/topic-configs/orders', { ...auth, 'content-type': 'application/json; charset=iso-8859-1' }, '{}', 415],
      ['POST', '/api/messages/dequeue', { ...auth, ...json }, Buffer.alloc(7 * 1024 * 1024, 0x20), 413],
    ];
    for (const [method, url, headers, body, status] of cases) {
      const res = await rawRequest(server.url, method, url, headers, body);
      expect(res.status, `${method} ${url}: ${res.text}`).toBe(status);
      check.check(method, url, undefined, res);
    }
  });

  it('the UI types (src/ui/api/openapi.d.ts) are generated from this document: run npm run openapi if not', async () => {
    expect(readFileSync(UI_TYPES_PATH, 'utf8')).toBe(await uiTypes());
  });
});
