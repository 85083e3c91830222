import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../src/config/load.js';
import { engineByName } from './helpers/engines.js';
import { errorShapeProblem, rawSocket, type RawResponse } from './helpers/raw-http.js';
import { startTestServer, type ConfigOverrides, type TestServer } from './helpers/server.js';

/**
 * The HTTP listener's limits (docs/security.md, Limits): each with a small configured value, answered as
 * documented. None of them touches the database, so SQLite alone runs them.
 */

/** A raw client connection that records what it receives and when it closes. */
class Conn {
  readonly socket: Socket;
  received = '';
  closed = false;
  readonly whenClosed: Promise<void>;
  readonly whenConnected: Promise<void>;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.setEncoding('latin1');
    this.socket.on('data', (chunk: string) => (this.received += chunk));
    this.socket.on('error', () => {});
    this.whenConnected = new Promise((resolve) => this.socket.once('connect', () => resolve()));
    this.whenClosed = new Promise((resolve) =>
      this.socket.once('close', () => {
        this.closed = true;
        resolve();
      }),
    );
  }

  /** Resolves once `pattern` matches what came in; rejects after `timeoutMs` or when the connection closes first. */
  async waitFor(pattern: RegExp, timeoutMs = 5000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(this.received)) {
      if (this.closed) throw new Error(`connection closed before ${pattern}; received ${JSON.stringify(this.received.slice(0, 200))}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}; received ${JSON.stringify(this.received.slice(0, 200))}`);
      await sleep(20);
    }
    return this.received;
  }

  /** Resolves true when the server closed the connection within `timeoutMs`. */
  async closesWithin(timeoutMs: number): Promise<boolean> {
    return Promise.race([this.whenClosed.then(() => true), sleep(timeoutMs).then(() => false)]);
  }

  destroy(): void {
    this.socket.destroy();
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const HEALTH = 'GET /healthz HTTP/1.1\r\nHost: limits.test\r\n\r\n';

function enqueueRequest(topic: string, payload: string): string {
  const body = JSON.stringify({ topic, payload });
  return `POST /api/messages HTTP/1.1\r\nHost: limits.test\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

function expectJsonError(res: RawResponse, status: number): void {
  expect(res.status, res.failure ?? res.text).toBe(status);
  expect(errorShapeProblem(res), res.text).toBeUndefined();
}

/** This process's soft limit of open files (Linux), so the slow-client test never runs out of descriptors. */
function openFileLimit(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = Number(line?.split(/\s+/)[3]);
    return Number.isFinite(soft) ? soft : 1024;
  } catch {
    return 1024;
  }
}

describe('HTTP limits [sqlite; no database involved]', () => {
  let server: TestServer | undefined;
  const conns: Conn[] = [];
  const start = async (overrides: ConfigOverrides['server']) => {
    server = await startTestServer(engineByName.sqlite, { overrides: { server: overrides } });
    return server.server.httpPort;
  };
  const open = (port: number) => {
    const conn = new Conn(port);
    conns.push(conn);
    return conn;
  };
  afterEach(async () => {
    for (const conn of conns.splice(0)) conn.destroy();
    await server?.close();
    server = undefined;
  });

  it('headers over server.http_max_header_bytes get 431 {"error"} and the connection is closed; smaller ones are served', async () => {
    const port = await start({ http_max_header_bytes: 2048 });
    const fits = await rawSocket(port, `GET /healthz HTTP/1.1\r\nHost: limits.test\r\nX-Filler: ${'a'.repeat(1500)}\r\n\r\n`);
    expect(fits.status, fits.failure).toBe(200);
    const conn = open(port);
    conn.socket.write(`GET /healthz HTTP/1.1\r\nHost: limits.test\r\nX-Filler: ${'a'.repeat(3000)}\r\n\r\n`);
    expect(await conn.closesWithin(5000)).toBe(true);
    expect(conn.received).toMatch(/^HTTP\/1\.1 431 /);
    expect(conn.received).toMatch(/\r\nConnection: close\r\n/i);
    const res = await rawSocket(port, `GET /healthz HTTP/1.1\r\nHost: limits.test\r\nX-Filler: ${'a'.repeat(3000)}\r\n\r\n`);
    expectJsonError(res, 431);
    expect(JSON.parse(res.text).error).toMatch(/headers too large/);
  });

  it('a request whose headers do not arrive within server.http_headers_timeout gets 408 {"error"} and the connection is closed', async () => {
    // The request timeout is far beyond the client's patience, so only the headers timeout can answer.
    const port = await start({ http_headers_timeout: '1s', http_request_timeout: '60s' });
    const res = await rawSocket(port, 'GET /healthz HTTP/1.1\r\nHost: limits.test\r\n', { timeoutMs: 10_000 });
    expectJsonError(res, 408);
    expect(JSON.parse(res.text).error).toMatch(/timed out/);
    expect(res.headers.connection).toBe('close');
    // A connection that sends nothing at all is closed too.
    const silent = open(port);
    await silent.whenConnected;
    expect(await silent.closesWithin(10_000)).toBe(true);
  });

  it('a request whose body does not arrive within server.http_request_timeout gets 408 {"error"} and is not served', async () => {
    const port = await start({ http_headers_timeout: '1s', http_request_timeout: '2s' });
    const whole = enqueueRequest('limits.slow-body', 'never stored');
    // Headers and part of the body in time; the rest never comes.
    const res = await rawSocket(port, whole.slice(0, whole.length - 10), { timeoutMs: 15_000 });
    expectJsonError(res, 408);
    expect((await server!.api.dequeue('limits.slow-body')).body.messages).toEqual([]);
  });

  it('an idle keep-alive connection is closed after server.http_keep_alive_timeout, which its answers announce', async () => {
    const port = await start({ http_keep_alive_timeout: '1s' });
    const conn = open(port);
    conn.socket.write(HEALTH);
    const head = await conn.waitFor(/\r\n\r\n/);
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    expect(head).toMatch(/\r\nKeep-Alive: timeout=1\r\n/i);
    expect(await conn.closesWithin(10_000)).toBe(true);
  });

  it('a connection over server.http_max_connections gets 503 {"error"} with Retry-After and Connection: close, unserved; a freed slot serves again', async () => {
    const port = await start({ http_max_connections: 3, http_headers_timeout: '30s' });
    // Three connections, each with a request answered: all three are counted and stay open (keep-alive).
    const holders = [open(port), open(port), open(port)];
    for (const conn of holders) {
      conn.socket.write(HEALTH);
      await conn.waitFor(/^HTTP\/1\.1 200 [\s\S]*\r\n\r\n/);
    }
    const refused = await rawSocket(port, enqueueRequest('limits.refused', 'must not be stored'));
    expectJsonError(refused, 503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers.connection).toBe('close');
    expect(JSON.parse(refused.text).error).toMatch(/too many open connections/);
    // The fourth connection is closed by the server (rawSocket saw the whole answer; a fresh one sees the close).
    const fourth = open(port);
    fourth.socket.write(HEALTH);
    expect(await fourth.closesWithin(5000)).toBe(true);
    expect(fourth.received).toMatch(/^HTTP\/1\.1 503 /);

    holders[0].destroy();
    await holders[0].whenClosed;
    // The server notices the close a moment later; until then a new connection may still be refused.
    let served: RawResponse | undefined;
    for (let attempt = 0; attempt < 50 && served?.status !== 200; attempt++) {
      if (attempt > 0) await sleep(50);
      served = await rawSocket(port, HEALTH);
    }
    expect(served?.status, served?.failure).toBe(200);
    // The refused request was never served: its topic has nothing to hand out.
    holders[1].destroy();
    await holders[1].whenClosed;
    await sleep(100);
    const dequeued = await rawSocket(
      port,
      (() => {
        const body = JSON.stringify({ topic: 'limits.refused' });
        return `POST /api/messages/dequeue HTTP/1.1\r\nHost: limits.test\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      })(),
    );
    expect(dequeued.status, dequeued.failure).toBe(200);
    expect(JSON.parse(dequeued.text).messages).toEqual([]);
  });

  it('refuses a headers timeout above the request timeout at start-up', () => {
    expect(() => validateConfig({ server: { http_headers_timeout: '90s', http_request_timeout: '60s' } })).toThrow(
      /server\.http_headers_timeout: must not exceed server\.http_request_timeout/,
    );
    expect(() => validateConfig({ server: { http_headers_timeout: '0s' } })).toThrow(/server\.http_headers_timeout: expected a duration above 0/);
  });
});

