import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../src/config/load.js';
import { expectErrorBody } from './helpers/assert-error.js';
import { ADMIN, createUser, JWT_SECRET, startAuthServer, type AuthServer, type TestUser } from './helpers/auth.js';
import { describeEachEngine, engineByName, type TestDatabase } from './helpers/engines.js';
import { expectGrpcError, QueueClient } from './helpers/grpc.js';
import { MISSING_ID } from './helpers/messages.js';
import { manualClock, type TestClock } from './helpers/server.js';

/**
 * Access keys (docs/auth.md, Access keys): an admin creates one for a user (the secret shown once), lists
 * and revokes them; `Bearer <access_key_id>.<secret>` acts as the user on HTTP and gRPC. Secrets are stored
 * encrypted; a revocation holds at once on every instance; failures count against the client like logins.
 */

const CREDENTIALS_KEY = randomBytes(32).toString('base64');
const INVALID = { error: 'invalid or expired token' };
const bearer = (key: { access_key_id: string; secret: string }) => `${key.access_key_id}.${key.secret}`;

describeEachEngine('access keys', (engine) => {
  let clock: TestClock;
  let server: AuthServer;
  let second: AuthServer | undefined;
  let producer: TestUser;
  const clients: QueueClient[] = [];
  const grpcAs = (token: string, port = server.server.grpcPort) => {
    const client = new QueueClient(port, token);
    clients.push(client);
    return client;
  };
  const createKey = async (userId: string) => {
    const res = await server.admin.post(`/api/users/${userId}/access-keys`);
    expect(res.status, res.text).toBe(201);
    return res.body as { access_key_id: string; secret: string; created_at: string };
  };

  beforeAll(async () => {
    clock = manualClock();
    server = await startAuthServer(engine, { now: clock.now, overrides: { auth: { credentials_key: CREDENTIALS_KEY } } });
    producer = await createUser(server, ['write:orders*', 'read:orders*']);
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await second?.close();
    await server?.close();
  });

  it('creates a key (201, the secret shown once) that acts as its user over HTTP and gRPC', async () => {
    const key = await createKey(producer.id);
    expect(Object.keys(key).sort()).toEqual(['access_key_id', 'created_at', 'secret']);
    expect(key.access_key_id).toMatch(/^CVAK[A-Z2-7]{16}$/);
    expect(key.secret).toMatch(/^[A-Za-z0-9_-]{40}$/);
    expect(Date.parse(key.created_at)).toBe(clock.now());

    const api = server.api.withToken(bearer(key));
    expect((await api.get('/api/auth/status')).body.user).toEqual({ id: producer.id, username: producer.username, is_admin: false });
    expect((await api.enqueue('orders', 'with a key')).status).toBe(201);
    expect((await api.get('/api/messages?topic=orders')).body.items.map((m: any) => m.payload)).toContain('with a key');
    expectErrorBody(await api.enqueue('payments', 'x'), 403);
    expect((await api.get('/api/users')).body).toEqual({ error: 'admin access required' });

    const grpc = grpcAs(bearer(key));
    expect((await grpc.call('Enqueue', { topic: 'orders', payload: Buffer.from('over grpc') })).id).toBeDefined();
    expect((await grpc.call('BatchDequeue', { topic: 'orders', count: 10 })).messages.length).toBeGreaterThan(0);
    await expectGrpcError(grpc.call('Enqueue', { topic: 'payments', payload: Buffer.from('x') }), status.PERMISSION_DENIED);

    // A key is used as it is: it is not turned into a token that would outlive its revocation.
    const refresh = await api.post('/api/auth/refresh');
    expectErrorBody(refresh, 422);
  });

  it('lists keys with last_used_at and never a secret; no answer but the creation holds one', async () => {
    const key = await createKey(producer.id);
    const listed = await server.admin.get(`/api/users/${producer.id}/access-keys`);
    expect(listed.status).toBe(200);
    const item = listed.body.items.find((k: any) => k.access_key_id === key.access_key_id);
    expect(item).toEqual({ access_key_id: key.access_key_id, user_id: producer.id, created_at: key.created_at, last_used_at: null });

    clock.advance(1000);
    expect((await server.api.withToken(bearer(key)).get('/api/messages?topic=orders')).status).toBe(200);
    // The use is recorded in the background.
    await expect.poll(async () => (await server.admin.get(`/api/users/${producer.id}/access-keys`)).body.items.find((k: any) => k.access_key_id === key.access_key_id).last_used_at).toBe(new Date(clock.now()).toISOString());

    const answers = [
      listed.text,
      (await server.admin.get(`/api/users/${producer.id}/access-keys`)).text,
      (await server.admin.get('/api/users')).text,
      (await server.admin.get(`/api/users/${producer.id}/grants`)).text,
      (await server.admin.get('/api/audit-log?limit=200')).text,
    ];
    for (const text of answers) expect(text).not.toContain(key.secret);
  });

  it('stores no plaintext secret: the row holds a ciphertext under a key id', async () => {
    const key = await createKey(producer.id);
    const rows = await server.db('access_keys').select('*');
    const row = rows.find((r: any) => r.id === key.access_key_id);
    expect(Object.keys(row).sort()).toEqual(['created_at', 'id', 'key_id', 'last_used_at', 'secret_ciphertext', 'user_id']);
    const stored = JSON.stringify(rows);
    for (const form of [key.secret, Buffer.from(key.secret).toString('base64'), Buffer.from(key.secret).toString('hex'), bearer(key)]) expect(stored).not.toContain(form);
    // AES-256-GCM: 12 bytes of IV, 16 of tag and the 40 bytes of the secret.
    expect(Buffer.from(row.secret_ciphertext, 'base64')).toHaveLength(12 + 16 + 40);
    expect(row.key_id).toMatch(/^[0-9a-f]{16}$/);
    expect(Buffer.from(row.secret_ciphertext, 'base64').toString('latin1')).not.toContain(key.secret);
  });

  it('revokes a key: 401 from the next request on, on this instance and on another sharing the database', async () => {
    const database = (server as unknown as { database: TestDatabase }).database;
    second = await startAuthServer(engine, { now: clock.now, database, overrides: { auth: { credentials_key: CREDENTIALS_KEY } } });
    const key = await createKey(producer.id);
    const here = server.api.withToken(bearer(key));
    const there = second.api.withToken(bearer(key));
    const grpcThere = grpcAs(bearer(key), second.server.grpcPort);
    expect((await here.enqueue('orders', 'a')).status).toBe(201);
    expect((await there.enqueue('orders', 'b')).status).toBe(201);
    expect((await grpcThere.call('Enqueue', { topic: 'orders', payload: Buffer.from('c') })).id).toBeDefined();

    expect((await server.admin.delete(`/api/users/${producer.id}/access-keys/${key.access_key_id}`)).status).toBe(204);
    for (const api of [here, there]) {
      const res = await api.enqueue('orders', 'after revocation');
      expectErrorBody(res, 401);
      expect(res.body).toEqual(INVALID);
    }
    await expectGrpcError(grpcThere.call('Enqueue', { topic: 'orders', payload: Buffer.from('d') }), status.UNAUTHENTICATED, /^invalid or expired token$/);
    expect((await server.admin.get(`/api/users/${producer.id}/access-keys`)).body.items.map((k: any) => k.access_key_id)).not.toContain(key.access_key_id);
    expectErrorBody(await server.admin.delete(`/api/users/${producer.id}/access-keys/${key.access_key_id}`), 404);
  });

  it('a wrong secret, an unknown or malformed key get the same 401 as any bad token', async () => {
    const key = await createKey(producer.id);
    const wrong = `${key.access_key_id}.${'A'.repeat(40)}`;
    const tokens = [wrong, `CVAKAAAAAAAAAAAAAAAA.${key.secret}`, `${key.access_key_id}.${key.secret}x`, key.access_key_id, `${key.access_key_id}.`, 'CVAK', 'not-a-token'];
    for (const token of tokens) {
      const res = await server.api.withToken(token).get('/api/messages?topic=orders');
      expectErrorBody(res, 401);
      expect(res.body, token).toEqual(INVALID);
    }
    await expectGrpcError(grpcAs(wrong).call('Enqueue', { topic: 'orders', payload: Buffer.from('x') }), status.UNAUTHENTICATED, /^invalid or expired token$/);
    // Seven failures from this client so far (gRPC counts under its own peer address): the window frees them.
    clock.advance(61_000);
  });

  it('answers 404 for an unknown user or key, 400 for a body, 409 beyond ten keys', async () => {
    expectErrorBody(await server.admin.post(`/api/users/${MISSING_ID}/access-keys`), 404);
    expectErrorBody(await server.admin.get(`/api/users/${MISSING_ID}/access-keys`), 404);
    expectErrorBody(await server.admin.delete(`/api/users/${MISSING_ID}/access-keys/CVAKAAAAAAAAAAAAAAAA`), 404);
    expectErrorBody(await server.admin.delete(`/api/users/${producer.id}/access-keys/CVAKAAAAAAAAAAAAAAAA`), 404);
    expectErrorBody(await server.admin.delete(`/api/users/${producer.id}/access-keys/not-a-key`), 404);
    expectErrorBody(await server.admin.post(`/api/users/${producer.id}/access-keys`, { name: 'x' }), 400);
    // Another user's key is not found under this user.
    const other = await createUser(server);
    const theirs = await createKey(other.id);
    expectErrorBody(await server.admin.delete(`/api/users/${producer.id}/access-keys/${theirs.access_key_id}`), 404);
    for (let i = 1; i < 10; i++) await createKey(other.id);
    const eleventh = await server.admin.post(`/api/users/${other.id}/access-keys`);
    expectErrorBody(eleventh, 409);
    expect(eleventh.body.error).toBe('a user holds at most 10 access keys; revoke one first');
    // A non-admin may not manage keys, not even its own.
    expectErrorBody(await producer.api.post(`/api/users/${producer.id}/access-keys`), 403);
    expectErrorBody(await producer.api.get(`/api/users/${producer.id}/access-keys`), 403);
  });

  it("a deleted user's keys go with it", async () => {
    const doomed = await createUser(server, ['write:orders']);
    const key = await createKey(doomed.id);
    expect((await server.api.withToken(bearer(key)).enqueue('orders', 'x')).status).toBe(201);
    expect((await server.admin.delete(`/api/users/${doomed.id}`)).status).toBe(204);
    expectErrorBody(await server.api.withToken(bearer(key)).enqueue('orders', 'x'), 401);
    expect(await server.db('access_keys').where({ user_id: doomed.id }).select('id')).toEqual([]);
  });

  it('counts failed keys against the client like logins: ten 401s, then 429 for every key until a slot frees', async () => {
    clock.advance(61_000);
    const key = await createKey(producer.id);
    const wrong = server.api.withToken(`${key.access_key_id}.${'B'.repeat(40)}`);
    const right = server.api.withToken(bearer(key));
    for (let i = 0; i < 10; i++) expectErrorBody(await wrong.get('/api/messages?topic=orders'), 401);
    const limited = await wrong.get('/api/messages?topic=orders');
    expectErrorBody(limited, 429);
    expect(limited.body).toEqual({ error: 'too many failed access key attempts' });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Even the right key: a guesser learns nothing from a key that would have worked.
    expectErrorBody(await right.get('/api/messages?topic=orders'), 429);
    // Tokens from a login are not affected.
    expect((await producer.api.get('/api/messages?topic=orders')).status).toBe(200);
    clock.advance(61_000);
    expect((await right.get('/api/messages?topic=orders')).status).toBe(200);
  });
});

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const redisUp = await new Promise<boolean>((resolve) => {
  const { hostname, port } = new URL(REDIS_URL);
  const socket = connect({ host: hostname, port: Number(port || 6379), timeout: 1000 });
  socket.once('connect', () => (socket.destroy(), resolve(true)));
  socket.once('error', () => resolve(false));
  socket.once('timeout', () => (socket.destroy(), resolve(false)));
});

