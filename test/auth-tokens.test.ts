import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { ADMIN, createUser, JWT_SECRET, signToken, startAuthServer, USER_PASSWORD, type AuthServer } from './helpers/auth.js';
import { describeEachEngine, engineByName } from './helpers/engines.js';
import { captureLogger } from './helpers/log-capture.js';
import { manualClock, startTestServer } from './helpers/server.js';

describeEachEngine('auth: login, tokens and status', (engine) => {
  const clock = manualClock();
  let server: AuthServer;
  beforeAll(async () => {
    server = await startAuthServer(engine, { now: clock.now });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('logs in with the bootstrap admin and issues an HS256 token with the spec claims for 15 minutes', async () => {
    const res = await server.api.post('/api/auth/login', ADMIN);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['token']);
    expect(decodeProtectedHeader(res.body.token).alg).toBe('HS256');
    const claims = decodeJwt(res.body.token);
    expect(claims).toMatchObject({ uid: server.adminId, sub: 'admin', adm: true });
    expect(claims.exp! - claims.iat!).toBe(900);
    expect(claims.iat).toBe(Math.floor(clock.now() / 1000));
  });

  const expectError = (res: Awaited<ReturnType<typeof server.api.post>>, error: string) => {
    expectErrorBody(res, 400);
    expect(res.body.error).toBe(error);
  };

  it('answers 400 for a missing field and the same 401 for an unknown user and a wrong password', async () => {
    expectError(await server.api.post('/api/auth/login', { username: 'admin' }), 'password is required');
    expectError(await server.api.post('/api/auth/login', { password: 'x' }), 'username is required');
    // The wrong type is named as such, not reported as missing.
    expectError(await server.api.post('/api/auth/login', { username: 'admin', password: 12345678 }), 'password must be a string');
    expectError(await server.api.post('/api/auth/login', { username: ['admin'], password: 'x' }), 'username must be a string');
    const wrong = await server.api.post('/api/auth/login', { username: 'admin', password: 'not-the-password' });
    const unknown = await server.api.post('/api/auth/login', { username: 'nobody', password: 'not-the-password' });
    expectErrorBody(wrong, 401);
    expectErrorBody(unknown, 401);
    expect(unknown.body).toEqual(wrong.body);
  });

  it('reports auth_required, with the user only for a valid token', async () => {
    expect((await server.api.get('/api/auth/status')).body).toEqual({ auth_required: true });
    expect((await server.api.withToken('garbage').get('/api/auth/status')).body).toEqual({ auth_required: true });
    const res = await server.admin.get('/api/auth/status');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ auth_required: true, user: { id: server.adminId, username: 'admin', is_admin: true } });
  });

  it('requires a token on protected endpoints with the contract bodies, and leaves open ones open', async () => {
    const missing = await server.api.get('/api/messages');
    expectErrorBody(missing, 401);
    expect(missing.body.error).toBe('missing authorization header');
    const bad = await server.api.withToken('not.a.token').get('/api/messages');
    expectErrorBody(bad, 401);
    expect(bad.body.error).toBe('invalid or expired token');
    expect((await server.api.withHeaders({ authorization: 'Basic YWRtaW46eA==' }).get('/api/messages')).body.error).toBe('invalid or expired token');
    // The route table matches case-insensitively and ignores a trailing slash; authentication must not be sidestepped that way.
    for (const path of ['/API/MESSAGES', '/api/messages/', '/Api/Stats', '/METRICS', '/api/users/']) expectErrorBody(await server.api.get(path), 401);
    expect((await server.api.get('/healthz')).status).toBe(200);
    expect((await server.api.get('/api/version')).status).toBe(200);
    expect((await server.admin.get('/api/messages')).status).toBe(200);
  });

  it('requires a valid token for GET /metrics', async () => {
    expectErrorBody(await server.api.get('/metrics'), 401);
    const res = await server.admin.get('/metrics');
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/# (HELP|TYPE)/);
  });

  it('rejects tokens signed with another secret, tampered, alg none, HS512 or expired', async () => {
    const claims = { uid: server.adminId, sub: 'admin', adm: true };
    const good = await signToken(claims, { issuedAt: clock.now() });
    expect((await server.api.withToken(good).get('/api/users')).status).toBe(200);

    const otherSecret = await signToken(claims, { secret: 'another-secret-that-is-also-32-bytes-long', issuedAt: clock.now() });
    const hs512 = await signToken(claims, { alg: 'HS512', issuedAt: clock.now() });
    const [header, payload, signature] = good.split('.');
    const forged = Buffer.from(JSON.stringify({ ...decodeJwt(good), uid: '00000000-0000-4000-8000-000000000000' })).toString('base64url');
    const tampered = `${header}.${forged}.${signature}`;
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
    const expired = await signToken(claims, { issuedAt: clock.now() - 16 * 60_000 });
    for (const token of [otherSecret, hs512, tampered, none, expired]) {
      const res = await server.api.withToken(token).get('/api/users');
      expectErrorBody(res, 401);
      expect(res.body.error).toBe('invalid or expired token');
    }
  });

  it('expires a token after 15 minutes by the server clock, and refresh issues a new one from a valid token', async () => {
    const login = await server.api.post('/api/auth/login', ADMIN);
    const api = server.api.withToken(login.body.token);
    clock.advance(10 * 60_000);
    const refreshed = await api.post('/api/auth/refresh');
    expect(refreshed.status).toBe(200);
    expect(decodeJwt(refreshed.body.token).exp).toBe(decodeJwt(login.body.token).exp! + 600);
    clock.advance(6 * 60_000);
    expectErrorBody(await api.get('/api/users'), 401);
    expectErrorBody(await api.post('/api/auth/refresh'), 401);
    expect((await server.api.withToken(refreshed.body.token).get('/api/users')).status).toBe(200);
    server.admin = server.api.withToken(refreshed.body.token);
  });

  it("rejects a deleted user's token and takes admin rights from a demoted admin at once", async () => {
    const other = await createUser(server, [], true);
    expect((await other.api.get('/api/users')).status).toBe(200);
    const demoted = await server.admin.put(`/api/users/${other.id}`, { is_admin: false });
    expect(demoted.body.is_admin).toBe(false);
    const forbidden = await other.api.get('/api/users');
    expectErrorBody(forbidden, 403);
    expect(forbidden.body.error).toBe('admin access required');
    expect((await other.api.get('/api/auth/status')).body.user.is_admin).toBe(false);

    expect((await server.admin.delete(`/api/users/${other.id}`)).status).toBe(204);
    const gone = await other.api.get('/api/messages');
    expectErrorBody(gone, 401);
    expect(gone.body.error).toBe('invalid or expired token');
  });

  /** Another instance on the same database and clock, with its own cache of users. */
  const startSecondInstance = () => startTestServer(engine, { database: server.database, now: clock.now, overrides: { auth: { enabled: true, jwt_secret: JWT_SECRET } } });

  it('re-reads the user after at most 5 s when another instance changed it', async () => {
    const second = await startSecondInstance();
    try {
      const user = await createUser(server, [], true);
      const elsewhere = second.api.withToken(user.token);
      expect((await elsewhere.get('/api/users')).status).toBe(200);
      expect((await server.admin.put(`/api/users/${user.id}`, { is_admin: false })).status).toBe(200);
      clock.advance(5_001);
      expectErrorBody(await elsewhere.get('/api/users'), 403);
    } finally {
      await second.close();
    }
  });

  it('ends the tokens issued under the old password: at once on this instance, within 5 s on another, refreshed ones too', async () => {
    const second = await startSecondInstance();
    try {
      const user = await createUser(server, ['read:pw-change']);
      const elsewhere = second.api.withToken(user.token);
      expect((await elsewhere.get('/api/stats')).status).toBe(200);
      // In the very second of the login, on the same clock: a version, not a time, decides.
      expect((await server.admin.put(`/api/users/${user.id}`, { password: 'a-new-password-456' })).status).toBe(200);

      const here = await user.api.get('/api/stats');
      expectErrorBody(here, 401);
      expect(here.body.error).toBe('invalid or expired token');
      expectErrorBody(await user.api.post('/api/auth/refresh'), 401);
      expect((await user.api.get('/api/auth/status')).body).toEqual({ auth_required: true });
      // The other instance still has the user cached from before the change, and refreshes the old token: the
      // new one carries the old password version, so it ends with the old one once that cache is renewed.
      const refreshed = await elsewhere.post('/api/auth/refresh');
      expect(refreshed.status).toBe(200);
      expect(decodeJwt(refreshed.body.token).pwv).toBe(0);
      clock.advance(5_001);
      expectErrorBody(await elsewhere.get('/api/stats'), 401);
      for (const api of [server.api, second.api]) expectErrorBody(await api.withToken(refreshed.body.token).get('/api/stats'), 401);

      expectErrorBody(await server.api.post('/api/auth/login', { username: user.username, password: USER_PASSWORD }), 401);
      const login = await second.api.post('/api/auth/login', { username: user.username, password: 'a-new-password-456' });
      expect(login.status).toBe(200);
      expect(decodeJwt(login.body.token).pwv).toBe(1);
      expect((await server.api.withToken(login.body.token).get('/api/stats')).status).toBe(200);
      expect((await second.api.withToken(login.body.token).get('/api/stats')).status).toBe(200);
      // Other changes leave tokens alone: a rename keeps the session (the claims are informational).
      expect((await server.admin.put(`/api/users/${user.id}`, { username: `${user.username}-renamed` })).status).toBe(200);
      expect((await server.api.withToken(login.body.token).get('/api/stats')).status).toBe(200);
    } finally {
      await second.close();
    }
  });

  it('loads an expired principal once for all the requests that miss it together', async () => {
    const log = captureLogger('trace');
    const traced = await startTestServer(engine, {
      database: server.database,
      now: clock.now,
      logger: log.logger,
      overrides: { auth: { enabled: true, jwt_secret: JWT_SECRET } },
    });
    try {
      const user = await createUser(server, ['read:herd']);
      const api = traced.api.withToken(user.token);
      expect((await api.get('/api/auth/status')).body.user.id).toBe(user.id);
      clock.advance(5_001);
      const from = log.lines.length;
      const answers = await Promise.all(Array.from({ length: 20 }, () => api.get('/api/auth/status')));
      for (const answer of answers) expect(answer.body.user.id).toBe(user.id);
      const reads = (table: string) => log.lines.slice(from).filter((l) => l.source === 'knex' && l.statement === `select ${table}`).length;
      expect({ users: reads('users'), grants: reads('grants') }).toEqual({ users: 1, grants: 1 });
    } finally {
      await traced.close();
    }
  });

  it('lets a regular user log in with the password an admin set', async () => {
    const user = await createUser(server);
    const res = await server.api.post('/api/auth/login', { username: user.username, password: USER_PASSWORD });
    expect(res.status).toBe(200);
    expect(decodeJwt(res.body.token)).toMatchObject({ uid: user.id, sub: user.username, adm: false });
  });
});

describe('auth disabled', () => {
  it('leaves every endpoint open and reports auth_required false', async () => {
    const server = await startTestServer(engineByName.sqlite);
    try {
      expect((await server.api.get('/api/auth/status')).body).toEqual({ auth_required: false });
      expect((await server.api.get('/api/users')).status).toBe(200);
      expect((await server.api.get('/metrics')).status).toBe(200);
      expect((await server.api.enqueue('open', 'x')).status).toBe(201);
      expect((await server.api.withToken(await signToken({ uid: 'x', sub: 'x' }, { secret: JWT_SECRET })).get('/api/stats')).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