describe('HTTP slow clients [sqlite]', () => {
  // Several hundred connections (two descriptors each, client and server side, in this one process).
  const SLOW = Math.max(50, Math.min(300, Math.floor((openFileLimit() - 256) / 2)));
  // Long enough for the normal client's two requests on a busy machine, short enough for the test to stay brief.
  const HEADERS_TIMEOUT_MS = 6000;
  let server: TestServer;
  const slow: Conn[] = [];
  const timers: NodeJS.Timeout[] = [];

  beforeAll(async () => {
    server = await startTestServer(engineByName.sqlite, {
      overrides: { server: { http_headers_timeout: `${HEADERS_TIMEOUT_MS}ms`, http_request_timeout: '30s', http_max_connections: SLOW + 50 } },
    });
  });
  afterAll(async () => {
    for (const timer of timers) clearInterval(timer);
    for (const conn of slow) conn.destroy();
    await server?.close();
  });

  it(`${SLOW} connections sending one header byte a second do not stop a normal client's enqueue and dequeue, and the headers timeout closes them`, async () => {
    const port = server.server.httpPort;
    const request = `GET /healthz HTTP/1.1\r\nHost: limits.test\r\nX-Slow: ${'s'.repeat(64)}\r\n\r\n`;
    for (let i = 0; i < SLOW; i++) slow.push(new Conn(port));
    await Promise.all(slow.map((conn) => conn.whenConnected));
    // One byte a second each, never the whole request (bounded: the header is longer than the test lasts).
    let sent = 0;
    const trickle = () => {
      sent++;
      for (const conn of slow) if (!conn.closed) conn.socket.write(request[sent - 1]);
    };
    trickle();
    timers.push(setInterval(trickle, 1000));

    const topic = 'limits.during-attack';
    const enqueued = await server.api.enqueue(topic, 'still served');
    expect(enqueued.status, enqueued.text).toBe(201);
    const dequeued = await server.api.dequeue(topic);
    expect(dequeued.status, dequeued.text).toBe(200);
    expect(dequeued.body.messages.map((m: { id: string }) => m.id)).toEqual([enqueued.body.id]);
    // Both were served while the attack was on: the slow connections are all still open.
    expect(slow.filter((conn) => conn.closed)).toHaveLength(0);

    // The headers timeout then closes every one of them, each with its 408.
    const allClosed = await Promise.race([Promise.all(slow.map((conn) => conn.whenClosed)).then(() => true), sleep(HEADERS_TIMEOUT_MS + 8000).then(() => false)]);
    expect(allClosed, `${slow.filter((c) => !c.closed).length} of ${SLOW} slow connections still open`).toBe(true);
    expect(slow.filter((conn) => !/^HTTP\/1\.1 408 /.test(conn.received))).toHaveLength(0);
    expect(sent).toBeLessThan(request.length);
  }, 20_000);
});
