import { STATUS_CODES } from 'node:http';
import type { ServerResponse } from 'node:http';
import { DomainError, type DomainErrorCode } from '../queue/errors.js';
import { isConnectionError } from '../store/dialect.js';
import { DATABASE_BUSY_MESSAGE, isDatabaseBusy } from '../store/retry.js';
import type { Logger } from '../log/logger.js';
import type { ApiRequest, Handler } from './request.js';
import { MAX_JSON_CONTAINERS } from './body-reader.js';
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

/** zlib and brotli failures (`Z_DATA_ERROR`, `Z_BUF_ERROR`, `ERR_BROTLI_…`, `ERR__ERROR_FORMAT_…`): a body that does not decompress. */
const isDecompressionError = (err: { code?: unknown }) => typeof err.code === 'string' && /^(Z_|ERR_BROTLI|ERR__)/.test(err.code);

/**
 * Errors raised while reading a request body (body-parser, raw-body, zlib): each carries a 4xx `status` or
 * `statusCode`, and every one of them is the client's fault, so it is answered with that status, never a 500.
 * body-parser names most with a `type`; a body that fails to decompress has none (body-parser sets status 400
 * on zlib's own error). Their messages can quote the body or name internals, so the texts here are ours.
 */
function bodyReadError(err: { type?: unknown; status?: unknown; statusCode?: unknown; code?: unknown }): [number, string] | undefined {
  const status = typeof err.status === 'number' ? err.status : err.statusCode;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 499) return undefined;
  switch (err.type) {
    case 'entity.parse.failed':
      return [400, 'malformed JSON body'];
    case 'entity.too.large':
      return [413, 'request body too large'];
    case 'entity.too.complex':
      return [413, `request body holds more than ${MAX_JSON_CONTAINERS.toLocaleString('en-US')} objects and arrays`];
    case 'encoding.unsupported':
      return [415, 'unsupported Content-Encoding; send the body as identity, gzip, deflate or br'];
    case 'charset.unsupported':
      return [415, 'unsupported charset; send UTF-8 JSON'];
    case 'request.aborted':
      return [400, 'request aborted'];
    case 'request.size.invalid':
      return [400, 'request body size does not match Content-Length'];
  }
  if (isDecompressionError(err)) return [400, 'request body could not be decompressed; check Content-Encoding'];
  if (status === 413) return [413, 'request body too large'];
  if (status === 415) return [415, 'unsupported media type'];
  return [status, status === 400 ? 'invalid request body' : (STATUS_CODES[status] ?? 'bad request').toLowerCase()];
}

/**
 * Status, message and Retry-After for any error a route or its body reader (body-reader.ts) may raise: every
 * error answer of the API goes through this one mapping (answerError below).
 */
export function errorResponse(err: unknown, log: Logger): { status: number; message: string; retryAfter?: string } {
  if (err instanceof DomainError) {
    const retry = err.details.retryAfterSeconds;
    return { status: STATUS_OF[err.code], message: err.message, retryAfter: retry === undefined ? undefined : String(retry) };
  }
  // The router throws a URIError (status 400) for a path parameter with broken %-encoding, e.g. /api/topics/%ZZ/purge.
  if (err instanceof URIError) return { status: 400, message: 'malformed percent-encoding in the URL path' };
  const read = typeof err === 'object' && err !== null ? bodyReadError(err) : undefined;
  if (read) return { status: read[0], message: read[1] };
  // Conflicts, lock waits or a Galera node not ready that outlasted the store's retries: the client may retry.
  if (isDatabaseBusy(err)) {
    log.warn({ err }, 'database busy');
    return { status: 503, message: DATABASE_BUSY_MESSAGE, retryAfter: '1' };
  }
  if (isConnectionError(err)) {
    log.error({ err }, 'database unavailable');
    return { status: 503, message: 'database unavailable' };
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