// In CI Redis is there: an unreachable one fails the suite instead of skipping it.
(redisUp || process.env.CI === 'true' ? describe : describe.skip)('failed access keys with redis.url', () => {
  it('are counted across instances', async () => {
    const clock = manualClock();
    const redis = { url: REDIS_URL, key_prefix: `conveyor-test-${randomBytes(6).toString('hex')}:` };
    const a = await startAuthServer(engineByName.sqlite, { now: clock.now, overrides: { redis, auth: { credentials_key: CREDENTIALS_KEY } } });
    const database = (a as unknown as { database: TestDatabase }).database;
    const b = await startAuthServer(engineByName.sqlite, { now: clock.now, database, overrides: { redis, auth: { credentials_key: CREDENTIALS_KEY } } });
    try {
      const user = await createUser(a);
      const key = (await a.admin.post(`/api/users/${user.id}/access-keys`)).body;
      const wrong = `${key.access_key_id}.${'C'.repeat(40)}`;
      for (const server of [a, b, a, b, a, b, a, b, a, b]) expectErrorBody(await server.api.withToken(wrong).get('/api/messages'), 401);
      expectErrorBody(await a.api.withToken(wrong).get('/api/messages'), 429);
      expectErrorBody(await b.api.withToken(wrong).get('/api/messages'), 429);
    } finally {
      await b.close();
      await a.close();
    }
  });
});

