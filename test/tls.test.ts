/**
 * TLS on the HTTP and gRPC ports (server.tls_cert_file, server.tls_key_file, server.tls_client_ca_file):
 * certificates made at test time with the openssl CLI, real node:https and @grpc/grpc-js clients, a real
 * server over SQLite. Plaintext and TLS 1.1 are refused; mutual TLS refuses clients without a certificate of
 * the configured CA; a certificate rotated on disk (rewritten in place, or by the symlink swap of a Kubernetes
 * Secret volume) reaches new connections while established ones keep working, and a half-written pair does
 * not take the server down. The metrics port stays plaintext.
 */
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { Agent, request as httpsRequest, type RequestOptions } from 'node:https';
import { join } from 'node:path';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueProtoPath } from '../src/grpc/proto.js';
import { createLogger } from '../src/log/logger.js';
import { startServer, type RunningServer } from '../src/server.js';
import { TestPki, type Issued } from './helpers/certs.js';
import { runCli, tempDirs } from './helpers/cli.js';
import { engineByName, type TestDatabase } from './helpers/engines.js';
import { freePort } from './helpers/free-ports.js';
import { testConfig, type ConfigOverrides } from './helpers/server.js';

const HOST = '127.0.0.1';
const newDir = tempDirs('conveyor-tls-');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------------------------
// Clients

interface Answer {
  status: number;
  body: any;
  /** Serial of the certificate the server presented on this connection. */
  serial: string;
  socket: TLSSocket;
}

type TlsClientOptions = Pick<RequestOptions, 'ca' | 'cert' | 'key' | 'agent' | 'minVersion' | 'maxVersion' | 'ciphers'>;

/** One HTTPS request with node:https, bounded to 5 s. */
function https(port: number, method: string, path: string, options: TlsClientOptions & { body?: unknown } = {}): Promise<Answer> {
  const { body, ...tls } = options;
  const data = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: HOST, port, method, path, agent: false, timeout: 5000, headers: data ? { 'content-type': 'application/json' } : {}, ...tls },
      (res) => {
        // Read now: a keep-alive agent takes the socket back once the response has ended.
        const socket = res.socket as TLSSocket;
        const serial = socket.getPeerCertificate().serialNumber;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined, serial, socket }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(data);
  });
}

/** A plaintext HTTP request to a port; resolves with the status if anything answered. */
function plainHttp(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: HOST, port, path, agent: false, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

/** A bare TLS handshake (h2, as a gRPC client offers): the serial the port presents, or the handshake's error. */
function handshake(port: number, options: ConnectionOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: HOST, port, ALPNProtocols: ['h2', 'http/1.1'], timeout: 5000, ...options });
    socket.once('secureConnect', () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.end();
      resolve(serial);
    });
    socket.once('timeout', () => socket.destroy(new Error('timed out')));
    socket.once('error', reject);
  });
}

