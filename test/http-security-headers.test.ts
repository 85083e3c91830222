import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, validateConfig } from '../src/config/load.js';
import { createHttpServer } from '../src/http/node-server.js';
import { startAuthServer, createUser, ADMIN, type AuthServer } from './helpers/auth.js';
import { engineByName } from './helpers/engines.js';
import { freePort } from './helpers/free-ports.js';
import { errorShapeProblem, rawRequest, rawSocket, type RawResponse } from './helpers/raw-http.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Security issue, response headers and CORS: every answer of the API port (every route, the hot ones included,
 * node-server.ts's own error answers, /metrics, the probes) and of the metrics port carries nosniff,
 * no-referrer and no-store; no answer carries a CORS header unless server.cors_allowed_origins lists the
 * request's Origin, and a preflight is answered before authentication. SQLite only: nothing here touches SQL
 * that differs between engines.
 */

const engine = engineByName.sqlite;
const UI = 'https://ui.example.com';
const OTHER_UI = 'http://localhost:3000';
const EVIL = 'https://evil.example.com';
const SECURITY: Record<string, string> = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'cache-control': 'no-store' };

function expectSecurityHeaders(res: RawResponse, what: string): void {
  expect(res.status, `${what}: no response (${res.failure ?? ''})`).not.toBe(0);
  for (const [name, value] of Object.entries(SECURITY)) expect(res.headers[name], `${what}: ${name}`).toBe(value);
}

const corsHeadersOf = (res: RawResponse) => Object.keys(res.headers).filter((h) => h.startsWith('access-control-'));

function json(port: number, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<RawResponse> {
  const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const lengths = text === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) };
  return rawRequest(port, { method, path, headers: { ...lengths, ...headers }, body: text });
}

const preflight = (port: number, path: string, origin: string, method = 'POST') =>
  rawRequest(port, {
    method: 'OPTIONS',
    path,
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' },
  });

