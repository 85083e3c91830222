import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/http/app.js';
import { OPERATIONS } from '../src/http/operations.js';
import { registeredRoutes } from '../src/http/router.js';
import type { HttpContext } from '../src/http/context.js';
import { createLogger } from '../src/log/logger.js';
import { startFakeKube, type FakeKube } from './fake-kube/index.js';
import { ADMIN, JWT_SECRET, createUser, type AuthServer, type TestUser } from './helpers/auth.js';
import { startTestController, waitForReady, type TestController } from './helpers/controller.js';
import { describeEachEngine, type Engine } from './helpers/engines.js';
import { Api, type ApiResponse } from './helpers/http.js';
import { MISSING_ID } from './helpers/messages.js';
import { startLoggedServer, type LoggedServer } from './helpers/raw-http.js';
import { manualClock, testConfig, type ConfigOverrides } from './helpers/server.js';

/**
 * The audit trail (docs/security.md, "Audit log"): every administrative change through the HTTP API and the
 * controller, and every refused attempt, shows in GET /api/audit-log with who, what, which topic or user and
 * the outcome, and as one `audit` log line; never a payload, a message key, a password or a token.
 */

const SECRET_PAYLOAD = 'payload-that-must-never-be-audited';
const SECRET_KEY = 'key-that-must-never-be-audited';
const SECRET_PASSWORD = 'password-that-must-never-be-audited';
const SECRET_PASSWORD_2 = 'second-password-never-audited';
const DAY_MS = 86_400_000;
const CREDENTIALS_KEY = Buffer.alloc(32, 9).toString('base64');

type AuditServer = LoggedServer & { url: string };

/** A server over a fresh database whose log lines (info and above) the test reads. */
async function startAuditServer(engine: Engine, overrides: ConfigOverrides = {}, now?: () => number): Promise<AuditServer> {
  const logged = await startLoggedServer(engine, { ...overrides, reapers: { mode: 'external' }, queue: { dlq_threshold: 1, ...overrides.queue } }, 'info', now);
  return { ...logged, url: `http://127.0.0.1:${logged.port}` };
}

/** Every record the filter selects, newest first, read page by page. */
async function auditLog(api: Api, query = ''): Promise<any[]> {
  const items: any[] = [];
  for (let offset = 0; offset < 2000; offset += 200) {
    const res = await api.get(`/api/audit-log?limit=200&offset=${offset}${query ? `&${query}` : ''}`);
    expect(res.status, res.text).toBe(200);
    items.push(...res.body.items);
    if (items.length >= res.body.total) return items;
  }
  return items;
}

const brief = (e: any) => ({ action: e.action, topic: e.topic, target: e.target, result: e.result, status: e.status });

interface Expected {
  action: string;
  topic?: string | null;
  target?: string | null;
  status: number;
  details?: Record<string, unknown>;
}

/** Changing routes that are produce, consume or authentication: not administrative, so not audited. */
const NOT_AUDITED = [
  'POST /api/messages',
  'POST /api/messages/batch',
  'POST /api/messages/dequeue',
  'POST /api/messages/ack',
  'POST /api/messages/:id/ack',
  'POST /api/messages/:id/nack',
  'POST /api/messages/:id/visibility',
  'POST /api/auth/login',
  'POST /api/auth/refresh',
];

describe('audited routes', () => {
  it('every route that changes something is audited, or is produce, consume or login', () => {
    // Routes are registered when the app is built; nothing here serves a request.
    const ctx = { config: testConfig('sqlite::memory:'), logger: createLogger('silent'), metrics: {}, maintenance: {}, users: {}, auth: {}, topics: {}, messages: {} };
    createApp(ctx as unknown as HttpContext);
    const route = (op: (typeof OPERATIONS)[number]) => `${op.method} ${op.path}`;
    const changing = OPERATIONS.filter((op) => op.method !== 'GET');
    const audited = changing.filter((op) => op.audit !== undefined && !('notAudited' in op.audit)).map(route);
    expect(changing.filter((op) => op.audit === undefined).map(route), 'changing routes without an audit declaration').toEqual([]);
    expect(changing.filter((op) => op.audit && 'notAudited' in op.audit).map(route).sort(), 'changing routes not audited').toEqual([...NOT_AUDITED].sort());
    expect(audited.filter((r) => !registeredRoutes.has(r)), 'audited routes the API does not serve').toEqual([]);
    expect(registeredRoutes.has('GET /api/audit-log')).toBe(true);
  });
});

