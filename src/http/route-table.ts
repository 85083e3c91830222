import { AUDITED_ROUTES } from './audited-routes.js';
import { BATCH_BODY_LIMIT, singleBodyLimit } from './body-limits.js';
import { readJsonBody } from './body-reader.js';
import type { HttpContext } from './context.js';
import { methodNotAllowed } from './errors.js';
import { auditRecorder } from './middleware/audit.js';
import { needsToken } from './middleware/auth.js';
import type { Handler } from './request.js';
import type { Method, RouteTable } from './router.js';
import { assertKnownFields, assertObjectBody } from './validation.js';

/** Every `METHOD /template` ever registered through route(): test/openapi.test.ts compares them with the OpenAPI document. */
export const registeredRoutes = new Set<string>();

/**
 * The request pipeline of every route. Each route's chain starts with the same steps, in this order:
 * authentication (401 before anything else; the principal for the grants), the audit record
 * (so a refused change is recorded too), the body (read, decompressed, limited and parsed here, with the
 * route's own limit), the object check; then the route's grant checks, the unknown-field check and the
 * handler. What depends only on the route (whether it needs a token, whether it is audited, its body limit)
 * is decided once, here, when the route is registered, not on every request; there is no middleware that
 * every request walks through. The same chain serves every request of the route, with auth on and off.
 */
function prelude(ctx: HttpContext, method: Method, path: string): Handler {
  const tokenRequired = ctx.auth.enabled && needsToken(path);
  const audit = auditRecorder(ctx, AUDITED_ROUTES, `${method} ${path}`);
  const limit = path === '/api/messages/batch' ? BATCH_BODY_LIMIT : singleBodyLimit(ctx.config);
  const readBody: Handler = (req, _res, next) => {
    readJsonBody(req, limit).then((body) => {
      req.body = body;
      try {
        assertObjectBody(body);
      } catch (err) {
        return next(err);
      }
      next();
    }, next);
  };
  const afterAuth: Handler = audit ? (req, res, next) => audit(req, res, (err?: unknown) => (err ? next(err) : readBody(req, res, next))) : readBody;
  if (!tokenRequired) return afterAuth;
  return (req, res, next) => {
    // Started before the body is read: its 401 wins over any body error.
    ctx.auth.authenticate(req.headers.authorization).then((principal) => {
      req.principal = principal;
      afterAuth(req, res, next);
    }, next);
  };
}

/** Refuses body fields the route does not read (validation.ts, BODY_FIELDS), after the route's grant checks. */
function knownFields(route: string): Handler {
  return (req, _res, next) => {
    assertKnownFields(route, req.body);
    next();
  };
}

/**
 * Registers the handlers of one path and answers every other method with 405 and an Allow header (after
 * authentication, like every answer of a path that needs a token). `guard` (an admin or topic-grant check
 * that covers the whole path) runs first in every chain, the 405's included; the last handler of each chain
 * is the route's own, with the unknown-field check right before it.
 */
export function route(
  ctx: HttpContext,
  table: RouteTable,
  path: string,
  handlers: Partial<Record<Method, Handler | Handler[]>>,
  guard?: Handler,
): void {
  const guards = guard ? [guard] : [];
  const chains = new Map<Method, Handler[]>();
  for (const [method, handler] of Object.entries(handlers) as Array<[Method, Handler | Handler[]]>) {
    registeredRoutes.add(`${method} ${path}`);
    const chain = [prelude(ctx, method, path), ...guards, ...(Array.isArray(handler) ? handler : [handler])];
    chain.splice(chain.length - 1, 0, knownFields(`${method} ${path}`));
    chains.set(method, chain);
  }
  table.add(path, chains, [authenticated(ctx, path), ...guards, methodNotAllowed(Object.keys(handlers))]);
}

/** For answers that no route gives (404, 405): a path that needs a token still answers 401 without one. */
export function authenticated(ctx: HttpContext, path?: string): Handler {
  return (req, _res, next) => {
    if (!ctx.auth.enabled || !needsToken(path ?? req.path)) return next();
    ctx.auth.authenticate(req.headers.authorization).then((principal) => {
      req.principal = principal;
      next();
    }, next);
  };
}
