import { STATUS_CODES, type Server } from 'node:http';
import { Server as TlsServer } from 'node:tls';
import type { Socket } from 'node:net';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import { RAW_SECURITY_HEADERS } from './security-headers.js';

/** What one HTTP listener lets a client hold (server.http_* keys; docs/security.md, Limits). */
export interface HttpLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
  maxHeaderBytes: number;
}

export function httpLimitsOf(server: Config['server']): HttpLimits {
  return {
    headersTimeoutMs: server.http_headers_timeout * 1000,
    requestTimeoutMs: server.http_request_timeout * 1000,
    keepAliveTimeoutMs: server.http_keep_alive_timeout * 1000,
    maxConnections: server.http_max_connections,
    maxHeaderBytes: server.http_max_header_bytes,
  };
}

/** How long a refused connection may stay open for the client to read its 503. */
const REFUSED_LINGER_MS = 1000;
const REFUSAL_LOG_INTERVAL_MS = 30_000;

/**
 * Applies the limits to a node:http or node:https server before it listens (both read these properties per
 * connection, and the checking interval at listen time). Answers: headers over the limit 431, a request not
 * received in time 408 (both through the server's clientError handler), a connection over the cap 503.
 */
export function applyHttpLimits(server: Server, limits: HttpLimits, logger?: Logger): void {
  // Read per connection and at listen time, though only the createServer options are typed.
  const untyped = server as Server & { maxHeaderSize: number; connectionsCheckingInterval: number };
  untyped.maxHeaderSize = limits.maxHeaderBytes;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // node:http refuses a headers timeout above the request timeout; the configuration check says so first.
  server.requestTimeout = limits.requestTimeoutMs;
  server.headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  // node:http looks for overdue requests only this often (30 s by default), so a timeout could fire that late.
  untyped.connectionsCheckingInterval = Math.min(1000, Math.max(50, Math.floor(server.headersTimeout / 10)));
  limitConnections(server, limits.maxConnections, logger);
}

/**
 * At most `max` open connections. node's own server.maxConnections drops one more without a word; here it
 * is told why (503, Retry-After, Connection: close) and closed, without reaching the HTTP parser, so its
 * request is never served. Counted where node:http takes a connection over: a TCP connection (http) or a
 * finished TLS handshake (https), so the answer is readable either way.
 */
function limitConnections(server: Server, max: number, logger?: Logger): void {
  const event = server instanceof TlsServer ? 'secureConnection' : 'connection';
  const listeners = server.listeners(event) as Array<(socket: Socket) => void>;
  server.removeAllListeners(event);
  let open = 0;
  const report = refusalReporter(max, logger);
  server.on(event, (socket: Socket) => {
    if (open >= max) {
      report();
      return refuse(socket);
    }
    open++;
    socket.once('close', () => open--);
    for (const listener of listeners) listener.call(server, socket);
  });
}

function refuse(socket: Socket): void {
  socket.on('error', () => {});
  // Read and drop what the client sends: closing with unread bytes would reset the connection, and the client
  // could lose the answer.
  socket.resume();
  const linger = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
  socket.once('close', () => clearTimeout(linger));
  const body = JSON.stringify({ error: 'too many open connections; retry later' });
  socket.end(
    `HTTP/1.1 503 ${STATUS_CODES[503]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Retry-After: 1\r\n${RAW_SECURITY_HEADERS}Connection: close\r\n\r\n${body}`,
  );
}

/** One warning when refusals start, then at most one every 30 s with how many there were meanwhile. */
function refusalReporter(max: number, logger?: Logger): () => void {
  let lastLogged = 0;
  let unlogged = 0;
  return () => {
    unlogged++;
    const now = Date.now();
    if (!logger || now - lastLogged < REFUSAL_LOG_INTERVAL_MS) return;
    logger.warn({ maxConnections: max, refused: unlogged }, 'HTTP connection limit reached; refusing new connections (server.http_max_connections)');
    lastLogged = now;
    unlogged = 0;
  };
}
