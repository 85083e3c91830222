import { SignJWT } from 'jose';
import { expect } from 'vitest';
import type { Logger } from '../../src/log/logger.js';
import type { Engine, TestDatabase } from './engines.js';
import type { Api } from './http.js';
import { startTestServer, type ConfigOverrides, type TestServer } from './server.js';

export const JWT_SECRET = 'test-secret-that-is-at-least-32-bytes-long';
export const ADMIN = { username: 'admin', password: 'admin-password-123' };
export const USER_PASSWORD = 'user-password-123';

export interface AuthServer extends TestServer {
  /** An Api carrying the bootstrap admin's token. */
  admin: Api;
  adminId: string;
  /** The server's clock, for tokens signed by the tests. */
  now: () => number;
}

/** A server with auth on and the bootstrap admin logged in (one login attempt of the ten per minute). */
export async function startAuthServer(
  engine: Engine,
  options: { overrides?: ConfigOverrides; now?: () => number; logger?: Logger; database?: TestDatabase } = {},
): Promise<AuthServer> {
  const overrides: ConfigOverrides = {
    ...options.overrides,
    auth: { enabled: true, jwt_secret: JWT_SECRET, username: ADMIN.username, password: ADMIN.password, ...options.overrides?.auth },
  };
  const server = await startTestServer(engine, { overrides, now: options.now, logger: options.logger, database: options.database });
  const login = await server.api.post('/api/auth/login', ADMIN);
  expect(login.status, login.text).toBe(200);
  const admin = server.api.withToken(login.body.token);
  const status = await admin.get('/api/auth/status');
  return { ...server, admin, adminId: status.body.user.id, now: options.now ?? Date.now };
}

/** Signs a token the way the server does (or deliberately not), to test what the server accepts. */
export async function signToken(
  claims: { uid: string; sub: string; adm?: boolean },
  options: { secret?: string; alg?: 'HS256' | 'HS512'; issuedAt?: number; expiresInSeconds?: number } = {},
): Promise<string> {
  const iat = Math.floor((options.issuedAt ?? Date.now()) / 1000);
  return new SignJWT({ uid: claims.uid, adm: claims.adm ?? false })
    .setProtectedHeader({ alg: options.alg ?? 'HS256', typ: 'JWT' })
    .setSubject(claims.sub)
    .setIssuedAt(iat)
    .setExpirationTime(iat + (options.expiresInSeconds ?? 900))
    .sign(new TextEncoder().encode(options.secret ?? JWT_SECRET));
}

export interface TestUser {
  id: string;
  username: string;
  token: string;
  api: Api;
}

let counter = 0;

/**
 * Creates a user through the admin API with the given grants (`action:pattern`, or `consume:pattern:group`) and
 * returns an Api carrying a token for it, signed like the server's own (no login, so the rate limit stays free).
 */
export async function createUser(server: AuthServer, grants: string[] = [], isAdmin = false): Promise<TestUser> {
  const username = `user${++counter}-${Math.random().toString(36).slice(2, 8)}`;
  const created = await server.admin.post('/api/users', { username, password: USER_PASSWORD, is_admin: isAdmin });
  expect(created.status, created.text).toBe(201);
  const id = created.body.id;
  for (const grant of grants) {
    const [action, topic_pattern, consumer_group] = grant.split(':');
    const res =
      action === 'consume'
        ? await server.admin.post(`/api/users/${id}/consumer-group-grants`, { topic_pattern, consumer_group })
        : await server.admin.post(`/api/users/${id}/grants`, { action, topic_pattern });
    expect(res.status, res.text).toBe(201);
  }
  const token = await signToken({ uid: id, sub: username, adm: isAdmin }, { issuedAt: server.now() });
  return { id, username, token, api: server.api.withToken(token) };
}
