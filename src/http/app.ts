import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { parse as parseQueryString } from 'node:querystring';
import parseUrl from 'parseurl';
import type { HttpContext } from './context.js';
import { invalid } from '../queue/errors.js';
import { answerError, notFoundHandler, sendError } from './errors.js';
import { beginRequest } from './middleware/request-context.js';
import type { ApiRequest, Handler, Next } from './request.js';
import { authenticated } from './route-table.js';
import { RouteTable } from './router.js';
import { auditLogRoutes } from './routes/audit-log.js';
import { authRoutes } from './routes/auth.js';
import { consumerGroupRoutes } from './routes/consumer-groups.js';
import { messageRoutes } from './routes/messages.js';
import { reaperRoutes } from './routes/reapers.js';
import { replayRoutes } from './routes/replay.js';
import { serviceRoutes } from './routes/service.js';
import { topicAdminRoutes } from './routes/topic-admin.js';
import { topicConfigRoutes } from './routes/topic-configs.js';
import { userRoutes } from './routes/users.js';
import { loadUiAssets } from './ui-assets.js';

export { BATCH_BODY_LIMIT, singleBodyLimit } from './body-limits.js';

/** Every route of the API, the hot message routes first (the table tries templates in order). */
export function apiRoutes(ctx: HttpContext): RouteTable {
  const table = new RouteTable();
  for (const register of [messageRoutes, authRoutes, serviceRoutes, topicConfigRoutes, topicAdminRoutes, consumerGroupRoutes, replayRoutes, reaperRoutes, userRoutes, auditLogRoutes]) {
    register(ctx, table);
  }
  return table;
}

/**
 * Runs a route's chain: each step gets `next`; an error passed to it, thrown or rejected goes to the error
 * table (errors.ts) and ends the chain.
 */
function runChain(chain: Handler[], req: ApiRequest, res: ServerResponse): void {
  let step = 0;
  const next: Next = (err?: unknown) => {
    if (err !== undefined) return answerError(err, req, res);
    const handler = chain[step++];
    if (handler === undefined) return;
    try {
      const result = handler(req, res, next) as Promise<unknown> | undefined;
      if (result !== undefined && typeof result.then === 'function') result.then(undefined, (e: unknown) => answerError(e, req, res));
    } catch (e) {
      answerError(e, req, res);
    }
  };
  next();
}

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

/**
 * The HTTP API and the admin UI's files: one pipeline for every request, with auth on and off. The request
 * context (id, access log, duration metric labelled with the route template) first, then the route table
 * (route-table.ts: each route's chain runs authentication, audit, body, grants, validation and the handler),
 * then the admin UI's files, then 404 (after authentication, so a path that needs a token still says 401).
 * The listener expects requests made as ApiRequest (node-server.ts creates its servers so).
 */
export function createApp(ctx: HttpContext): RequestListener {
  const table = apiRoutes(ctx);
  // The admin UI's files at `/`, after every API route: the API's paths are never shadowed by a file.
  const ui = loadUiAssets();
  const unmatched: Handler[] = [authenticated(ctx), notFoundHandler];
  return (incoming: IncomingMessage, res: ServerResponse) => {
    const req = incoming as ApiRequest;
    const url = parseUrl(req);
    const path = url?.pathname ?? '/';
    req.path = path;
    const query = url?.query ? parseQuery(typeof url.query === 'string' ? url.query : '') : undefined;
    if (query) req.query = query;
    const label = beginRequest(ctx, req, res);
    if (query === null) return answerError(invalid('malformed percent-encoding in the URL query'), req, res);
    let match;
    try {
      match = table.match(req.method ?? 'GET', path);
    } catch (err) {
      return answerError(err, req, res);
    }
    if (match !== undefined) {
      label.route = match.template;
      req.params = match.params;
      return runChain(match.chain, req, res);
    }
    if (ui.serve(req, res, path)) return;
    if (!ui.available && req.method === 'GET' && path === '/') return sendError(res, 404, 'the admin UI is not built; run npm run build');
    runChain(unmatched, req, res);
  };
}
