import type express from 'express';
import { clientAddressOf } from './client-address.js';
import { BATCH_BODY_LIMIT, NO_FIELDS_BODY_LIMIT, singleBodyLimit } from './body-limits.js';
import { readJsonBody } from './body-reader.js';
import type { HttpContext } from './context.js';
import { methodNotAllowed } from './errors.js';
import { auditRecorder } from './middleware/audit.js';
import { checkOperations, needsToken, type Guard, type Operation } from './operation.js';
import { expressSteps, type Handler } from './request.js';
import { assertKnownFields, assertObjectBody, fieldsOf, parseBody, parseQuery } from './validation.js';

/**
 * Authenticates the caller: 401 before anything else, and the principal for the grants. The client's address
 * is worked out only when asked for: failed access keys count against it.
 */
export function authenticate(ctx: HttpContext): Handler {
  const addressOf = clientAddressOf(ctx);
  return (req, _res, next) => {
    ctx.auth.authenticate(req.headers.authorization, addressOf, req).then((principal) => {
      req.principal = principal;
      next();
    }, next);
  };
}

const guardStep =
  (ctx: HttpContext, guard: Guard): Handler =>
  (req, _res, next) => {
    const checked = guard(ctx, req);
    if (checked === undefined) return next();
    return checked.then(() => next());
  };

function bodyLimit(ctx: HttpContext, op: Operation): number {
  if (op.body === undefined) return NO_FIELDS_BODY_LIMIT;
  return op.body.limit === 'batch' ? BATCH_BODY_LIMIT : singleBodyLimit(ctx.config);
}

/**
 * The chain of one operation, in this order: authentication (401 before anything else; the principal for
 * the grants), the audit record (so that a refused change is recorded too), the operation's steps that come
 * before the body, the body (read, decompressed, limited and parsed with the operation's limit; a JSON
 * object or nothing), the access check, the unknown-field check, the body's and the query's schemas, the
 * handler. What depends only on the operation (whether it needs a token, whether it is audited, its limit,
 * its fields) is decided here, once, when the router is built; no middleware runs for every request.
 */
function chainOf(ctx: HttpContext, op: Operation): Handler[] {
  const chain: Handler[] = [];
  if (ctx.auth.enabled && needsToken(op)) chain.push(authenticate(ctx));
  const audit = op.audit && !('notAudited' in op.audit) ? auditRecorder(ctx, op.audit) : undefined;
  if (audit) chain.push(audit);
  const beforeBody = op.beforeBody;
  if (beforeBody) chain.push((req, _res, next) => beforeBody(ctx, req).then(() => next()));
  const limit = bodyLimit(ctx, op);
  chain.push((req, _res, next) => {
    readJsonBody(req, limit).then((body) => {
      req.body = body;
      try {
        assertObjectBody(body);
      } catch (err) {
        return next(err);
      }
      next();
    }, next);
  });
  const check = 'check' in op.access ? op.access.check : undefined;
  if (check) chain.push(guardStep(ctx, check));
  const fields = op.body ? fieldsOf(op.body.schema) : [];
  const parse = op.body?.parse ?? 'pipeline';
  const schema = op.body?.schema;
  const query = op.query;
  chain.push((req, _res, next) => {
    assertKnownFields(fields, req.body);
    if (schema && parse !== 'handler') req.body = parse === 'pipeline' ? parseBody(schema, req.body) : parse(req.body);
    if (query) req.query = parseQuery(query, req.query) as typeof req.query;
    next();
  });
  const handler = op.handler as (ctx: HttpContext, req: Parameters<Handler>[0], res: Parameters<Handler>[1]) => unknown;
  chain.push((req, res) => handler(ctx, req, res));
  return chain;
}

/**
 * The chain that answers a method the path does not serve: 405 with an Allow header, after authentication
 * when the path needs a token and after the access check its operations share, if they share one (a topic's
 * configuration answers a caller without the topic's admin grant 403, whatever the method).
 */
function otherMethods(ctx: HttpContext, ops: Operation[]): Handler[] {
  const chain: Handler[] = [];
  if (ctx.auth.enabled && ops.some(needsToken)) chain.push(authenticate(ctx));
  const shared = ops[0].access;
  if (ops.every((op) => op.access === shared) && 'check' in shared && shared.check) chain.push(guardStep(ctx, shared.check));
  chain.push(methodNotAllowed(ops.map((op) => op.method)));
  return chain;
}

/**
 * Gives the express app a route for each path of `operations`, in the order given (the hot message operations
 * first: the router tries paths in order). Express's router matches a path case-insensitively with one
 * optional trailing slash, runs a GET's chain for HEAD (node:http sends no body for it) and fails the match of
 * a parameter with a broken %-escape with a URIError (400).
 */
export function registerOperations(app: express.Express, ctx: HttpContext, operations: readonly Operation[]): void {
  checkOperations(operations);
  const byPath = new Map<string, Operation[]>();
  for (const op of operations) byPath.set(op.path, [...(byPath.get(op.path) ?? []), op]);
  for (const [path, ops] of byPath) {
    const route = app.route(path);
    for (const op of ops) route[op.method.toLowerCase() as 'get' | 'post' | 'put' | 'delete'](...expressSteps(chainOf(ctx, op)));
    route.all(...expressSteps(otherMethods(ctx, ops)));
  }
  for (const route of servedRoutes(app)) registeredRoutes.add(route);
}

/** `METHOD /template` of every route express serves, read from its router (test/openapi.test.ts compares them with the document). */
export const registeredRoutes = new Set<string>();

interface ExpressRouteLayer {
  route?: { path: string; methods: Record<string, boolean> };
}

function servedRoutes(app: express.Express): string[] {
  const stack = (app as unknown as { router: { stack: ExpressRouteLayer[] } }).router.stack;
  return stack.flatMap(({ route }) => (route ? Object.keys(route.methods).filter((m) => m !== '_all').map((m) => `${m.toUpperCase()} ${route.path}`) : []));
}