const definition = protoLoader.loadSync(queueProtoPath(), { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
const QueueService = (grpc.loadPackageDefinition(definition) as any).queue.QueueService;
const grpcClients: grpc.Client[] = [];

function grpcClient(port: number, credentials: grpc.ChannelCredentials): any {
  // The name the certificate is checked against (and sent as SNI), while the connection stays on 127.0.0.1.
  const client = new QueueService(`${HOST}:${port}`, credentials, { 'grpc.ssl_target_name_override': 'localhost' });
  grpcClients.push(client);
  return client;
}

function unary(client: any, method: string, request: object): Promise<any> {
  const deadline = new Date(Date.now() + 5000);
  return new Promise((resolve, reject) => client[method](request, new grpc.Metadata(), { deadline }, (err: grpc.ServiceError | null, res: unknown) => (err ? reject(err) : resolve(res))));
}

/** Enqueue then Dequeue over gRPC: the service answers through this channel. */
async function grpcRoundTrip(client: any, topic: string): Promise<void> {
  const { id } = await unary(client, 'Enqueue', { topic, payload: Buffer.from('over tls') });
  expect((await unary(client, 'Dequeue', { topic })).id).toBe(id);
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Servers

interface Running {
  server: RunningServer;
  lines: Array<Record<string, any>>;
  raw: string[];
  close(): Promise<void>;
}

async function start(server: ConfigOverrides['server'], extra: ConfigOverrides = {}): Promise<Running> {
  const database: TestDatabase = await engineByName.sqlite.createDatabase();
  const raw: string[] = [];
  const lines: Array<Record<string, any>> = [];
  const logger = createLogger('info', {
    write(chunk: string) {
      raw.push(chunk);
      for (const l of chunk.split('\n').filter(Boolean)) lines.push(JSON.parse(l));
    },
  });
  const running = await startServer(testConfig(database.url, { ...extra, server: { ...server } }), { logger });
  return {
    server: running,
    lines,
    raw,
    close: async () => {
      await running.close();
      await database.drop();
    },
  };
}

let pki: TestPki;
let serverA: Issued;
let client: Issued;
let stranger: Issued;
const servers: Running[] = [];

beforeAll(() => {
  const dir = newDir();
  pki = new TestPki(dir);
  serverA = pki.issue('server a', 'server');
  client = pki.issue('client', 'client');
  stranger = TestPki.selfSigned(dir, 'stranger');
});

afterAll(async () => {
  for (const c of grpcClients) c.close();
  await Promise.all(servers.map((s) => s.close()));
});

// ---------------------------------------------------------------------------------------------------------------

describe('TLS (server certificate only)', () => {
  let running: Running;
  let httpPort: number;
  let grpcPort: number;

  beforeAll(async () => {
    running = await start({ tls_cert_file: serverA.certPath, tls_key_file: serverA.keyPath });
    servers.push(running);
    ({ httpPort, grpcPort } = running.server);
  });

  it('serves the HTTP API over HTTPS to a client that trusts the CA (health, readiness, a round trip)', async () => {
    const ca = pki.ca.cert;
    const health = await https(httpPort, 'GET', '/healthz', { ca });
    expect([health.status, health.body]).toEqual([200, { status: 'ok' }]);
    expect(health.serial).toBe(serverA.serial);
    expect(health.socket.getProtocol()).toMatch(/^TLSv1\.[23]$/);
    expect((await https(httpPort, 'GET', '/readyz', { ca })).status).toBe(200);
    const enqueued = await https(httpPort, 'POST', '/api/messages', { ca, body: { topic: 'https', payload: 'hello' } });
    expect(enqueued.status).toBe(201);
    const dequeued = await https(httpPort, 'POST', '/api/messages/dequeue', { ca, body: { topic: 'https', count: 1 } });
    expect(dequeued.body.messages.map((m: any) => [m.id, m.payload])).toEqual([[enqueued.body.id, 'hello']]);
  });

  it('answers malformed HTTP over TLS with the JSON error of node-server.ts', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = tlsConnect({ host: HOST, port: httpPort, ca: pki.ca.cert, timeout: 5000 }, () => socket.end('GET / HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n'));
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk) => (text += chunk));
      socket.on('end', () => resolve(text));
      socket.on('timeout', () => socket.destroy(new Error('timed out')));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('{"error":"malformed HTTP request"}');
  });

  it('refuses plaintext HTTP on the TLS port', async () => {
    await expect(plainHttp(httpPort, '/healthz')).rejects.toThrow(/socket hang up|ECONNRESET|Parse Error/);
  });

  it('refuses a TLS 1.1 client on both ports', async () => {
    // SECLEVEL=0 lets this client offer TLS 1.1 at all; the alert then comes from the server.
    const old: ConnectionOptions = { ca: pki.ca.cert, minVersion: 'TLSv1.1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT:@SECLEVEL=0' };
    await expect(handshake(httpPort, old)).rejects.toThrow(/protocol version/);
    await expect(handshake(grpcPort, old)).rejects.toThrow(/protocol version/);
    await expect(https(httpPort, 'GET', '/healthz', old)).rejects.toThrow(/protocol version/);
    // TLS 1.2 is accepted.
    expect(await handshake(httpPort, { ca: pki.ca.cert, maxVersion: 'TLSv1.2' })).toBe(serverA.serial);
    expect(await handshake(grpcPort, { ca: pki.ca.cert, maxVersion: 'TLSv1.2' })).toBe(serverA.serial);
  });

  it('refuses a client that does not trust the certificate (the server is not silently plaintext or self-vouched)', async () => {
    await expect(https(httpPort, 'GET', '/healthz', {})).rejects.toThrow(/unable to verify|self.signed|certificate/i);
  });

  it('serves gRPC over TLS to the @grpc/grpc-js client, and refuses a plaintext gRPC client', async () => {
    await grpcRoundTrip(grpcClient(grpcPort, grpc.credentials.createSsl(pki.ca.cert)), 'grpc-tls');
    const plain = grpcClient(grpcPort, grpc.credentials.createInsecure());
    await expect(unary(plain, 'Enqueue', { topic: 'grpc-tls', payload: Buffer.from('x') })).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
  });

  it('"conveyor listening" says TLS is on; the certificate is logged by serial, never its key', () => {
    expect(running.lines.find((l) => l.msg === 'conveyor listening')).toMatchObject({ tls: 'on' });
    expect(running.lines.find((l) => l.msg === 'TLS certificate loaded')).toMatchObject({ serial: serverA.serial, mutualTls: false });
    expect(running.raw.join('')).not.toMatch(/PRIVATE KEY|BEGIN CERTIFICATE/);
  });
});

