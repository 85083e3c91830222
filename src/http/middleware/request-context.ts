import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from '../../log/logger.js';
import type { MetricsRegistry } from '../../metrics/registry.js';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's X-Request-Id when it is sane, else a new UUID. */
export function requestIdOf(header: string | undefined): string {
  return header && CLIENT_REQUEST_ID.test(header) ? header : randomUUID();
}

export function logRequest(log: Logger, method: string, url: string, status: number, seconds: number): void {
  const entry = { method, url, status, ms: Math.round(seconds * 1e4) / 10 };
  // Access lines at debug: at thousands of requests per second info-level access logs cost more than the work.
  if (status >= 500) log.warn(entry, 'request failed');
  else log.debug(entry, 'request');
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
      logRequest(req.log, req.method, req.originalUrl, res.statusCode, seconds);
    });
    next();
  };
}
