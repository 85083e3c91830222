import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../src/config/load.js';
import { KEYS_REFRESH_COOLDOWN_MS } from '../src/auth/issuer-keys.js';
import { isClusterApiServer, requestOptions } from '../src/auth/issuer-fetch.js';
import { expectErrorBody } from './helpers/assert-error.js';
import { JWT_SECRET, signToken, startAuthServer, type AuthServer } from './helpers/auth.js';
import { describeEachEngine, engineByName } from './helpers/engines.js';
import { expectGrpcError, QueueClient } from './helpers/grpc.js';
import { TestIssuer } from './helpers/kube-issuer.js';
import { manualClock, type TestClock } from './helpers/server.js';

/**
 * Kubernetes ServiceAccount tokens (docs/auth.md, Kubernetes service accounts): a projected token, verified
 * against the cluster issuer's keys, acts as the principal `system:serviceaccount:<ns>:<name>`, made on its
 * first request and granted like any user; every bad token gets the same 401 as any other bad token.
 */

const WORKER = 'system:serviceaccount:team-a:worker';
const CREDENTIALS_KEY = randomBytes(32).toString('base64');
const INVALID = { error: 'invalid or expired token' };

const kubernetesAuth = (issuer: TestIssuer, extra: Record<string, unknown> = {}) => ({
  auth: { kubernetes_enabled: true, kubernetes_issuer: issuer.url, credentials_key: CREDENTIALS_KEY, ...extra },
});

