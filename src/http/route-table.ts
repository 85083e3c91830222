import { AUDITED_ROUTES } from './audited-routes.js';
import { BATCH_BODY_LIMIT, NO_FIELDS_BODY_LIMIT, singleBodyLimit } from './body-limits.js';
import { readJsonBody } from './body-reader.js';
import type { HttpContext } from './context.js';
import { methodNotAllowed } from './errors.js';
import { auditRecorder } from './middleware/audit.js';
import { needsToken } from './middleware/auth.js';
import type { Handler } from './request.js';
import type { Method, RouteTable } from './router.js';
import { assertKnownFields, assertObjectBody, BODY_FIELDS } from './validation.js';

/** Every `METHOD /template` ever registered through route(): test/openapi.test.ts compares them with the OpenAPI document. */
export const registeredRoutes = new Set<string>();

/**
 * A method's own steps when some of them must run before the body is read: `beforeBody` runs after
 * authentication and the audit record, before the body, and answers whatever the body holds (the login rate
 * limit: a body the pipeline refuses is an attempt too); `handlers` as a plain Handler or Handler[].
 */
export interface MethodSteps {
  beforeBody: Handler[];
  handlers: Handler | Handler[];
}

const isMethodSteps = (steps: Handler | Handler[] | MethodSteps): steps is MethodSteps => typeof steps === 'object' && !Array.isArray(steps);

/**
 * The request pipeline of every route. Each route's chain starts with the same steps, in this order:
 * authentication (401 before anything else; the principal for the grants), the audit record
 * (so a refused change is recorded too), the route's own steps that come before the body, if it has any
 * (MethodSteps), the body (read, decompressed, limited and parsed here, with the route's own limit), the
 * object check; then the route's grant checks, the unknown-field check and the handler. What depends only
 * on the route (whether it needs a token, whether it is audited, its body limit) is decided once, here, when
 * the route is registered, not on every request; there is no middleware that every request walks through.
 * The same chain serves every request of the route, with auth on and off.
 */
function prelude(ctx: HttpContext, method: Method, path: string, beforeBody: Handler[]): Handler[] {
  const tokenRequired = ctx.auth.enabled && needsToken(path);
  const audit = auditRecorder(ctx, AUDITED_ROUTES, `${method} ${path}`);
  const limit = path === '/api/messages/batch' ? BATCH_BODY_LIMIT : BODY_FIELDS[`${method} ${path}`] ? singleBodyLimit(ctx.config) : NO_FIELDS_BODY_LIMIT;
  // Before the body is read: its 401 wins over any body error.
  const authenticate: Handler = (req, _res, next) => {
    ctx.auth.authenticate(req.headers.authorization).then((principal) => {
      req.principal = principal;
      next();
    }, next);
  };
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
  return [...(tokenRequired ? [authenticate] : []), ...(audit ? [audit] : []), ...beforeBody, readBody];
}

/** Refuses body fields the route does not read (validation.ts, BODY_FIELDS), after the route's grant checks. */
function knownFields(route: string): Handler {
  return (req, _res, next) => {
    assertKnownFields(route, req.body);
    next();
  };
}

/**
 * The error statuses the pipeline's own steps (prelude, knownFields) can answer on any route of `path`, before
 * the route's own code has a say: authentication, 401 where the path needs a token; the body read
 * (body-reader.ts), 400 for JSON that does not parse or a body cut short, not matching its Content-Length or
 * not decompressing, 413 for a body over the route's limit, 415 for a charset or Content-Encoding it does not
 * read; the object check and the unknown-field check, 400. Every route reads a body, one that takes no body
 * fields included (and refuses any field). The OpenAPI document lists these for every operation
 * (openapi/document.ts).
 */
export function pipelineErrorStatuses(path: string): number[] {
  return [400, ...(needsToken(path) ? [401] : []), 413, 415];
}

/**
 * Registers the handlers of one path and answers every other method with 405 and an Allow header (after
 * authentication, like every answer of a path that needs a token). `guard` (an admin or topic-grant check
 * that covers the whole path) runs first in every chain after the body, and in the 405's; the last handler of
 * each chain is the route's own, with the unknown-field check right before it.
 */
export function route(
  ctx: HttpContext,
  table: RouteTable,
  path: string,
  handlers: Partial<Record<Method, Handler | Handler[] | MethodSteps>>,
  guard?: Handler,
): void {
  const guards = guard ? [guard] : [];
  const chains = new Map<Method, Handler[]>();
  for (const [method, steps] of Object.entries(handlers) as Array<[Method, Handler | Handler[] | MethodSteps]>) {
    registeredRoutes.add(`${method} ${path}`);
    const { beforeBody, handlers: own } = isMethodSteps(steps) ? steps : { beforeBody: [], handlers: steps };
    const chain = [...prelude(ctx, method, path, beforeBody), ...guards, ...(Array.isArray(own) ? own : [own])];
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
