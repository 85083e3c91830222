import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Logger } from '../../log/logger.js';
import type { HttpContext } from '../context.js';
import type { ApiRequest } from '../request.js';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's X-Request-Id when it is sane, else a new UUID. */
export function requestIdOf(header: string | undefined): string {
  return header && CLIENT_REQUEST_ID.test(header) ? header : randomUUID();
}

/**
 * The level of a request's access line: successes at debug (at thousands of requests per second info-level
 * access logs cost more than the work); client errors at info, except the ones an operator may want to
 * watch (401 and 403: someone without the right token; 429: a client being throttled) at warn; 5xx at error.
 */
export function requestLogLevel(status: number): 'debug' | 'info' | 'warn' | 'error' {
  if (status >= 500) return 'error';
  if (status === 401 || status === 403 || status === 429) return 'warn';
  if (status >= 400) return 'info';
  return 'debug';
}

/**
 * One access line: method, route template (never the raw path or query string, which may hold keys or
 * secrets), status and duration; the request id comes with `log` (a child logger). Never headers or bodies.
 */
export function logRequest(log: Logger, method: string, route: string, status: number, seconds: number): void {
  const level = requestLogLevel(status);
  if (!log.isLevelEnabled(level)) return;
  log[level]({ method, route, status, ms: Math.round(seconds * 1e4) / 10 }, status >= 500 ? 'request failed' : status >= 400 ? 'request rejected' : 'request');
}

/**
 * The first step of every request: its id (the client's X-Request-Id when it is sane, else a new UUID), its
 * logger (a child carrying the id, made when something first logs: most requests never do), and, when the
 * answer is sent, the duration histogram and the access line, labelled with the route template that took
 * the request (also when it refused it before its handler: 401, 400 for the body), never the raw path
 * (bounded cardinality); `unmatched` when no route did.
 */
export function beginRequest(ctx: HttpContext, req: ApiRequest, res: ServerResponse): void {
  const started = process.hrtime.bigint();
  const id = requestIdOf(req.headers['x-request-id'] as string | undefined);
  req.begin(id, ctx.logger);
  res.setHeader('X-Request-Id', id);
  res.on('finish', () => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const method = req.method ?? 'GET';
    // Express's router sets the route it dispatched to; its path is the template.
    const route = (req.route as { path?: string } | undefined)?.path ?? 'unmatched';
    ctx.metrics.httpRequest(method, route, res.statusCode, seconds);
    if (ctx.logger.isLevelEnabled(requestLogLevel(res.statusCode))) logRequest(req.log, method, route, res.statusCode, seconds);
  });
}
