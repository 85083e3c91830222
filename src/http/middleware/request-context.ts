import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from '../../log/logger.js';
import type { MetricsRegistry } from '../../metrics/registry.js';

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

interface RouterLayer {
  route?: { path: unknown };
  rawPath?: unknown;
  /** A layer mounted at '/' (app.use(router)): matches every path without its matchers. */
  slash?: boolean;
  matchers?: Array<(path: string) => { path: string } | false>;
  handle?: { stack?: RouterLayer[] };
}

/**
 * The route template a path would have matched, for requests answered before routing (401 and 403 from the
 * authentication middleware, body-parser errors): the express router's own matchers, which are pure
 * functions, walked through mounted routers. 'unmatched' when no route has that path (or the router's
 * internals differ from what this expects).
 */
export function routeTemplateOf(stack: RouterLayer[] | undefined, path: string, prefix = ''): string | undefined {
  for (const layer of stack ?? []) {
    const matched = layer.slash ? { path: '' } : layer.matchers?.map((m) => m(path)).find(Boolean);
    if (!matched) continue;
    if (layer.route) return `${prefix}${String(layer.route.path)}`;
    if (layer.handle?.stack) {
      const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
      const found = routeTemplateOf(layer.handle.stack, path.slice(matched.path.length) || '/', `${prefix}${mount}`);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * Request id (the client's X-Request-Id when it is sane, else a new UUID), a child logger carrying it, and
 * the duration histogram labelled with the route template, never the raw path (bounded cardinality).
 */
export function requestContext(logger: Logger, metrics: MetricsRegistry): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    req.id = requestIdOf(req.get('x-request-id'));
    req.log = logger.child({ reqId: req.id });
    res.setHeader('X-Request-Id', req.id);
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
      metrics.httpRequest({ method: req.method, route, status: String(res.statusCode) }, seconds);
      if (!req.log.isLevelEnabled(requestLogLevel(res.statusCode))) return;
      let logged = route;
      if (route === 'unmatched') {
        try {
          logged = routeTemplateOf((req.app as unknown as { router?: { stack?: RouterLayer[] } }).router?.stack, req.path) ?? route;
        } catch {
          // keep 'unmatched'
        }
      }
      logRequest(req.log, req.method, logged, res.statusCode, seconds);
    });
    next();
  };
}