describe('access keys without auth.credentials_key', () => {
  let server: AuthServer;
  beforeAll(async () => {
    server = await startAuthServer(engineByName.sqlite);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('are off: their endpoints answer 503 saying so, and a key gets 401', async () => {
    const user = await createUser(server);
    for (const res of [
      await server.admin.post(`/api/users/${user.id}/access-keys`),
      await server.admin.get(`/api/users/${user.id}/access-keys`),
      await server.admin.delete(`/api/users/${user.id}/access-keys/CVAKAAAAAAAAAAAAAAAA`),
    ]) {
      expectErrorBody(res, 503);
      expect(res.body).toEqual({ error: 'access keys are off: auth.credentials_key is not set' });
    }
    expectErrorBody(await user.api.post(`/api/users/${user.id}/access-keys`), 403);
    const res = await server.api.withToken(`CVAKAAAAAAAAAAAAAAAA.${'A'.repeat(40)}`).get('/api/messages');
    expect(res.body).toEqual(INVALID);
  });

  it('refuses a credentials key that is not 32 bytes in base64, without quoting it', () => {
    const base = { enabled: true, jwt_secret: JWT_SECRET, username: ADMIN.username };
    const short = randomBytes(16).toString('base64');
    expect(() => validateConfig({ auth: { ...base, credentials_key: short } })).toThrow(/^invalid configuration: auth\.credentials_key: must be 32 bytes in base64/);
    try {
      validateConfig({ auth: { ...base, credentials_key: short } });
    } catch (err) {
      expect((err as Error).message).not.toContain(short);
    }
    expect(() => validateConfig({ auth: { ...base, credentials_key: 'not base64 at all!' } })).toThrow(/auth\.credentials_key/);
    expect(() => validateConfig({ auth: { ...base, previous_credentials_key: CREDENTIALS_KEY } })).toThrow(/auth\.previous_credentials_key: needs auth\.credentials_key/);
    expect(validateConfig({ auth: { ...base, credentials_key: CREDENTIALS_KEY } }).auth.credentials_key).toBe(CREDENTIALS_KEY);
  });
});