describe('mutual TLS (server.tls_client_ca_file)', () => {
  let running: Running;
  let httpPort: number;
  let grpcPort: number;

  beforeAll(async () => {
    running = await start({ tls_cert_file: serverA.certPath, tls_key_file: serverA.keyPath, tls_client_ca_file: pki.ca.certPath });
    servers.push(running);
    ({ httpPort, grpcPort } = running.server);
  });

  it('HTTP: refuses a client without a certificate and one with an unrelated certificate; accepts one the CA signed', async () => {
    const ca = pki.ca.cert;
    await expect(https(httpPort, 'GET', '/healthz', { ca })).rejects.toThrow(/certificate required|alert|ECONNRESET|socket hang up/);
    await expect(https(httpPort, 'GET', '/healthz', { ca, cert: stranger.cert, key: stranger.key })).rejects.toThrow(/unknown ca|alert|ECONNRESET|socket hang up/);
    const ok = await https(httpPort, 'GET', '/readyz', { ca, cert: client.cert, key: client.key });
    expect([ok.status, ok.body]).toEqual([200, { status: 'ok' }]);
    const enqueued = await https(httpPort, 'POST', '/api/messages', { ca, cert: client.cert, key: client.key, body: { topic: 'mtls', payload: 'p' } });
    expect(enqueued.status).toBe(201);
  });

  it('gRPC: refuses a client without a certificate and one with an unrelated certificate; accepts one the CA signed', async () => {
    const none = grpcClient(grpcPort, grpc.credentials.createSsl(pki.ca.cert));
    await expect(unary(none, 'Enqueue', { topic: 'mtls', payload: Buffer.from('x') })).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    const unrelated = grpcClient(grpcPort, grpc.credentials.createSsl(pki.ca.cert, stranger.key, stranger.cert));
    await expect(unary(unrelated, 'Enqueue', { topic: 'mtls', payload: Buffer.from('x') })).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    await grpcRoundTrip(grpcClient(grpcPort, grpc.credentials.createSsl(pki.ca.cert, client.key, client.cert)), 'mtls-grpc');
  });

  it('"conveyor listening" says mutual TLS', () => {
    expect(running.lines.find((l) => l.msg === 'conveyor listening')).toMatchObject({ tls: 'mutual' });
  });

  it('the metrics port stays plaintext and answers /metrics, /healthz and /readyz (for scrapers and kubelet probes without a client certificate)', async () => {
    const withMetrics = await start(
      { tls_cert_file: serverA.certPath, tls_key_file: serverA.keyPath, tls_client_ca_file: pki.ca.certPath },
      { metrics: { port: await freePort() } },
    );
    servers.push(withMetrics);
    const metricsPort = withMetrics.server.metricsPort!;
    expect(await plainHttp(metricsPort, '/metrics')).toBe(200);
    expect(await plainHttp(metricsPort, '/healthz')).toBe(200);
    expect(await plainHttp(metricsPort, '/readyz')).toBe(200);
    expect(await plainHttp(metricsPort, '/api/topics')).toBe(404);
    await expect(plainHttp(withMetrics.server.httpPort, '/healthz')).rejects.toThrow();
  });
});

