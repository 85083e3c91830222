import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Express, Response } from 'express';
import type { HttpContext } from './context.js';
import { errorResponse, sendError } from './errors.js';
import type { Principal } from '../auth/authorizer.js';
import { checkConsumeOfBody, checkConsumeOfMessage, checkWriteOfBody } from './middleware/auth.js';
import { logRequest, requestIdOf } from './middleware/request-context.js';
import { sendJson } from './respond.js';
import { ackOne, dequeueOf, enqueueOne } from './routes/messages.js';
import { assertKnownFields, assertObjectBody } from './validation.js';

/**
 * The three hot message routes (enqueue, dequeue, ack by id) served straight from node:http, in front of the
 * express app. Express's router, request/response decoration and generic error path cost about as much CPU
 * per request as the work itself at thousands of requests per second (measured with `npm run bench`).
 *
 * This is the same pipeline as the routes' express chains (route-table.ts), step for step and through the
 * same functions: authentication (`ctx.auth.authenticate`, 401 before any body error), the object check,
 * the grant check (middleware/auth.ts), the unknown-field check, validation, the domain call, the response
 * body, the error table, the request id, the route label, the metrics and the access log. It serves with
 * auth on and off alike. Only the plain case is taken here: POST to the exact path, an identity-encoded body
 * with a Content-Length within the single-body limit and a UTF-8 (or no) charset. Everything else (other
 * methods and paths, query strings, trailing slashes, %-encoding, chunked or compressed bodies) goes to
 * express untouched, so its 404/405/413/415 answers stay the only ones.
 */

type HotRoute = {
  template: string;
  /** The route's grant check, as its express chain runs it (after the object check, before the unknown-field check). */
  authorize: (ctx: HttpContext, principal: Principal | null, body: unknown) => void | Promise<void>;
  handle: (ctx: HttpContext, body: unknown, res: ServerResponse) => Promise<void>;
};

const ENQUEUE: HotRoute = {
  template: '/api/messages',
  authorize: checkWriteOfBody,
  handle: async (ctx, body, res) => sendJson(res, 201, await enqueueOne(ctx, body)),
};

const DEQUEUE: HotRoute = {
  template: '/api/messages/dequeue',
  authorize: checkConsumeOfBody,
  handle: async (ctx, body, res) => sendJson(res, 200, await dequeueOf(ctx, body)),
};

/** Express's `:id` is `[^/]+`, decoded; ids needing decoding are left to express. */
const ACK_PATH = /^\/api\/messages\/([^/%?]+)\/ack$/;

function ackRoute(id: string): HotRoute {
  return {
    template: '/api/messages/:id/ack',
    authorize: (ctx, principal, body) => checkConsumeOfMessage(ctx, principal, id, body),
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
    const route = hotRoute(req);
    if (route === undefined || !plainBody(req, singleBodyLimit)) {
      app(req, res);
      return;
    }
    const started = process.hrtime.bigint();
    const id = requestIdOf(req.headers['x-request-id'] as string | undefined);
    let child: HttpContext['logger'] | undefined;
    const log = () => (child ??= ctx.logger.child({ reqId: id }));
    res.setHeader('X-Request-Id', id);
    // As express's prelude labels it, whatever the outcome.
    const label = route.template;
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
    // Started at once, as express's prelude does before reading the body; its 401 wins over any body error.
    const principal = ctx.auth.authenticate(req.headers.authorization);
    principal.catch(() => undefined);
    req.on('end', () => {
      if (done) return;
      done = true;
      serve(route, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).catch((err: unknown) => sendFailure(req, res, err, log));
    });

    // The steps of route-table.ts's chain, in its order: parse and object check, grants, unknown fields, handler.
    async function serve(hot: HotRoute, raw: Buffer): Promise<void> {
      const caller = await principal;
      const body = parseJson(raw);
      assertObjectBody(body);
      await hot.authorize(ctx, caller, body);
      assertKnownFields(`POST ${hot.template}`, body);
      await hot.handle(ctx, body, res);
    }
  };
}
