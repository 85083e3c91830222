import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import { DomainError, type DomainErrorCode } from '../queue/errors.js';
import { isConnectionError } from '../store/dialect.js';

/** The one table from domain errors to HTTP status codes. */
const STATUS_OF: Record<DomainErrorCode, number> = {
  invalid_argument: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  schema_violation: 422,
  topic_not_registered: 422,
  failed_precondition: 422,
  queue_full: 429,
  rate_limited: 429,
  unavailable: 503,
};

export function sendError(res: Response, status: number, message: string): void {
  if (res.headersSent) return;
  res.status(status).type('application/json').send(JSON.stringify({ error: message }));
}

/** body-parser errors carry a `type`; their messages are safe but terse, so name them ourselves. */
function bodyParserError(err: { type?: string; status?: number }): [number, string] | undefined {
  switch (err.type) {
    case 'entity.parse.failed':
      return [400, 'malformed JSON body'];
    case 'entity.too.large':
      return [413, 'request body too large'];
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return [415, 'unsupported body encoding; send UTF-8 JSON'];
    case 'request.aborted':
      return [400, 'request aborted'];
    default:
      return err.type && err.status && err.status < 500 ? [err.status, 'invalid request body'] : undefined;
  }
}

export function errorHandler(): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (err instanceof DomainError) {
      if (err.details.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.details.retryAfterSeconds));
      return sendError(res, STATUS_OF[err.code], err.message);
    }
    const parsed = bodyParserError(err);
    if (parsed) return sendError(res, parsed[0], parsed[1]);
    // The router throws a URIError (status 400) for a path parameter with broken %-encoding, e.g. /api/topics/%ZZ/purge.
    if (err instanceof URIError) return sendError(res, 400, 'malformed percent-encoding in the URL path');
    if (isConnectionError(err)) {
      req.log.error({ err }, 'database unavailable');
      return sendError(res, 503, 'database unavailable');
    }
    // Never database text or a stack trace in a body: log it, answer a generic 500.
    req.log.error({ err }, 'unhandled error');
    sendError(res, 500, 'internal error');
  };
}

export const notFoundHandler: RequestHandler = (_req, res) => sendError(res, 404, 'not found');

export function methodNotAllowed(allowed: string[]): RequestHandler {
  const allow = [...allowed, ...(allowed.includes('GET') ? ['HEAD'] : [])].join(', ');
  return (req: Request, res: Response) => {
    res.setHeader('Allow', allow);
    sendError(res, 405, `method ${req.method} not allowed; allowed: ${allow}`);
  };
}