// ---------------------------------------------------------------------------------------------------------------

/** A directory laid out like a Kubernetes Secret volume: tls.crt -> ..data/tls.crt, ..data -> ..<version>/. */
function secretVolume(dir: string, version: string, pair: Issued): void {
  const target = join(dir, `..${version}`);
  mkdirSync(target);
  writeFileSync(join(target, 'tls.crt'), pair.cert);
  writeFileSync(join(target, 'tls.key'), pair.key);
  // The kubelet's atomic writer: a new symlink renamed over ..data, so readers see the old set or the new one.
  symlinkSync(`..${version}`, join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
}

describe('certificate rotation without a restart', () => {
  const RELOAD_MS = 200;
  let dir: string;
  let running: Running;
  let httpPort: number;
  let grpcPort: number;
  let serverB: Issued;
  let serverC: Issued;

  beforeAll(async () => {
    dir = newDir();
    serverB = pki.issue('server b', 'server');
    serverC = pki.issue('server c', 'server');
    secretVolume(dir, 'v1', serverA);
    symlinkSync(join('..data', 'tls.crt'), join(dir, 'tls.crt'));
    symlinkSync(join('..data', 'tls.key'), join(dir, 'tls.key'));
    running = await start({ tls_cert_file: join(dir, 'tls.crt'), tls_key_file: join(dir, 'tls.key'), tls_reload_interval: `${RELOAD_MS}ms` });
    servers.push(running);
    ({ httpPort, grpcPort } = running.server);
  });

  it('a half-written pair keeps the previous certificate; the whole new pair (in place, then a symlink swap) reaches new connections while established ones keep working', async () => {
    const ca = pki.ca.cert;
    // Established before any rotation: a keep-alive HTTPS connection and a gRPC Subscribe stream.
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca });
    const first = await https(httpPort, 'GET', '/healthz', { agent });
    expect(first.serial).toBe(serverA.serial);
    const channel = grpcClient(grpcPort, grpc.credentials.createSsl(ca));
    const stream = channel.Subscribe({ topic: 'rotation' }, new grpc.Metadata());
    const received: string[] = [];
    stream.on('data', (m: any) => received.push(m.payload.toString()));
    stream.on('error', () => undefined);
    const delivered = async (payload: string) => {
      const enq = await https(httpPort, 'POST', '/api/messages', { ca, body: { topic: 'rotation', payload } });
      expect(enq.status).toBe(201);
      await until(`"${payload}" on the Subscribe stream opened before the rotation`, async () => received.includes(payload));
    };
    await delivered('before');

    // 1. In place, half-written: the new certificate without its key. The server keeps serving A, and says so
    // (once for the pair, not on every look at the unchanged files).
    const warnings = () => running.lines.filter((l) => l.level === 'warn' && /do not form a valid certificate and key; still serving the previous certificate/.test(l.msg));
    writeFileSync(join(dir, 'tls.crt'), serverB.cert);
    await until('a warning about the mismatched pair', async () => warnings().some((l) => /key values mismatch/.test(l.reason)));
    await sleep(3 * RELOAD_MS);
    const warned = warnings().length;
    expect(await handshake(httpPort, { ca })).toBe(serverA.serial);
    expect(await handshake(grpcPort, { ca })).toBe(serverA.serial);
    expect((await https(httpPort, 'GET', '/readyz', { ca })).status).toBe(200);
    await grpcRoundTrip(grpcClient(grpcPort, grpc.credentials.createSsl(ca)), 'half-written');
    await sleep(3 * RELOAD_MS);
    expect(warnings()).toHaveLength(warned);

    // 2. The key follows: B reaches new HTTPS and gRPC connections.
    writeFileSync(join(dir, 'tls.key'), serverB.key);
    await until('certificate B on a new HTTPS connection', async () => (await handshake(httpPort, { ca })) === serverB.serial);
    await until('certificate B on a new gRPC connection', async () => (await handshake(grpcPort, { ca })) === serverB.serial);
    expect((await https(httpPort, 'GET', '/readyz', { ca })).serial).toBe(serverB.serial);
    await grpcRoundTrip(grpcClient(grpcPort, grpc.credentials.createSsl(ca)), 'after-b');

    // 3. The Kubernetes way: a new directory and a symlink swap. C reaches new connections.
    secretVolume(dir, 'v2', serverC);
    await until('certificate C on a new HTTPS connection', async () => (await handshake(httpPort, { ca })) === serverC.serial);
    await until('certificate C on a new gRPC connection', async () => (await handshake(grpcPort, { ca })) === serverC.serial);
    expect(running.lines.filter((l) => l.msg === 'TLS certificate reloaded').map((l) => l.serial)).toEqual([serverB.serial, serverC.serial]);

    // The connections from before all this still work, on the session they started with.
    const again = await https(httpPort, 'GET', '/healthz', { agent });
    expect(again.socket).toBe(first.socket);
    expect([again.status, again.serial]).toEqual([200, serverA.serial]);
    await delivered('after');
    await grpcRoundTrip(channel, 'same-channel');
    stream.cancel();
    agent.destroy();
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('configuration errors at start-up (conveyor serve)', () => {
  it('a certificate without its key, or a CA without both, is refused naming the keys (exit 2)', async () => {
    const cwd = newDir();
    const db = { CONVEYOR_DB_URL: `sqlite:${join(cwd, 'c.db')}` };
    const [onlyCert, onlyCa] = await Promise.all([
      runCli(['serve'], { ...db, CONVEYOR_SERVER_TLS_CERT_FILE: serverA.certPath }, cwd),
      runCli(['config', 'check'], { ...db, CONVEYOR_SERVER_TLS_CLIENT_CA_FILE: pki.ca.certPath }, cwd),
    ]);
    expect(onlyCert.code).toBe(2);
    expect(onlyCert.stderr).toMatch(/server\.tls_cert_file and server\.tls_key_file: set both/);
    expect(onlyCa.code).toBe(2);
    expect(onlyCa.stderr).toMatch(/server\.tls_client_ca_file: mutual TLS needs server\.tls_cert_file and server\.tls_key_file/);
  });

  it('a key that does not match the certificate, or a missing file, stops the start with the reason (exit 2)', async () => {
    const cwd = newDir();
    const base = { CONVEYOR_DB_URL: `sqlite:${join(cwd, 'c.db')}`, CONVEYOR_SERVER_HTTP_PORT: '0', CONVEYOR_SERVER_GRPC_PORT: '0', CONVEYOR_SERVER_HOST: HOST };
    const [mismatched, missing] = await Promise.all([
      runCli(['serve'], { ...base, CONVEYOR_SERVER_TLS_CERT_FILE: serverA.certPath, CONVEYOR_SERVER_TLS_KEY_FILE: client.keyPath }, cwd),
      runCli(['serve'], { ...base, CONVEYOR_SERVER_TLS_CERT_FILE: join(cwd, 'nope.crt'), CONVEYOR_SERVER_TLS_KEY_FILE: serverA.keyPath }, cwd),
    ]);
    expect(mismatched.code).toBe(2);
    expect(mismatched.stderr).toMatch(/server\.tls_cert_file, server\.tls_key_file: .*key values mismatch/);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/server\.tls_cert_file: cannot read .*nope\.crt \(ENOENT\)/);
    expect(mismatched.stderr + missing.stderr).not.toMatch(/PRIVATE KEY/);
  });
});