describeEachEngine('Kubernetes ServiceAccount tokens', (engine) => {
  let clock: TestClock;
  let issuer: TestIssuer;
  let otherIssuer: TestIssuer;
  let server: AuthServer;
  const clients: QueueClient[] = [];
  const grpcAs = (token: string) => {
    const client = new QueueClient(server.server.grpcPort, token);
    clients.push(client);
    return client;
  };
  const httpAs = (token: string) => server.api.withToken(token);
  const principalId = async (username: string) => (await server.admin.get('/api/users')).body.items.find((u: any) => u.username === username)?.id as string | undefined;

  beforeAll(async () => {
    clock = manualClock();
    issuer = await TestIssuer.start({ now: clock.now });
    otherIssuer = await TestIssuer.start({ now: clock.now, alg: 'ES256' });
    server = await startAuthServer(engine, { now: clock.now, overrides: kubernetesAuth(issuer) });
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await server?.close();
    await issuer?.close();
    await otherIssuer?.close();
  });

  it('accepts a projected token over HTTP: its principal is made on first use, listed as a service account, and may do what its grants allow', async () => {
    const worker = httpAs(await issuer.token());
    const me = await worker.get('/api/auth/status');
    expect(me.status, me.text).toBe(200);
    expect(me.body.user).toMatchObject({ username: WORKER, is_admin: false });
    // No grant yet: a valid token, refused by the grant check.
    expectErrorBody(await worker.enqueue('orders', 'x'), 403);

    const listed = (await server.admin.get('/api/users')).body.items.filter((u: any) => u.username === WORKER);
    expect(listed).toEqual([{ id: me.body.user.id, username: WORKER, is_admin: false, service_account: true, created_at: expect.any(String), updated_at: expect.any(String) }]);
    expect((await server.admin.get('/api/users')).body.items.find((u: any) => u.username === 'admin').service_account).toBe(false);

    // The existing grant endpoints manage its grants.
    expect((await server.admin.post(`/api/users/${me.body.user.id}/grants`, { action: 'write', topic_pattern: 'orders.*' })).status).toBe(201);
    expect((await worker.enqueue('orders', 'from a pod')).status).toBe(201);
    expectErrorBody(await worker.enqueue('payments', 'x'), 403);
    expect((await worker.get('/api/users')).body).toEqual({ error: 'admin access required' });

    // Another pod of the same account (another token) is the same principal: still one user.
    const sibling = httpAs(await issuer.token());
    expect((await sibling.get('/api/auth/status')).body.user.id).toBe(me.body.user.id);
    expect((await server.admin.get('/api/users')).body.items.filter((u: any) => u.username === WORKER)).toHaveLength(1);
  });

  it('accepts the token in gRPC metadata, with the same grants', async () => {
    const id = await principalId(WORKER);
    expect(id).toBeDefined();
    const grpc = grpcAs(await issuer.token());
    const enqueued = await grpc.call('Enqueue', { topic: 'orders', payload: Buffer.from('over grpc') });
    expect(enqueued.id).toMatch(/^[0-9a-f-]{36}$/);
    const dequeued = await grpc.call('Dequeue', { topic: 'orders' });
    expect(dequeued.id).toBeDefined();
    await expectGrpcError(grpc.call('Enqueue', { topic: 'payments', payload: Buffer.from('x') }), status.PERMISSION_DENIED);
  });

  it('refuses a wrong audience, an expired token, another issuer, an unknown key, a forged or mismatched token with the same 401 as any bad token, over HTTP and gRPC', async () => {
    clock.advance(KEYS_REFRESH_COOLDOWN_MS + 1000);
    const now = Math.floor(clock.now() / 1000);
    const unpublished = await issuer.unpublishedKey();
    const [header, payload] = (await issuer.token()).split('.');
    const bad: Record<string, string> = {
      'another audience': await issuer.token({ audience: 'vault' }),
      'expired (beyond the 60 s leeway)': await issuer.token({ issuedAt: now - 600 - 62, expiresInSeconds: 600 }),
      'not yet valid': await issuer.token({ issuedAt: now + 3600 }),
      'another issuer, signing with its own keys': await otherIssuer.token(),
      'another issuer named, our key': await issuer.token({ issuer: otherIssuer.url }),
      'a key the issuer never published (after reading the keys again)': await issuer.token({ key: unpublished }),
      'kubernetes.io claims of another account': await issuer.token({ kubernetesClaims: { namespace: 'team-b', serviceaccount: { name: 'worker', uid: 'x' } } }),
      'a subject that is no service account': await issuer.token({ subject: 'admin' }),
      'an unsigned token (alg none)': `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${payload}.`,
      'a signature cut off': `${header}.${payload}.`,
      'HS256 with the service secret, for the account': await signToken({ uid: (await principalId(WORKER))!, sub: WORKER }, { issuedAt: clock.now() }),
      garbage: 'not-a-token',
    };
    const fetchesBefore = issuer.jwksFetches;
    for (const [what, token] of Object.entries(bad)) {
      const res = await httpAs(token).get('/api/auth/status');
      expect(res.body.user, what).toBeUndefined();
      const enqueue = await httpAs(token).enqueue('orders', 'x');
      expectErrorBody(enqueue, 401);
      expect(enqueue.body, what).toEqual(INVALID);
      await expectGrpcError(grpcAs(token).call('Enqueue', { topic: 'orders', payload: Buffer.from('x') }), status.UNAUTHENTICATED, /^invalid or expired token$/);
    }
    // The unknown key made the keys be read again, once: the cooldown keeps a stream of made-up kids from asking every time.
    expect(issuer.jwksFetches - fetchesBefore).toBe(1);
    const again = await issuer.token({ key: await issuer.unpublishedKey() });
    expectErrorBody(await httpAs(again).enqueue('orders', 'x'), 401);
    expect(issuer.jwksFetches - fetchesBefore).toBe(1);
  });

  it('picks up a rotation of the issuer key without a restart', async () => {
    clock.advance(KEYS_REFRESH_COOLDOWN_MS + 1000);
    const beforeRotation = await issuer.token({ name: 'rotator' });
    expect((await httpAs(beforeRotation).get('/api/auth/status')).body.user.username).toBe('system:serviceaccount:team-a:rotator');

    // The API server restarts with a new signing key: its tokens name a kid not read yet.
    const fetches = issuer.jwksFetches;
    const withdrawn = issuer.currentKey;
    await issuer.rotate();
    clock.advance(KEYS_REFRESH_COOLDOWN_MS + 1000);
    const afterRotation = await issuer.token({ name: 'rotator' });
    expect((await httpAs(afterRotation).get('/api/auth/status')).body.user.username).toBe('system:serviceaccount:team-a:rotator');
    expect(issuer.jwksFetches).toBe(fetches + 1);
    const grpcId = await grpcAs(await issuer.token()).call('Enqueue', { topic: 'orders', payload: Buffer.from('after rotation') });
    expect(grpcId.id).toBeDefined();
    // A token under the withdrawn key that was not seen before is refused now that the keys were read again.
    expectErrorBody(await httpAs(await issuer.token({ name: 'rotator', key: withdrawn })).get('/api/messages?topic=orders'), 401);

    // And the keys are read again after 5 minutes whatever the tokens name (a withdrawn key stops verifying).
    clock.advance(5 * 60_000);
    await httpAs(await issuer.token({ name: 'rotator' })).get('/api/auth/status');
    expect(issuer.jwksFetches).toBe(fetches + 2);
  });

  it('a service account is never an admin, has no password, keeps its name, cannot log in or refresh, and holds no access key', async () => {
    const token = await issuer.token({ name: 'locked' });
    const id = (await httpAs(token).get('/api/auth/status')).body.user.id;
    expect((await server.admin.put(`/api/users/${id}`, { is_admin: true })).body).toEqual({ error: 'a service account is never an admin: grant it what it needs' });
    expectErrorBody(await server.admin.put(`/api/users/${id}`, { password: 'a-long-enough-password' }), 400);
    expectErrorBody(await server.admin.put(`/api/users/${id}`, { username: 'renamed' }), 400);
    expect((await server.admin.put(`/api/users/${id}`, { is_admin: false })).status).toBe(200);
    const login = await server.api.post('/api/auth/login', { username: 'system:serviceaccount:team-a:locked', password: '' });
    expectErrorBody(login, 400);
    const guess = await server.api.post('/api/auth/login', { username: 'system:serviceaccount:team-a:locked', password: 'anything-at-all' });
    expect(guess.status).toBe(401);
    expect(guess.body).toEqual({ error: 'invalid username or password' });
    const refresh = await httpAs(token).post('/api/auth/refresh');
    expectErrorBody(refresh, 422);
    expect(refresh.body.error).toMatch(/only a token from a login is refreshed/);
    expectErrorBody(await server.admin.post(`/api/users/${id}/access-keys`), 400);
    // Names of service accounts are reserved: no password user may take one.
    const taken = await server.admin.post('/api/users', { username: 'system:serviceaccount:team-a:someone', password: 'a-long-enough-password' });
    expectErrorBody(taken, 400);
    expect(taken.body.error).toMatch(/reserved for Kubernetes service accounts/);
  });

  it('deleting the principal drops its grants; its next request makes it again, without them', async () => {
    const token = await issuer.token({ name: 'reset' });
    const first = (await httpAs(token).get('/api/auth/status')).body.user.id;
    expect((await server.admin.post(`/api/users/${first}/grants`, { action: 'write', topic_pattern: 'orders' })).status).toBe(201);
    expect((await httpAs(token).enqueue('orders', 'x')).status).toBe(201);
    expect((await server.admin.delete(`/api/users/${first}`)).status).toBe(204);
    expectErrorBody(await httpAs(token).enqueue('orders', 'x'), 403);
    const second = (await httpAs(token).get('/api/auth/status')).body.user.id;
    expect(second).not.toBe(first);
    expect((await server.admin.get(`/api/users/${second}/grants`)).body.items).toEqual([]);
  });
});

