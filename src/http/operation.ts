import type { z } from 'zod';
import type { HttpContext } from './context.js';
import type { AuditSpec } from './middleware/audit.js';
import type { ApiRequest, ApiResponse } from './request.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/**
 * A check of the caller, run after the body is read and before it is validated, so that a caller without the
 * right grant learns nothing from a 400 about the body. It throws a DomainError ('forbidden') to refuse.
 */
export type Guard = (ctx: HttpContext, req: ApiRequest) => void | Promise<void>;

/**
 * Who may call an operation with authentication on:
 * - `open`: no token;
 * - `token`: any valid token (the handler may still filter what it shows);
 * - `admin`: the admin flag, else 403;
 * - `grant`: a grant on the topic involved, else 403. `check` is the guard that decides it before the body is
 *   validated; without one the handler checks, because the topic is only known once the request is parsed
 *   (a list's query) or its answer depends on the grant (an ack of a message this instance handed out).
 * The same Access object shared by every operation of a path also guards that path's 405.
 */
export type Access =
  | { kind: 'open' }
  | { kind: 'token' }
  | { kind: 'admin'; check: Guard }
  | { kind: 'grant'; action: 'read' | 'write' | 'consume' | 'admin' | 'requeue'; check?: Guard };

export const OPEN: Access = { kind: 'open' };
export const TOKEN: Access = { kind: 'token' };
export const ADMIN: Access = { kind: 'admin', check: (ctx, req) => ctx.auth.requireAdmin(req.principal) };

/** The operation's grant on the topic named by a path parameter (`:topic`). */
export const grantOnTopicParam = (action: 'read' | 'admin'): Access => ({
  kind: 'grant',
  action,
  check: (ctx, req) => ctx.auth.requireTopic(req.principal, action, req.params.topic),
});

/** A success answer: a JSON body, no body at all (204, a 201 without one), or Prometheus text. */
export type Success = z.ZodType | 'empty' | 'text';

/**
 * What an audited operation records. Every operation that changes configuration or data outside produce and
 * consume is audited; the others say why not (`notAudited`), so that a new changing route cannot be left out
 * by omission: the type requires one or the other.
 */
export type Audit = AuditSpec<any> | { notAudited: string };

/** The request body: a schema, and the name the OpenAPI document gives it. */
export interface BodyDeclaration<S extends z.ZodType = z.ZodType> {
  name: string;
  schema: S;
  /** Ack, nack, replay and purge may be sent without a body. */
  optional?: true;
  /**
   * `pipeline` (the default): the body is parsed with the schema after the access check, and the handler gets
   * the result. `handler`: the handler parses it, where its checks must come in another order (the topic's
   * name before the body; the login rate limit before anything; grants that depend on the parse).
   */
  parse?: 'pipeline' | 'handler' | ((body: unknown) => z.output<S>);
  /** Bytes on the wire after decompression; the default is one message's worth (body-limits.ts). */
  limit?: 'batch';
}

export interface OperationDocs {
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  success: { status: 200 | 201 | 204; schema: Success; description: string };
  /**
   * Errors the operation itself can answer. The OpenAPI document adds those of the request pipeline, which
   * every route answers (400, 413, 415, and 401 where a token is needed), 403 for `grant` and `admin`, 500
   * and 503.
   */
  errors?: number[];
}

interface OperationBase<B> extends OperationDocs {
  /** The route template, `/api/messages/:id/ack`: case-insensitive, one optional trailing slash, %-decoded parameters. */
  path: string;
  access: Access;
  body?: BodyDeclaration;
  /** Parsed before the handler runs (`req.query` is the result); 400 for a value the schema refuses. */
  query?: z.ZodType;
  /**
   * Runs before the body is read, after authentication and the audit record: the login rate limit, under
   * which a body the pipeline refuses counts as an attempt too.
   */
  beforeBody?: (ctx: HttpContext, req: ApiRequest) => Promise<void>;
  handler: (ctx: HttpContext, req: ApiRequest & { body: B }, res: ApiResponse) => unknown;
}

/**
 * One operation of the HTTP API, declared once: the router (router.ts), the body and query validation, the
 * OpenAPI document (openapi/document.ts) and the audit trail (middleware/audit.ts) are all built from it.
 * Every method but GET changes something, so it must say how it is audited.
 */
export type Operation<B = unknown> = OperationBase<B> & ({ method: 'GET'; audit?: undefined } | { method: Exclude<Method, 'GET'>; audit: Audit });

/**
 * Declares an operation, its handler typed by the body schema: `req.body` is what the schema outputs when the
 * pipeline parses it (with `parse: 'handler'` the handler gets the JSON as sent and parses it itself).
 */
export function operation<S extends z.ZodType = z.ZodUnknown>(op: Operation<z.output<S>> & { body?: BodyDeclaration<S> }): Operation {
  return op as unknown as Operation;
}

/** Whether the operation needs a bearer token when authentication is on. */
export const needsToken = (op: Pick<Operation, 'access'>) => op.access.kind !== 'open';

const METHODS: readonly string[] = ['GET', 'POST', 'PUT', 'DELETE'];

/**
 * What the types cannot hold a declaration to, checked when the router is built (start-up fails, and so does
 * test/operations.test.ts): each operation has a method, a path, an access rule, its OpenAPI text and a
 * handler; a changing one says how it is audited; ids, bodies' names and method + path pairs are unique.
 */
export function checkOperations(operations: readonly Operation[]): void {
  const ids = new Set<string>();
  const routes = new Set<string>();
  for (const op of operations) {
    const name = op.operationId || `${op.method} ${op.path}`;
    const fail = (what: string) => {
      throw new Error(`operation ${name}: ${what}`);
    };
    if (!METHODS.includes(op.method)) fail(`method ${String(op.method)} is not one of ${METHODS.join(', ')}`);
    if (typeof op.path !== 'string' || !op.path.startsWith('/')) fail('path must start with /');
    if (!op.operationId) fail('operationId is missing');
    if (!op.summary) fail('summary is missing');
    if (!op.tag) fail('tag is missing');
    if (!op.success?.description) fail('success status, schema and description are missing');
    if (!op.access?.kind) fail('access is missing');
    if (op.access.kind === 'admin' && typeof op.access.check !== 'function') fail('admin access without its check');
    if (typeof op.handler !== 'function') fail('handler is missing');
    if (op.method !== 'GET' && op.audit === undefined) fail('a changing operation must be audited or say why not ({notAudited})');
    if (op.audit && 'notAudited' in op.audit && !op.audit.notAudited) fail('notAudited must say why');
    if (op.body && (!op.body.name || !op.body.schema)) fail('a body needs a name and a schema');
    if (ids.has(op.operationId)) fail('operationId is used twice');
    ids.add(op.operationId);
    const route = `${op.method} ${op.path.toLowerCase()}`;
    if (routes.has(route)) fail(`${op.method} ${op.path} is declared twice`);
    routes.add(route);
  }
}
