import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Express, Response } from 'express';
import type { HttpContext } from './context.js';
import { errorResponse, sendError } from './errors.js';
import { logRequest, requestIdOf } from './middleware/request-context.js';
import { sendJson } from './respond.js';
import { ackOne, dequeueOf, enqueueOne } from './routes/messages.js';
import { assertKnownFields, assertObjectBody } from './validation.js';

/**
 * The three hot message routes (enqueue, dequeue, ack by id) served straight from node:http, in front of the
 * express app. Express's router, request/response decoration and body-parser stack cost about as much CPU
 * per request as the work itself at thousands of requests per second (measured with `npm run bench`).
 *
 * Only the plain case is taken here: POST to the exact path, auth disabled, an identity-encoded body with a
 * Content-Length within the single-body limit and a UTF-8 (or no) charset. Everything else (other methods and
 * paths, query strings, trailing slashes, %-encoding, chunked or compressed bodies, bearer tokens) goes to
 * express untouched, so its 404/405/413/415/400 answers and auth stay the only ones. The validation, domain
 * call, response body, error table, request id, route label and access log are the ones express uses.
 */

type HotRoute = { template: string; handle: (ctx: HttpContext, body: unknown, res: ServerResponse) => Promise<void> };

const ENQUEUE: HotRoute = {
  template: '/api/messages',
  handle: async (ctx, body, res) => sendJson(res, 201, await enqueueOne(ctx, body)),
};

const DEQUEUE: HotRoute = {
  template: '/api/messages/dequeue',
  handle: async (ctx, body, res) => sendJson(res, 200, await dequeueOf(ctx, body)),
};

/** Express's `:id` is `[^/]+`, decoded; ids needing decoding are left to express. */
const ACK_PATH = /^\/api\/messages\/([^/%?]+)\/ack$/;

function ackRoute(id: string): HotRoute {
  return {
    template: '/api/messages/:id/ack',
    handle: async (ctx, body, res) => {
      await ackOne(ctx, id, body);
      res.statusCode = 204;
      res.end();
    },
  };
}

function hotRoute(req: IncomingMessage): HotRoute | undefined {
  if (req.method !== 'POST') return undefined;
  const url = req.url;
  if (url === '/api/messages') return ENQUEUE;
  if (url === '/api/messages/dequeue') return DEQUEUE;
  if (url === undefined || !url.endsWith('/ack')) return undefined;
  const match = ACK_PATH.exec(url);
  return match ? ackRoute(match[1]) : undefined;
}

/** A body the fast path can read exactly as body-parser would (see app.ts: JSON whatever the Content-Type). */
function plainBody(req: IncomingMessage, limit: number): boolean {
  const { headers } = req;
  if (headers['transfer-encoding'] !== undefined) return false;
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return false;
  const length = headers['content-length'];
  if (length === undefined || !/^\d{1,10}$/.test(length) || Number(length) > limit) return false;
  const type = headers['content-type'];
  return type === undefined || !/charset/i.test(type) || /;\s*charset="?utf-8"?\s*$/i.test(type);
}

const PARSE_FAILED = { type: 'entity.parse.failed', status: 400 };
const ABORTED = { type: 'request.aborted', status: 400 };

/** body-parser's JSON (not strict, see app.ts): empty is {}, otherwise any JSON value; a UTF-8 BOM is dropped. */
function parseJson(raw: Buffer): unknown {
  let text = raw.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length === 0) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw PARSE_FAILED;
  }
}

export function withFastPath(ctx: HttpContext, app: Express, singleBodyLimit: number): RequestListener {
  /** Errors answer through express's own response object, so headers and body match the error handler's. */
  function sendFailure(req: IncomingMessage, res: ServerResponse, err: unknown, log: () => HttpContext['logger']): void {
    const { status, message, retryAfter } = errorResponse(err, log());
    Object.setPrototypeOf(req, app.request);
    Object.setPrototypeOf(res, app.response);
    const expressRes = res as unknown as Omit<Response, 'req'> & { req: unknown };
    (req as unknown as { res: ServerResponse }).res = res;
    expressRes.req = req;
    expressRes.locals ??= {};
    if (retryAfter !== undefined && !res.headersSent) res.setHeader('Retry-After', retryAfter);
    sendError(expressRes as unknown as Response, status, message);
  }

  return (req, res) => {
    const route = ctx.auth.enabled ? undefined : hotRoute(req);
    if (route === undefined || !plainBody(req, singleBodyLimit)) {
      app(req, res);
      return;
    }
    const started = process.hrtime.bigint();
    const id = requestIdOf(req.headers['x-request-id'] as string | undefined);
    let child: HttpContext['logger'] | undefined;
    const log = () => (child ??= ctx.logger.child({ reqId: id }));
    res.setHeader('X-Request-Id', id);
    // A body that never became a request is labelled as express labels it: no route matched yet.
    let label = 'unmatched';
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      ctx.metrics.httpRequest({ method: 'POST', route: label, status: String(res.statusCode) }, seconds);
      if (res.statusCode >= 400 || ctx.logger.isLevelEnabled('debug')) logRequest(log(), 'POST', label, res.statusCode, seconds);
    });

    const chunks: Buffer[] = [];
    let done = false;
    const fail = () => {
      if (done) return;
      done = true;
      sendFailure(req, res, ABORTED, log);
    };
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', fail);
    req.on('aborted', fail);
    req.on('end', () => {
      if (done) return;
      done = true;
      let body: unknown;
      try {
        // As express: parse, then the object check (app.ts) before any route matched, then the route's
        // unknown-field check (route-table.ts) under the route's label.
        body = parseJson(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
        assertObjectBody(body);
        label = route.template;
        assertKnownFields(`POST ${route.template}`, body);
      } catch (err) {
        sendFailure(req, res, err, log);
        return;
      }
      route.handle(ctx, body, res).catch((err: unknown) => sendFailure(req, res, err, log));
    });
  };
}
