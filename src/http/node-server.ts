import { createServer, STATUS_CODES, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { SecureContextOptions } from 'node:tls';
import type { Duplex } from 'node:stream';
import { RAW_SECURITY_HEADERS, setSecurityHeaders } from './security-headers.js';

/**
 * The node:http server of the API (app.ts), so that the answers node:http would give by
 * itself follow the API's error shape too (`{"error": "..."}` as application/json): a request it cannot
 * parse (bad framing, a Content-Length that disagrees with the body, an unknown method, a control character
 * in a header: 400; headers over server.http_max_header_bytes: 431; too slow: 408; limits.ts applies those), a CONNECT request (405), an `Expect` header
 * other than 100-continue (417) and an HTTP/1.1 request without a Host header (400). Left alone, node:http
 * answers those with an empty body or just closes the connection.
 */
export function createHttpServer(listener: RequestListener, tls?: HttpTls, classes?: RequestClasses): Server {
  // Host is checked below, so that the 400 has a body; node's own check answers an empty one.
  const options = { ...classes, keepAliveTimeout: 65_000, requireHostHeader: false };
  const handle: RequestListener = (req, res) => {
    // Here, before anything can answer, so every response of the port carries them (security-headers.ts).
    setSecurityHeaders(res);
    if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) {
      res.shouldKeepAlive = false;
      return sendPlainError(res, 400, 'an HTTP/1.1 request needs a Host header');
    }
    listener(req, res);
  };
  const server = tls ? createTlsServer(options, handle, tls) : createServer(options, handle);
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW' ? 413 : 400;
    const message = status === 431 ? 'request headers too large' : status === 408 ? 'request timed out' : 'malformed HTTP request';
    // Bytes that follow a complete request on the same connection (a body longer than its Content-Length,
    // garbage after a request) fail to parse while that request is still at work. Its own answer goes first:
    // a 400 written now would read as the answer to a request that went on to take effect. (A request whose
    // own body failed to parse, cut short or badly chunked, is the one this 400 answers.)
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (inFlight && !inFlight.writableFinished && inFlight.req?.complete) {
      inFlight.once('finish', () => writeRawError(socket, status, message));
      return;
    }
    writeRawError(socket, status, message);
  });
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => writeRawError(socket, 405, 'method CONNECT not allowed'));
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) =>
    sendPlainError(res, 417, `unsupported Expect header ${JSON.stringify(String(req.headers.expect).slice(0, 100))}; only 100-continue is supported`),
  );
  return server;
}

/** The classes node:http creates the port's requests and responses with (request.ts, requestClasses). */
export type RequestClasses = { IncomingMessage: typeof IncomingMessage; ServerResponse: typeof ServerResponse };

/** TLS of the port: the first certificate, key and client CA, and every later set (rotation). */
export interface HttpTls {
  options: SecureContextOptions & { requestCert: boolean; rejectUnauthorized: boolean; handshakeTimeout: number };
  onChange(apply: (options: SecureContextOptions) => void): void;
}

/**
 * node:https is node:http over TLS sockets: the same options, request handling and events ('clientError',
 * 'connect', 'checkExpectation' below apply unchanged). A rotated certificate becomes the context of new
 * connections through setSecureContext; established ones keep theirs. A plaintext request fails the handshake
 * and node closes the socket.
 */
function createTlsServer(options: object, handle: RequestListener, tls: HttpTls): Server {
  const server = createHttpsServer({ ...options, ...tls.options }, handle);
  tls.onChange((next) => server.setSecureContext(next));
  // The type of https.Server is not declared as an http.Server, though it is one to everything used here.
  return server as unknown as Server;
}

function sendPlainError(res: ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ error: message });
  setSecurityHeaders(res);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function writeRawError(socket: Duplex, status: number, message: string): void {
  if (!socket.writable) return;
  const body = JSON.stringify({ error: message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${RAW_SECURITY_HEADERS}Connection: close\r\n\r\n${body}`,
  );
}