describe('Kubernetes ServiceAccount tokens: configuration', () => {
  it('reads the keys from auth.kubernetes_jwks_url without discovery, and accepts ES256', async () => {
    const issuer = await TestIssuer.start({ alg: 'ES256' });
    issuer.discovery = false;
    const server = await startAuthServer(engineByName.sqlite, { overrides: kubernetesAuth(issuer, { kubernetes_jwks_url: `${issuer.url}/openid/v1/jwks`, kubernetes_audience: 'queue' }) });
    try {
      const res = await server.api.withToken(await issuer.token({ audience: ['queue', 'other'] })).get('/api/auth/status');
      expect(res.body.user?.username, res.text).toBe(WORKER);
      expect(issuer.discoveryFetches).toBe(0);
      expect((await server.api.withToken(await issuer.token()).get('/api/messages')).status).toBe(401);
    } finally {
      await server.close();
      await issuer.close();
    }
  });

  it('answers 401, not 500, while the issuer cannot be reached', async () => {
    const issuer = await TestIssuer.start();
    const token = await issuer.token();
    await issuer.close();
    const server = await startAuthServer(engineByName.sqlite, { overrides: kubernetesAuth(issuer) });
    try {
      const res = await server.api.withToken(token).get('/api/messages');
      expectErrorBody(res, 401);
      expect(res.body).toEqual(INVALID);
    } finally {
      await server.close();
    }
  });

  it('needs auth on and an issuer URL', () => {
    const base = { enabled: true, jwt_secret: JWT_SECRET, kubernetes_enabled: true };
    expect(() => validateConfig({ auth: { ...base, kubernetes_issuer: '' } })).toThrow(/auth\.kubernetes_issuer: expected the issuer URL/);
    expect(() => validateConfig({ auth: { kubernetes_enabled: true, kubernetes_issuer: 'https://kubernetes.default.svc' } })).toThrow(/auth\.kubernetes_enabled: needs auth\.enabled: true/);
    expect(() => validateConfig({ auth: { ...base, kubernetes_issuer: 'https://k', kubernetes_jwks_url: 'ftp://x' } })).toThrow(/auth\.kubernetes_jwks_url/);
    expect(() => validateConfig({ auth: { ...base, kubernetes_issuer: 'https://k', kubernetes_audience: ' ' } })).toThrow(/auth\.kubernetes_audience/);
    const config = validateConfig({ auth: { ...base, kubernetes_issuer: 'https://kubernetes.default.svc.cluster.local' } });
    expect(config.auth.kubernetes_audience).toBe('conveyor');
  });

  it("sends the pod's own token to the cluster's API server only, and trusts the cluster CA", () => {
    const dir = mkdtempSync(join(tmpdir(), 'conveyor-sa-'));
    const files = { token: join(dir, 'token'), ca: join(dir, 'ca.crt') };
    writeFileSync(files.token, 'pod-token\n');
    writeFileSync(files.ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1' };
    for (const url of ['https://kubernetes.default.svc.cluster.local/.well-known/openid-configuration', 'https://kubernetes.default.svc/openid/v1/jwks', 'https://10.96.0.1:443/x']) {
      expect(isClusterApiServer(new URL(url), env), url).toBe(true);
    }
    for (const url of ['https://oidc.eks.eu-west-1.amazonaws.com/id/ABC', 'https://kubernetes.default.svc.attacker.example.com/keys', 'https://kubernetes.example.com/']) {
      expect(isClusterApiServer(new URL(url), env), url).toBe(false);
    }
    const withToken = requestOptions(new URL('https://kubernetes.default.svc/openid/v1/jwks'), true, files);
    expect(withToken.headers.authorization).toBe('Bearer pod-token');
    expect(withToken.ca?.at(-1)).toContain('BEGIN CERTIFICATE');
    expect(requestOptions(new URL('https://oidc.example.com/keys'), false, files).headers.authorization).toBeUndefined();
    // Never over plain HTTP.
    expect(requestOptions(new URL('http://kubernetes.default.svc/openid/v1/jwks'), true, files).headers.authorization).toBeUndefined();
    rmSync(dir, { recursive: true, force: true });
  });
});
