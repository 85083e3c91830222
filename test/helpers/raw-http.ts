import { request, type OutgoingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import type { Engine, TestDatabase } from './engines.js';
import { testConfig, type ConfigOverrides } from './server.js';
import { createLogger } from '../../src/log/logger.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { Api } from './http.js';

export interface RawResponse {
  /** 0 when no response came (connection closed or reset, or the client gave up). */
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** Why there was no response, when status is 0. */
  failure?: string;
}

/**
 * One request through node:http on a connection of its own (no keep-alive), with full control of the
 * method, the raw path and every header, Content-Length included; the body is sent exactly as given.
 */
export function rawRequest(
  port: number,
  options: { method: string; path: string; headers?: OutgoingHttpHeaders; body?: Buffer | string; timeoutMs?: number },
): Promise<RawResponse> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (res: RawResponse) => {
      if (!settled) {
        settled = true;
        resolve(res);
      }
    };
    const req = request({ host: '127.0.0.1', port, method: options.method, path: options.path, headers: options.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (err) => done({ status: 0, headers: {}, text: '', failure: err.message }));
    });
    req.on('error', (err) => done({ status: 0, headers: {}, text: '', failure: err.message }));
    req.setTimeout(options.timeoutMs ?? 10_000, () => req.destroy(new Error('client timeout')));
    if (options.body !== undefined) req.end(options.body);
    else req.end();
  });
}

/**
 * Bytes written straight to a TCP connection (for framing node:http's client refuses to send); the first
 * response on the connection is parsed (Content-Length, chunks, or until close). `halfClose` ends the
 * client's side after the bytes, which is how a body shorter than its Content-Length is made to end; node:http
 * drops requests still in flight when the client half-closes, so complete requests are sent without it.
 */
export function rawSocket(port: number, bytes: Buffer | string, options: { halfClose?: boolean; timeoutMs?: number; head?: boolean } = {}): Promise<RawResponse> {
  const timeoutMs = options.timeoutMs ?? 5000;
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (failure?: string) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(parseRawResponse(Buffer.concat(chunks), options.head ?? false, failure));
    };
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      const parsed = parseRawResponse(Buffer.concat(chunks), options.head ?? false);
      if (parsed.status !== 0 && parsed.complete) finish();
    });
    socket.on('close', () => finish());
    socket.on('error', (err) => finish(err.message));
    socket.setTimeout(timeoutMs, () => finish('client timeout'));
    if (options.halfClose) socket.end(bytes);
    else socket.write(bytes);
  });
}

function parseRawResponse(data: Buffer, head: boolean, failure?: string): RawResponse & { complete: boolean } {
  let text = data.toString('latin1');
  // Interim responses (100 Continue) come before the real one.
  while (/^HTTP\/1\.[01] 1\d\d /.test(text) && text.includes('\r\n\r\n')) text = text.slice(text.indexOf('\r\n\r\n') + 4);
  const end = text.indexOf('\r\n\r\n');
  const line = /^HTTP\/1\.[01] (\d{3})/.exec(text);
  if (!line || end < 0) return { status: 0, headers: {}, text: '', failure: failure ?? (text.length ? `unparsable response ${JSON.stringify(text.slice(0, 80))}` : 'no response'), complete: false };
  const headers: Record<string, string> = {};
  for (const h of text.slice(0, end).split('\r\n').slice(1)) {
    const i = h.indexOf(':');
    if (i > 0) headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
  }
  let body = text.slice(end + 4);
  let complete = true;
  const status = Number(line[1]);
  // No body: the answer to HEAD, a 204 or a 304.
  if (head || status === 204 || status === 304) return { status, headers, text: '', complete };
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    complete = Buffer.byteLength(body, 'latin1') >= length;
    body = body.slice(0, length);
  } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    let out = '';
    let rest = body;
    complete = false;
    for (;;) {
      const nl = rest.indexOf('\r\n');
      if (nl < 0) break;
      const size = parseInt(rest.slice(0, nl), 16);
      if (Number.isNaN(size)) break;
      if (size === 0) {
        complete = true;
        break;
      }
      out += rest.slice(nl + 2, nl + 2 + size);
      rest = rest.slice(nl + 2 + size + 2);
    }
    body = out;
  } else complete = false;
  return { status, headers, text: Buffer.from(body, 'latin1').toString('utf8'), complete };
}

/** What is wrong with an error answer (contract §7: `{"error": "<non-empty message>"}` as JSON), or undefined. */
export function errorShapeProblem(res: RawResponse): string | undefined {
  const type = String(res.headers['content-type'] ?? '');
  if (!type.startsWith('application/json')) return `Content-Type ${JSON.stringify(type)}, not application/json`;
  let body: unknown;
  try {
    body = JSON.parse(res.text);
  } catch {
    return 'body is not JSON';
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'body is not an object';
  const keys = Object.keys(body);
  if (keys.length !== 1 || keys[0] !== 'error') return `body keys are ${JSON.stringify(keys)}, not ["error"]`;
  const message = (body as { error: unknown }).error;
  if (typeof message !== 'string' || message.length === 0) return 'error is not a non-empty string';
  if (/\bat (?:.+ \()?(?:file:\/\/)?[\w./\\-]+\.[cm]?[jt]s:\d+:\d+|node_modules|node:internal|\.ts:\d+|\bknex\b|sqlite|syntax to use near|\bER_[A-Z_]+|SQLITE_[A-Z]+|\bselect\b.+\bfrom\b/i.test(message)) return 'error leaks internals';
  return undefined;
}

/** A started server whose log lines (pino JSON, level `info` and up by default) are kept for assertions. */
export interface LoggedServer {
  api: Api;
  port: number;
  grpcPort: number;
  server: RunningServer;
  database: TestDatabase;
  /** Every log line so far, parsed. */
  logs: Array<Record<string, any>>;
  close(): Promise<void>;
}

export async function startLoggedServer(engine: Engine, overrides: ConfigOverrides = {}, level = 'info', now?: () => number): Promise<LoggedServer> {
  const database = await engine.createDatabase();
  const logs: Array<Record<string, any>> = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n')) if (line.trim()) logs.push(JSON.parse(line));
      callback();
    },
  });
  const server = await startServer(testConfig(database.url, overrides), { logger: createLogger(level, sink), now });
  return {
    api: new Api(`http://127.0.0.1:${server.httpPort}`),
    port: server.httpPort,
    grpcPort: server.grpcPort,
    server,
    database,
    logs,
    close: async () => {
      await server.close();
      await database.drop();
    },
  };
}

/** Log lines at error or above, or carrying a stack trace: none may come from a client's bad input. */
export const alarmingLogLines = (logs: Array<Record<string, any>>) =>
  logs.filter((l) => ['error', 'fatal'].includes(l.level) || JSON.stringify(l).includes('"stack"'));
