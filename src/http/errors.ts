import type { ServerResponse } from 'node:http';
import { DomainError, type DomainErrorCode } from '../queue/errors.js';
import { DATABASE_BUSY_MESSAGE, DATABASE_UNAVAILABLE_MESSAGE, DatabaseBusy, DatabaseUnavailable } from '../store/errors.js';
import type { Logger } from '../log/logger.js';
import type { ApiRequest, Handler } from './request.js';
import { BodyError } from './body-errors.js';
import { sendJsonText } from './respond.js';

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

export function sendError(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) return;
  sendJsonText(res, status, JSON.stringify({ error: message }));
}

/**
 * Status, message and Retry-After for any error a route or its body reader (body-reader.ts) may raise: every
 * error answer of the API goes through this one table (answerError below).
 */
export function errorResponse(err: unknown, log: Logger): { status: number; message: string; retryAfter?: string } {
  if (err instanceof DomainError) {
    const retry = err.details.retryAfterSeconds;
    return { status: STATUS_OF[err.code], message: err.message, retryAfter: retry === undefined ? undefined : String(retry) };
  }
  if (err instanceof BodyError) return { status: err.status, message: err.message };
  // The router fails a match with a URIError for a path parameter with broken %-encoding, e.g. /api/topics/%ZZ/purge.
  if (err instanceof URIError) return { status: 400, message: 'malformed percent-encoding in the URL path' };
  // The store's typed errors (src/store/errors.ts). Busy: conflicts, lock waits or a Galera node not ready
  // that outlasted the store's retries; the client may retry.
  if (err instanceof DatabaseBusy) {
    log.warn({ err }, 'database busy');
    return { status: 503, message: DATABASE_BUSY_MESSAGE, retryAfter: String(err.retryAfterSeconds) };
  }
  if (err instanceof DatabaseUnavailable) {
    log.error({ err }, 'database unavailable');
    return { status: 503, message: DATABASE_UNAVAILABLE_MESSAGE };
  }
  // Never database text or a stack trace in a body: log it, answer a generic 500.
  log.error({ err }, 'unhandled error');
  return { status: 500, message: 'internal error' };
}

/** The answer to an error that ended a route's chain. */
export function answerError(err: unknown, req: ApiRequest, res: ServerResponse): void {
  const { status, message, retryAfter } = errorResponse(err, req.log);
  if (retryAfter !== undefined && !res.headersSent) res.setHeader('Retry-After', retryAfter);
  sendError(res, status, message);
}

export const notFoundHandler: Handler = (_req, res) => sendError(res, 404, 'not found');

export function methodNotAllowed(allowed: string[]): Handler {
  const allow = [...allowed, ...(allowed.includes('GET') ? ['HEAD'] : [])].join(', ');
  return (req, res) => {
    res.setHeader('Allow', allow);
    sendError(res, 405, `method ${req.method} not allowed; allowed: ${allow}`);
  };
}