describeEachEngine('audit log (auth on)', (engine) => {
  let s: AuditServer;
  let admin: Api;
  let adminId: string;
  let adminToken: string;
  let user: TestUser;
  const expected: Expected[] = [];
  /** Access keys' secrets the admin was given: never in a record or a log line. */
  const accessKeySecrets: string[] = [];

  beforeAll(async () => {
    s = await startAuditServer(engine, { auth: { enabled: true, jwt_secret: JWT_SECRET, username: ADMIN.username, password: ADMIN.password, credentials_key: CREDENTIALS_KEY } });
    const login = await s.api.post('/api/auth/login', ADMIN);
    expect(login.status, login.text).toBe(200);
    adminToken = login.body.token;
    admin = s.api.withToken(adminToken);
    adminId = (await admin.get('/api/auth/status')).body.user.id;
  });
  afterAll(async () => {
    await s?.close();
  });

  /** One audited request by the admin and the record it must leave. */
  async function step(request: Promise<ApiResponse>, record: Expected): Promise<any> {
    const res = await request;
    expect(res.status, `${record.action}: ${res.text}`).toBe(record.status);
    const target = record.target === undefined ? (record.topic ?? null) : record.target;
    expected.push({ ...record, topic: record.topic ?? null, target });
    return res.body;
  }

  async function deadLetter(topic: string): Promise<string> {
    const id = (await admin.enqueue(topic, SECRET_PAYLOAD, { key: SECRET_KEY })).body.id;
    expect((await admin.dequeue(topic)).body.messages.map((m: any) => m.id)).toEqual([id]);
    expect((await admin.post(`/api/messages/${id}/nack`, { error: 'broken' })).status).toBe(204);
    return id;
  }

  it('records every administrative change by an admin with actor, action, target, result and details', async () => {
    await step(admin.put('/api/topic-configs/au-orders', { max_retries: 5 }), {
      action: 'topic_config.set',
      topic: 'au-orders',
      status: 200,
      details: { changed: { max_retries: { from: null, to: 5 } } },
    });
    await step(admin.put('/api/topic-configs/au-orders', { max_retries: 7, replayable: true }), {
      action: 'topic_config.set',
      topic: 'au-orders',
      status: 200,
      details: { changed: { max_retries: { from: 5, to: 7 }, replayable: { from: false, to: true } } },
    });
    await step(admin.put('/api/topic-configs/au-orders', { max_retries: -1 }), { action: 'topic_config.set', topic: 'au-orders', status: 400, details: { fields: ['max_retries'] } });
    await step(admin.put('/api/topic-schemas/au-schema', { schema_json: '"string"' }), { action: 'topic_schema.set', topic: 'au-schema', status: 200, details: { version: 1 } });
    await step(admin.delete('/api/topic-schemas/au-schema'), { action: 'topic_schema.delete', topic: 'au-schema', status: 204 });
    await step(admin.post('/api/topics/au-fan/consumer-groups', { consumer_group: 'g1' }), {
      action: 'consumer_group.register',
      topic: 'au-fan',
      status: 201,
      details: { consumer_group: 'g1' },
    });
    await step(admin.delete('/api/topics/au-fan/consumer-groups/g1'), { action: 'consumer_group.unregister', topic: 'au-fan', status: 204, details: { consumer_group: 'g1' } });
    await step(admin.delete('/api/topics/au-fan/consumer-groups/g1'), { action: 'consumer_group.unregister', topic: 'au-fan', status: 404 });

    // Produce and consume are not recorded; delete by key records the topic and the count, never the key.
    expect((await admin.enqueue('au-orders', SECRET_PAYLOAD, { key: SECRET_KEY, metadata: { m: SECRET_PAYLOAD } })).status).toBe(201);
    await step(admin.delete(`/api/topics/au-orders/messages/by-key/${SECRET_KEY}`), { action: 'topic.delete_by_key', topic: 'au-orders', status: 200, details: { deleted: 1 } });
    for (const payload of ['a', 'b']) expect((await admin.enqueue('au-orders', payload)).status).toBe(201);
    await step(admin.post('/api/topics/au-orders/purge', { statuses: ['pending'] }), {
      action: 'topic.purge',
      topic: 'au-orders',
      status: 200,
      details: { statuses: ['pending'], deleted: 2 },
    });

    // Replay and the archive log of a replayable topic.
    const acked = (await admin.enqueue('au-orders', SECRET_PAYLOAD)).body.id;
    expect((await admin.dequeue('au-orders')).body.messages.map((m: any) => m.id)).toEqual([acked]);
    expect((await admin.post(`/api/messages/${acked}/ack`)).status).toBe(204);
    await step(admin.post('/api/topics/au-orders/replay', {}), { action: 'topic.replay', topic: 'au-orders', status: 200, details: { enqueued: 1 } });
    const before = new Date(Date.now() + 60_000).toISOString();
    await step(admin.delete(`/api/topics/au-orders/message-log?before=${before}`), {
      action: 'message_log.delete',
      topic: 'au-orders',
      status: 200,
      details: { before, deleted: 1 },
    });

    // A requeue names the dead-letter topic the message was in.
    const dead = await deadLetter('au-dl');
    await step(admin.post(`/api/messages/${dead}/requeue`), { action: 'message.requeue', topic: 'au-dl.dlq', status: 204, details: { message_id: dead } });
    await step(admin.post(`/api/messages/${MISSING_ID}/requeue`), { action: 'message.requeue', topic: null, status: 404, details: { message_id: MISSING_ID } });

    await step(admin.put('/api/admin/delete-reaper/schedule', { schedule: '0 3 * * *' }), {
      action: 'reaper_schedule.set',
      target: 'delete',
      status: 200,
      details: { schedule: '0 3 * * *' },
    });
    await step(admin.put('/api/admin/delete-reaper/schedule', { schedule: 'not cron' }), { action: 'reaper_schedule.set', target: 'delete', status: 400, details: { schedule: 'not cron' } });
    await step(admin.put('/api/admin/delete-reaper/schedule', { schedule: '' }), { action: 'reaper_schedule.clear', target: 'delete', status: 200, details: { schedule: '' } });
    await step(admin.post('/api/admin/expiry-reaper/run'), { action: 'reaper.run', target: 'expiry', status: 200, details: { expired: 0 } });
    await step(admin.post('/api/admin/delete-reaper/run'), { action: 'reaper.run', target: 'delete', status: 200, details: { deleted: 0 } });
    await step(admin.post('/api/admin/archive-reaper/run'), { action: 'reaper.run', target: 'archive', status: 200, details: { deleted: 0, audit_deleted: 0 } });

    // Users and grants: never a password or its hash.
    const bob = await step(admin.post('/api/users', { username: 'au-bob', password: SECRET_PASSWORD }), { action: 'user.create', target: undefined, status: 201, details: { username: 'au-bob', is_admin: false } });
    expected[expected.length - 1].target = bob.id;
    await step(admin.post('/api/users', { username: 'au-bob', password: SECRET_PASSWORD }), { action: 'user.create', target: null, status: 409, details: { username: 'au-bob' } });
    await step(admin.request('POST', '/api/users', `{"username":"x","password":"${SECRET_PASSWORD}"`), { action: 'user.create', target: null, status: 400 });
    await step(admin.put(`/api/users/${bob.id}`, { password: SECRET_PASSWORD_2 }), { action: 'user.update', target: bob.id, status: 200, details: { username: 'au-bob', changed: ['password'] } });
    await step(admin.put(`/api/users/${bob.id}`, { is_admin: true }), { action: 'user.update', target: bob.id, status: 200, details: { username: 'au-bob', changed: ['is_admin'], is_admin: true } });
    const grant = await step(admin.post(`/api/users/${bob.id}/grants`, { action: 'read', topic_pattern: 'au-*' }), {
      action: 'grant.create',
      target: bob.id,
      status: 201,
      details: { username: 'au-bob', action: 'read', topic_pattern: 'au-*' },
    });
    await step(admin.delete(`/api/users/${bob.id}/grants/${grant.id}`), { action: 'grant.delete', target: bob.id, status: 204, details: { username: 'au-bob', grant_id: grant.id } });
    await step(admin.post(`/api/users/${bob.id}/consumer-group-grants`, { consumer_group: 'g1', topic_pattern: 'au-fan' }), {
      action: 'consume_grant.create',
      target: bob.id,
      status: 201,
      details: { username: 'au-bob', consumer_group: 'g1', topic_pattern: 'au-fan' },
    });
    // Access keys: the key's id, never its secret.
    const key = await step(admin.post(`/api/users/${bob.id}/access-keys`), { action: 'access_key.create', target: bob.id, status: 201, details: { username: 'au-bob' } });
    expected[expected.length - 1].details = { username: 'au-bob', access_key_id: key.access_key_id };
    accessKeySecrets.push(key.secret, `${key.access_key_id}.${key.secret}`);
    expect((await s.api.withToken(`${key.access_key_id}.${key.secret}`).get('/api/users')).status).toBe(200);
    await step(admin.post(`/api/users/${MISSING_ID}/access-keys`), { action: 'access_key.create', target: MISSING_ID, status: 404 });
    await step(admin.delete(`/api/users/${bob.id}/access-keys/${key.access_key_id}`), { action: 'access_key.delete', target: bob.id, status: 204, details: { username: 'au-bob', access_key_id: key.access_key_id } });
    await step(admin.delete(`/api/users/${bob.id}/access-keys/${key.access_key_id}`), { action: 'access_key.delete', target: bob.id, status: 404, details: { access_key_id: key.access_key_id } });
    await step(admin.delete(`/api/users/${bob.id}/access-keys/not-a-key`), { action: 'access_key.delete', target: bob.id, status: 404, details: { username: 'au-bob' } });
    await step(admin.delete(`/api/users/${bob.id}`), { action: 'user.delete', target: bob.id, status: 204, details: { username: 'au-bob' } });
    await step(admin.delete(`/api/users/${MISSING_ID}`), { action: 'user.delete', target: MISSING_ID, status: 404 });
    await step(admin.delete(`/api/users/${adminId}`), { action: 'user.delete', target: adminId, status: 400, details: { username: 'admin' } });

    await step(admin.delete('/api/topic-configs/au-orders'), {
      action: 'topic_config.delete',
      topic: 'au-orders',
      status: 204,
      details: { previous: { max_retries: 7, replayable: true, max_depth: null } },
    });
    await step(admin.post('/api/topics/au-orders/replay', {}), { action: 'topic.replay', topic: 'au-orders', status: 422 });

    const records = (await auditLog(admin, 'actor=admin')).reverse();
    expect(records.map(brief)).toEqual(expected.map((e) => ({ action: e.action, topic: e.topic, target: e.target, result: e.status < 400 ? 'ok' : 'error', status: e.status })));
    records.forEach((record, i) => {
      expect(record.actor).toEqual({ id: adminId, name: 'admin' });
      expect(Date.parse(record.at)).toBeGreaterThan(Date.now() - 600_000);
      if (expected[i].details) expect(record.details, expected[i].action).toMatchObject(expected[i].details!);
    });
    // The time a replay started from and the ids are recorded as given back.
    expect(records.find((r) => r.action === 'topic.replay' && r.result === 'ok').details.replayed_from).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(records.find((r) => r.action === 'grant.create').details.grant_id).toBe(grant.id);
  });

  it('records each refused attempt of a non-admin (403) under that user', async () => {
    user = await createUser({ api: s.api, admin, adminId, now: Date.now } as unknown as AuthServer, ['read:au-*']);
    const dead = await deadLetter('au-dl2');
    const attempts: Array<[string, string, unknown, string, string | null]> = [
      ['PUT', '/api/topic-configs/au-orders', { max_retries: 1 }, 'topic_config.set', 'au-orders'],
      ['DELETE', '/api/topic-configs/au-orders', undefined, 'topic_config.delete', 'au-orders'],
      ['PUT', '/api/topic-schemas/au-orders', { schema_json: '"string"' }, 'topic_schema.set', 'au-orders'],
      ['DELETE', '/api/topic-schemas/au-orders', undefined, 'topic_schema.delete', 'au-orders'],
      ['POST', '/api/topics/au-fan/consumer-groups', { consumer_group: 'g2' }, 'consumer_group.register', 'au-fan'],
      ['DELETE', '/api/topics/au-fan/consumer-groups/g2', undefined, 'consumer_group.unregister', 'au-fan'],
      ['POST', '/api/topics/au-orders/purge', {}, 'topic.purge', 'au-orders'],
      ['DELETE', `/api/topics/au-orders/messages/by-key/${SECRET_KEY}`, undefined, 'topic.delete_by_key', 'au-orders'],
      ['DELETE', `/api/topics/au-orders/message-log?before=${new Date().toISOString()}`, undefined, 'message_log.delete', 'au-orders'],
      ['POST', '/api/topics/au-orders/replay', {}, 'topic.replay', 'au-orders'],
      ['POST', `/api/messages/${dead}/requeue`, undefined, 'message.requeue', 'au-dl2.dlq'],
      ['PUT', '/api/admin/delete-reaper/schedule', { schedule: '0 4 * * *' }, 'reaper_schedule.set', null],
      ['POST', '/api/admin/expiry-reaper/run', undefined, 'reaper.run', null],
      ['POST', '/api/admin/delete-reaper/run', undefined, 'reaper.run', null],
      ['POST', '/api/admin/archive-reaper/run', undefined, 'reaper.run', null],
      ['POST', '/api/users', { username: 'au-eve', password: SECRET_PASSWORD }, 'user.create', null],
      ['PUT', `/api/users/${adminId}`, { password: SECRET_PASSWORD_2 }, 'user.update', null],
      ['DELETE', `/api/users/${adminId}`, undefined, 'user.delete', null],
      ['POST', `/api/users/${user.id}/grants`, { action: 'admin', topic_pattern: '*' }, 'grant.create', null],
      ['DELETE', `/api/users/${user.id}/grants/${MISSING_ID}`, undefined, 'grant.delete', null],
      ['POST', `/api/users/${user.id}/consumer-group-grants`, { consumer_group: 'g', topic_pattern: '*' }, 'consume_grant.create', null],
      ['POST', `/api/users/${user.id}/access-keys`, undefined, 'access_key.create', null],
      ['DELETE', `/api/users/${user.id}/access-keys/CVAKAAAAAAAAAAAAAAAA`, undefined, 'access_key.delete', null],
    ];
    for (const [method, path, body] of attempts) {
      const res = await user.api.request(method, path, body);
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(403);
    }
    // Reading the audit log is admin-only too (and a read is not recorded).
    const read = await user.api.get('/api/audit-log');
    expect(read.status).toBe(403);
    expect(read.body).toEqual({ error: 'admin access required' });

    const records = (await auditLog(admin, `actor=${user.username}`)).reverse();
    expect(records.map((r) => [r.action, r.topic, r.result, r.status])).toEqual(attempts.map(([, , , action, topic]) => [action, topic, 'error', 403]));
    for (const record of records) expect(record.actor).toEqual({ id: user.id, name: user.username });
    expect(records.filter((r) => r.action.startsWith('user.') && r.target !== null).map((r) => r.target)).toEqual([adminId, adminId]);
    expect(records.find((r) => r.action === 'grant.create').target).toBe(user.id);
    expect(records.find((r) => r.action === 'reaper.run').target).toBe('expiry');
  });

  it('pages newest first like the other lists, and filters by topic and actor', async () => {
    const all = await auditLog(admin);
    expect(all.length).toBeGreaterThan(40);
    const ids = all.map((r) => r.id);
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);
    expect(all.map((r) => Date.parse(r.at))).toEqual(all.map((r) => Date.parse(r.at)).sort((a, b) => b - a));

    const first = await admin.get('/api/audit-log?limit=5');
    expect(first.body).toMatchObject({ limit: 5, offset: 0, total: all.length });
    expect(first.body.items.map((r: any) => r.id)).toEqual(ids.slice(0, 5));
    const second = await admin.get('/api/audit-log?limit=5&offset=5');
    expect(second.body.items.map((r: any) => r.id)).toEqual(ids.slice(5, 10));
    const defaults = await admin.get('/api/audit-log');
    expect(defaults.body).toMatchObject({ limit: 50, offset: 0, total: all.length });
    expect(defaults.body.items).toHaveLength(Math.min(50, all.length));
    expect((await admin.get('/api/audit-log?limit=1000')).body.limit).toBe(200);
    expect((await admin.get(`/api/audit-log?offset=${all.length}`)).body.items).toEqual([]);
    for (const [query, error] of [
      ['limit=0', 'limit must be at least 1'],
      ['offset=-1', 'offset must not be negative'],
      ['limit=x', 'limit must be an integer'],
      ['topic=a%20b', 'topic must be 1-200 characters of A-Z a-z 0-9 . _ - and start with a letter or digit'],
      ['topic=a&topic=b', 'topic must be given once, as a string'],
      ['actor=', 'actor must be a name or user id of 1-512 characters'],
    ]) {
      const res = await admin.get(`/api/audit-log?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body).toEqual({ error });
    }

    const orders = await auditLog(admin, 'topic=au-orders');
    expect(orders.length).toBeGreaterThan(5);
    expect(orders.every((r) => r.topic === 'au-orders')).toBe(true);
    expect(orders).toEqual(all.filter((r) => r.topic === 'au-orders'));
    const byName = await auditLog(admin, `actor=${user.username}`);
    expect(byName).toEqual(all.filter((r) => r.actor.name === user.username));
    expect(await auditLog(admin, `actor=${user.id}`)).toEqual(byName);
    // Names are exact on both engines: MySQL's collation would otherwise find the user for a padded name.
    expect(await auditLog(admin, `actor=${encodeURIComponent(`${user.username}  `)}`)).toEqual([]);
    const both = await auditLog(admin, `actor=${user.username}&topic=au-orders`);
    expect(both.length).toBeGreaterThan(0);
    expect(both).toEqual(all.filter((r) => r.actor.name === user.username && r.topic === 'au-orders'));
  });

  it('writes one audit log line per record, and no payload, key, password, hash or token anywhere', async () => {
    const all = await auditLog(admin);
    const lines = s.logs.filter((l) => l.msg === 'audit');
    expect(lines).toHaveLength(all.length);
    for (const [line, record] of lines.reverse().map((l, i) => [l, all[i]] as const)) {
      expect(line).toMatchObject({ level: 'info', actor: record.actor.name, action: record.action, target: record.target, result: record.result, status: record.status });
    }
    const userToken = user.token;
    const secrets = [SECRET_PAYLOAD, SECRET_KEY, SECRET_PASSWORD, SECRET_PASSWORD_2, ADMIN.password, adminToken, userToken, '$argon2', ...accessKeySecrets];
    expect(accessKeySecrets).toHaveLength(2);
    const stored = JSON.stringify(await s.server.db('audit_log').select('*'));
    const logged = JSON.stringify(s.logs);
    for (const secret of secrets) {
      expect(stored.includes(secret), `audit_log holds ${secret.slice(0, 12)}…`).toBe(false);
      expect(logged.includes(secret), `the log holds ${secret.slice(0, 12)}…`).toBe(false);
    }
  });
});

describeEachEngine('audit log (auth off, with the controller)', (engine) => {
  let s: AuditServer;
  let kube: FakeKube;
  let controller: TestController;

  beforeAll(async () => {
    kube = await startFakeKube();
    s = await startAuditServer(engine);
    controller = await startTestController(kube, s.database.url);
    const crds = await kube.kubectl(['apply', '-f', 'crds/']);
    expect(crds.code, crds.stderr).toBe(0);
  });
  afterAll(async () => {
    await controller?.close();
    await s?.close();
    await kube?.close();
  });

  it('records the controller as the resource, anonymous callers as anonymous, and a managed-row 409', async () => {
    const manifest = 'apiVersion: conveyor.dev/v1alpha1\nkind: TopicConfig\nmetadata: {name: au-managed, namespace: team-au}\nspec: {maxRetries: 4}\n';
    const applied = await kube.kubectl(['apply', '-f', '-'], { input: manifest });
    expect(applied.code, applied.stderr).toBe(0);
    await waitForReady(kube, { plural: 'topicconfigs', namespace: 'team-au', name: 'au-managed' });
    const byController = await auditLog(s.api, `actor=${encodeURIComponent('TopicConfig team-au/au-managed')}`);
    expect(byController.map(brief)).toEqual([{ action: 'topic_config.set', topic: 'au-managed', target: 'au-managed', result: 'ok', status: null }]);
    expect(byController[0].actor).toEqual({ id: null, name: 'TopicConfig team-au/au-managed' });
    expect(byController[0].details).toEqual({ changed: { max_retries: { from: null, to: 4 } } });

    // Kubernetes wins: the refused HTTP change is recorded with its 409.
    await expect.poll(async () => (await s.api.get('/api/topic-configs/au-managed')).status).toBe(200);
    const refused = await s.api.put('/api/topic-configs/au-managed', { max_retries: 1 });
    expect(refused.status).toBe(409);
    expect((await s.api.put('/api/topic-configs/au-free', { max_depth: 10 })).status).toBe(200);
    const anonymous = await auditLog(s.api, 'actor=anonymous');
    expect(anonymous.map(brief)).toEqual([
      { action: 'topic_config.set', topic: 'au-free', target: 'au-free', result: 'ok', status: 200 },
      { action: 'topic_config.set', topic: 'au-managed', target: 'au-managed', result: 'error', status: 409 },
    ]);
    expect(anonymous[0].actor).toEqual({ id: null, name: 'anonymous' });
    expect(anonymous[1].details).toEqual({ fields: ['max_retries'] });

    // A resync that finds the row as the spec says writes nothing, so records nothing.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(await auditLog(s.api, `actor=${encodeURIComponent('TopicConfig team-au/au-managed')}`)).toHaveLength(1);

    const deleted = await kube.kubectl(['delete', 'topicconfig', 'au-managed', '-n', 'team-au']);
    expect(deleted.code, deleted.stderr).toBe(0);
    await expect
      .poll(async () => (await auditLog(s.api, 'topic=au-managed')).map((r) => [r.actor.name, r.action, r.result]), { timeout: 10_000 })
      .toEqual([
        ['TopicConfig team-au/au-managed', 'topic_config.delete', 'ok'],
        ['anonymous', 'topic_config.set', 'error'],
        ['TopicConfig team-au/au-managed', 'topic_config.set', 'ok'],
      ]);
    expect(s.logs.filter((l) => l.msg === 'audit').map((l) => [l.actor, l.action, l.result])).toEqual([
      ['anonymous', 'topic_config.set', 'error'],
      ['anonymous', 'topic_config.set', 'ok'],
    ]);
  });
});

describeEachEngine('audit log retention (archive reaper)', (engine) => {
  it('trims records older than audit.retention_days and reports how many', async () => {
    const clock = manualClock();
    const s = await startAuditServer(engine, { audit: { retention_days: 90 } }, clock.now);
    try {
      expect((await s.api.put('/api/topic-configs/au-old', { max_retries: 1 })).status).toBe(200);
      clock.advance(89 * DAY_MS);
      expect((await s.api.put('/api/topic-configs/au-recent', { max_retries: 1 })).status).toBe(200);
      clock.advance(2 * DAY_MS);
      const run = await s.api.post('/api/admin/archive-reaper/run');
      expect(run.body).toEqual({ deleted: 0, audit_deleted: 1 });
      const left = await auditLog(s.api);
      expect(left.map((r) => [r.action, r.target])).toEqual([
        ['reaper.run', 'archive'],
        ['topic_config.set', 'au-recent'],
      ]);
      expect(left[0].details).toEqual({ deleted: 0, audit_deleted: 1 });
      expect(Date.parse(left[0].at)).toBe(clock.now());
      expect((await s.api.post('/api/admin/archive-reaper/run')).body).toEqual({ deleted: 0, audit_deleted: 0 });
    } finally {
      await s.close();
    }
  });

  it('keeps every record with audit.retention_days 0', async () => {
    const clock = manualClock();
    const s = await startAuditServer(engine, { audit: { retention_days: 0 } }, clock.now);
    try {
      expect((await s.api.put('/api/topic-configs/au-kept', { max_retries: 1 })).status).toBe(200);
      clock.advance(3650 * DAY_MS);
      expect((await s.api.post('/api/admin/archive-reaper/run')).body).toEqual({ deleted: 0, audit_deleted: 0 });
      expect((await auditLog(s.api, 'topic=au-kept')).map((r) => r.action)).toEqual(['topic_config.set']);
    } finally {
      await s.close();
    }
  });
});