describe('default configuration: auth off, CORS off [sqlite]', () => {
  let server: TestServer;
  let port: number;
  let metricsPort: number;
  beforeAll(async () => {
    metricsPort = await freePort();
    // A small payload limit makes a body over the single-body limit (6 x 1000 + 64 KiB) cheap to send.
    server = await startTestServer(engine, { overrides: { metrics: { port: metricsPort }, queue: { max_payload_bytes: 1000 } } });
    port = server.server.httpPort;
  });
  afterAll(async () => {
    await server?.close();
  });

  it('the hot routes (enqueue 201, dequeue 200, ack 204, and their errors) carry them', async () => {
    const enqueued = await json(port, 'POST', '/api/messages', { topic: 'hdr', payload: 'secret payload', key: 'k1' });
    expect(enqueued.status, enqueued.text).toBe(201);
    expectSecurityHeaders(enqueued, 'fast-path enqueue');
    const dequeued = await json(port, 'POST', '/api/messages/dequeue', { topic: 'hdr' });
    expect(dequeued.status, dequeued.text).toBe(200);
    expect(dequeued.text).toContain('secret payload');
    expectSecurityHeaders(dequeued, 'fast-path dequeue');
    const id = JSON.parse(dequeued.text).messages[0].id;
    const acked = await json(port, 'POST', `/api/messages/${id}/ack`, {});
    expect(acked.status, acked.text).toBe(204);
    expectSecurityHeaders(acked, 'fast-path ack');
    const malformed = await json(port, 'POST', '/api/messages', '{"topic":');
    expect(malformed.status).toBe(400);
    expectSecurityHeaders(malformed, 'fast-path 400');
    const tooLarge = await json(port, 'POST', '/api/messages', { topic: 'hdr', payload: 'x'.repeat(2000) });
    expect(tooLarge.status).toBe(413);
    expectSecurityHeaders(tooLarge, 'fast-path 413');
  });

  it('express routes carry them on successes and on every kind of error', async () => {
    await json(port, 'POST', '/api/messages', { topic: 'hdr', payload: 'listed', key: 'k2' });
    const cases: Array<[string, Promise<RawResponse>, number]> = [
      ['list', json(port, 'GET', '/api/messages?topic=hdr'), 200],
      ['delete by key', json(port, 'DELETE', '/api/topics/hdr/messages/by-key/k2'), 200],
      ['message log', json(port, 'GET', '/api/topics/hdr/message-log'), 200],
      ['version', json(port, 'GET', '/api/version'), 200],
      ['batch enqueue', json(port, 'POST', '/api/messages/batch', { messages: [{ topic: 'hdr', payload: 'b' }] }), 201],
      ['bad batch', json(port, 'POST', '/api/messages/batch', {}), 400],
      ['unknown path', json(port, 'GET', '/no-such-path'), 404],
      ['unknown /api path', json(port, 'GET', '/api/no-such-route'), 404],
      ['wrong method', json(port, 'DELETE', '/api/messages'), 405],
      // Over the single-body limit: the body reader refuses it.
      ['body over the limit', json(port, 'POST', '/api/messages', { topic: 'hdr', payload: 'x'.repeat(80_000) }), 413],
      ['metrics', json(port, 'GET', '/metrics'), 200],
      ['healthz', json(port, 'GET', '/healthz'), 200],
      ['readyz', json(port, 'GET', '/readyz'), 200],
      ['HEAD healthz', rawRequest(port, { method: 'HEAD', path: '/healthz' }), 200],
    ];
    for (const [what, pending, status] of cases) {
      const res = await pending;
      expect(res.status, `${what}: ${res.text.slice(0, 200)}`).toBe(status);
      expectSecurityHeaders(res, what);
    }
  });

  it("node-server.ts's own answers (before any routing) carry them", async () => {
    const cases: Array<[string, string, number]> = [
      ['a control character in a header', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n', 400],
      ['an unknown method', 'FOO /api/messages HTTP/1.1\r\nHost: x\r\n\r\n', 400],
      ['headers over 16 KiB', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
      ['HTTP/1.1 without Host', 'GET /healthz HTTP/1.1\r\n\r\n', 400],
      ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405],
      ['an Expect other than 100-continue', 'POST /api/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: teapot\r\n\r\n{}', 417],
    ];
    for (const [what, bytes, status] of cases) {
      const res = await rawSocket(port, bytes);
      expect(res.status, `${what}: ${res.failure ?? ''} ${res.text}`).toBe(status);
      expect(errorShapeProblem(res), what).toBeUndefined();
      expectSecurityHeaders(res, what);
    }
  });

  it('the metrics port carries them too', async () => {
    const metrics = await rawRequest(metricsPort, { method: 'GET', path: '/metrics' });
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain('conveyor_');
    expectSecurityHeaders(metrics, 'metrics port /metrics');
    const missing = await rawRequest(metricsPort, { method: 'GET', path: '/other' });
    expect(missing.status).toBe(404);
    expectSecurityHeaders(missing, 'metrics port 404');
  });

  it('no answer carries a CORS header, whatever the Origin, and a preflight is refused', async () => {
    for (const origin of [UI, EVIL, 'null']) {
      const enqueue = await json(port, 'POST', '/api/messages', { topic: 'hdr', payload: 'x' }, { origin });
      expect(enqueue.status).toBe(201);
      const list = await json(port, 'GET', '/api/messages?topic=hdr', undefined, { origin });
      expect(list.status).toBe(200);
      const pre = await preflight(port, '/api/messages', origin);
      expect(pre.status, pre.text).toBe(403);
      expect(errorShapeProblem(pre)).toBeUndefined();
      expectSecurityHeaders(pre, 'refused preflight');
      for (const res of [enqueue, list, pre]) {
        expect(corsHeadersOf(res), origin).toEqual([]);
        expect(res.headers.vary).toBeUndefined();
      }
    }
    // An OPTIONS that is not a preflight (no Access-Control-Request-Method) is an ordinary request: 405.
    const options = await rawRequest(port, { method: 'OPTIONS', path: '/api/messages', headers: { origin: UI } });
    expect(options.status).toBe(405);
    expect(corsHeadersOf(options)).toEqual([]);
  });
});

describe('auth on, CORS allow-list [sqlite]', () => {
  let server: AuthServer;
  let port: number;
  let adminToken: string;
  beforeAll(async () => {
    server = await startAuthServer(engine, {
      overrides: { server: { cors_allowed_origins: `${UI}, ${OTHER_UI}` }, queue: { require_topic_registration: true } },
    });
    port = server.server.httpPort;
    adminToken = (await server.admin.post('/api/auth/refresh')).body.token;
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers that carry tokens, users or errors carry the headers (200 401 403 409 422)', async () => {
    const bearer = { authorization: `Bearer ${adminToken}` };
    const user = await createUser(server, []);
    const cases: Array<[string, Promise<RawResponse>, number]> = [
      ['login', json(port, 'POST', '/api/auth/login', ADMIN), 200],
      ['refresh', json(port, 'POST', '/api/auth/refresh', undefined, bearer), 200],
      ['users', json(port, 'GET', '/api/users', undefined, bearer), 200],
      ['no token', json(port, 'GET', '/api/messages?topic=t'), 401],
      ['no grant', json(port, 'GET', '/api/users', undefined, { authorization: `Bearer ${user.token}` }), 403],
      ['duplicate user', json(port, 'POST', '/api/users', { username: ADMIN.username, password: 'another-password-1' }, bearer), 409],
      ['unregistered topic', json(port, 'POST', '/api/messages', { topic: 'unregistered', payload: 'x' }, bearer), 422],
    ];
    for (const [what, pending, status] of cases) {
      const res = await pending;
      expect(res.status, `${what}: ${res.text.slice(0, 200)}`).toBe(status);
      expectSecurityHeaders(res, what);
      expect(corsHeadersOf(res), `${what}: no Origin, no CORS headers`).toEqual([]);
    }
  });

  it('a preflight from a listed origin succeeds without a token, before authentication', async () => {
    for (const [origin, path, method] of [
      [UI, '/api/messages', 'POST'],
      [UI, '/api/users/some-id', 'DELETE'],
      [OTHER_UI, '/api/topic-configs/t', 'PUT'],
    ]) {
      const res = await preflight(port, path, origin, method);
      expect(res.status, `${origin} ${method} ${path}: ${res.text}`).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(origin);
      expect(String(res.headers['access-control-allow-methods']).split(', ')).toContain(method);
      expect(String(res.headers['access-control-allow-headers']).toLowerCase().split(', ')).toEqual(
        expect.arrayContaining(['authorization', 'content-type', 'x-request-id', 'content-encoding']),
      );
      expect(Number(res.headers['access-control-max-age'])).toBeGreaterThan(0);
      expect(res.headers.vary).toBe('Origin');
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      expectSecurityHeaders(res, 'allowed preflight');
    }
  });

  it('a real request from a listed origin gets the origin back and may read Retry-After and X-Request-Id', async () => {
    const ok = await json(port, 'GET', '/api/users', undefined, { origin: UI, authorization: `Bearer ${adminToken}` });
    expect(ok.status).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe(UI);
    expect(ok.headers.vary).toBe('Origin');
    expect(String(ok.headers['access-control-expose-headers']).split(', ')).toEqual(expect.arrayContaining(['Retry-After', 'X-Request-Id']));
    expect(ok.headers['access-control-allow-credentials']).toBeUndefined();
    expectSecurityHeaders(ok, 'allowed origin');
    // An error is readable by the page too, so it can tell the user to log in.
    const denied = await json(port, 'GET', '/api/users', undefined, { origin: OTHER_UI });
    expect(denied.status).toBe(401);
    expect(denied.headers['access-control-allow-origin']).toBe(OTHER_UI);
  });

  it("the admin UI's files keep Vary: Origin beside Accept-Encoding (its hashed bundles are cached for a year)", async () => {
    const page = await json(port, 'GET', '/', undefined, { origin: UI });
    expect(page.status).toBe(200);
    expect(page.headers['access-control-allow-origin']).toBe(UI);
    expect(String(page.headers.vary).split(/,\s*/).sort()).toEqual(['Accept-Encoding', 'Origin']);
  });

  it('an origin not on the list gets no CORS header and its preflight is refused (before authentication too)', async () => {
    // Exact match only: no prefix, suffix, case or trailing-slash variants.
    for (const origin of [EVIL, 'https://ui.example.com.evil.example.com', 'http://ui.example.com', 'https://ui.example.com:8443', 'null']) {
      const real = await json(port, 'GET', '/api/users', undefined, { origin, authorization: `Bearer ${adminToken}` });
      expect(real.status).toBe(200);
      expect(corsHeadersOf(real), origin).toEqual([]);
      // The answer depends on Origin now: caches are told so even when no CORS header is sent.
      expect(real.headers.vary).toBe('Origin');
      const pre = await preflight(port, '/api/users', origin, 'GET');
      expect(pre.status, `${origin}: ${pre.text}`).toBe(403);
      expect(corsHeadersOf(pre), origin).toEqual([]);
      expect(errorShapeProblem(pre)).toBeUndefined();
      expectSecurityHeaders(pre, `refused preflight from ${origin}`);
    }
  });
});

describe('auth off, CORS allow-list: the hot routes [sqlite]', () => {
  let server: TestServer;
  let port: number;
  beforeAll(async () => {
    server = await startTestServer(engine, { overrides: { server: { cors_allowed_origins: UI } } });
    port = server.server.httpPort;
  });
  afterAll(async () => {
    await server?.close();
  });

  it('enqueue, dequeue and ack answer a listed origin with the CORS headers', async () => {
    const enqueued = await json(port, 'POST', '/api/messages', { topic: 'cors', payload: 'p' }, { origin: UI });
    const dequeued = await json(port, 'POST', '/api/messages/dequeue', { topic: 'cors' }, { origin: UI });
    const id = JSON.parse(dequeued.text).messages[0].id;
    const acked = await json(port, 'POST', `/api/messages/${id}/ack`, {}, { origin: UI });
    const refused = await json(port, 'POST', '/api/messages', { topic: 'cors', payload: 'p' }, { origin: EVIL });
    for (const [what, res, status] of [['enqueue', enqueued, 201], ['dequeue', dequeued, 200], ['ack', acked, 204], ['other origin', refused, 201]] as const) {
      expect(res.status, `${what}: ${res.text}`).toBe(status);
      expectSecurityHeaders(res, what);
      expect(res.headers['access-control-allow-origin'], what).toBe(what === 'other origin' ? undefined : UI);
    }
  });
});

describe('server.cors_allowed_origins validation', () => {
  const withOrigins = (value: string) => () => validateConfig({ server: { cors_allowed_origins: value } });

  it('takes exact origins, comma-separated, and "" for off', () => {
    expect(withOrigins('')().server.cors_allowed_origins).toBe('');
    expect(withOrigins(`${UI}, ${OTHER_UI},http://[::1]:8080`)().server.cors_allowed_origins).toContain(UI);
  });

  it('refuses a wildcard and anything a browser would not send as an Origin, naming the key', () => {
    expect(withOrigins('*')).toThrow(ConfigError);
    expect(withOrigins('*')).toThrow(/server\.cors_allowed_origins: wildcards are not allowed/);
    expect(withOrigins(`${UI}, https://*.example.com`)).toThrow(/wildcards/);
    expect(withOrigins('https://ui.example.com/')).toThrow(/use "https:\/\/ui\.example\.com"/);
    expect(withOrigins('https://UI.example.com')).toThrow(/use "https:\/\/ui\.example\.com"/);
    expect(withOrigins('https://ui.example.com:443')).toThrow(/use "https:\/\/ui\.example\.com"/);
    expect(withOrigins('ui.example.com')).toThrow(/not an http\(s\) origin/);
    expect(withOrigins('ftp://ui.example.com')).toThrow(/not an http\(s\) origin/);
  });
});

describe('node-server.ts timeout answer (408)', () => {
  it('carries the headers too', async () => {
    const server = createHttpServer((_req, res) => res.end('served'));
    // node:http checks request deadlines every connectionsCheckingInterval (30 s by default), read at listen time.
    server.requestTimeout = 300;
    server.headersTimeout = 300;
    (server as unknown as { connectionsCheckingInterval: number }).connectionsCheckingInterval = 100;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const res = await rawSocket((server.address() as AddressInfo).port, 'GET /slow HTTP/1.1\r\nHost: x\r\n', { timeoutMs: 5000 });
      expect(res.status, res.failure).toBe(408);
      expect(errorShapeProblem(res)).toBeUndefined();
      expectSecurityHeaders(res, '408');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
