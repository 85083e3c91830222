import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { parse as parseQueryString } from 'node:querystring';
import express from 'express';
import parseUrl from 'parseurl';
import type { HttpContext } from './context.js';
import { invalid } from '../queue/errors.js';
import { answerError, notFoundHandler, sendError } from './errors.js';
import { pathNeedsToken } from './middleware/auth.js';
import { beginRequest } from './middleware/request-context.js';
import { ROUTER_ORDER } from './operations.js';
import { expressSteps, requestClasses, type ApiRequest, type Handler } from './request.js';
import { authenticate, registerOperations } from './router.js';
import { isTraced, traceHttpRequest } from './tracing.js';
import { loadUiAssets } from './ui-assets.js';
import { mountSqs } from '../sqs/mount.js';

export { BATCH_BODY_LIMIT, singleBodyLimit } from './body-limits.js';

/**
 * The query's parameters, or null when a percent-escape in it does not decode as UTF-8 (`%ZZ`, a lone `%`, or
 * `%ED%A0%80`, a surrogate): Node's own decoding would read such an escape as U+FFFD or leave it as typed, and
 * answer for a different value than the client sent; refused (400) as in the path.
 */
function parseQuery(query: string): Record<string, string | string[]> | null {
  let malformed = false;
  // querystring falls back to its lenient decoding when the decoder throws: noted here instead.
  const strictly = (text: string) => {
    try {
      return decodeURIComponent(text);
    } catch {
      malformed = true;
      return text;
    }
  };
  const parsed = parseQueryString(query, '&', '=', { decodeURIComponent: strictly }) as Record<string, string | string[]>;
  return malformed ? null : parsed;
}

/** The HTTP port's request handling, and the classes its server must create requests and responses with. */
export interface HttpApp {
  listener: RequestListener;
  classes: ReturnType<typeof requestClasses>;
}

/**
 * The HTTP API and the admin UI's files, on express: one pipeline for every request, with auth on and off.
 * Before express sees a request, its context (id, access log, duration metric labelled with the route
 * template) and its query (a broken %-escape is 400 on any path). Then express's router: every operation
 * (operations.ts, the message operations first), each with its own chain (router.ts); then the admin UI's
 * files, so an API path is never shadowed by a file; then 404, after authentication on the API's paths, so a
 * path that needs a token still says 401; errors end in the one error table (errors.ts).
 */
export function createApp(ctx: HttpContext): HttpApp {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const classes = requestClasses(app);
  registerOperations(app, ctx, ROUTER_ORDER);
  // After the operations, which is also why the OpenAPI comparison (router.ts, registeredRoutes) never sees it.
  mountSqs(app, ctx);
  const ui = loadUiAssets();
  const serveUi: Handler = (req, res, next) => {
    if (!ui.serve(req, res, req.path)) next();
  };
  const authenticateCaller = authenticate(ctx);
  const unmatched: Handler = (req, res, next) => {
    if (!ui.available && req.method === 'GET' && req.path === '/') return sendError(res, 404, 'the admin UI is not built; run npm run build');
    if (!ctx.auth.enabled || !pathNeedsToken(req.path)) return notFoundHandler(req, res, next);
    authenticateCaller(req, res, (err) => (err === undefined ? notFoundHandler(req, res, next) : next(err)));
  };
  app.use(...expressSteps([serveUi, unmatched]));
  app.use(((err, req, res, _next) => answerError(err, req as unknown as ApiRequest, res)) as express.ErrorRequestHandler);
  const handle = app as unknown as (req: IncomingMessage, res: ServerResponse, done: (err?: unknown) => void) => void;

  // One check per request: with tracing off, no span, no header read, no context (src/tracing/tracing.ts).
  const tracing = ctx.tracing?.enabled ? ctx.tracing : undefined;
  const listener: RequestListener = (incoming, res) => {
    if (tracing && isTraced(incoming.url)) traceHttpRequest(tracing, incoming as unknown as ApiRequest, res).run(() => serve(incoming, res));
    else serve(incoming, res);
  };
  const serve: RequestListener = (incoming, res) => {
    const req = incoming as unknown as ApiRequest;
    beginRequest(ctx, req, res);
    const url = parseUrl(incoming);
    if (url?.query) {
      const query = parseQuery(typeof url.query === 'string' ? url.query : '');
      if (query === null) return answerError(invalid('malformed percent-encoding in the URL query'), req, res);
      req.query = query;
    }
    handle(incoming, res, (err) => (err === undefined ? sendError(res, 404, 'not found') : answerError(err, req, res)));
  };
  return { listener, classes };
}
