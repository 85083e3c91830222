import type { Principal, TopicAction } from '../../auth/authorizer.js';
import type { HttpContext } from '../context.js';
import type { ApiRequest, Handler } from '../request.js';

/** Spec Endpoints, access `none` (plus the /readyz probe and the OpenAPI document). Paths outside /api (the admin UI's files) are open too. */
const OPEN_PATHS = new Set(['/healthz', '/readyz', '/api/version', '/api/openapi.json', '/api/auth/status', '/api/auth/login']);

/**
 * Whether a path needs a bearer token (route-table.ts asks once per route template, and for paths no route
 * has). The route table matches case-insensitively and ignores a trailing slash (router.ts), so this check must too.
 */
export function needsToken(path: string): boolean {
  const normalised = path.toLowerCase().replace(/\/+$/, '');
  return !OPEN_PATHS.has(normalised) && (normalised.startsWith('/api/') || normalised === '/metrics');
}

/** Admin-only routes (spec Authorization 9, users, grants, maintenance). */
export function requireAdmin(ctx: HttpContext): Handler {
  return (req, _res, next) => {
    ctx.auth.requireAdmin(req.principal);
    next();
  };
}

/**
 * A per-topic grant on the topic `topicOf` names. A missing or non-string topic is left to the route's own
 * validation, which answers 400 before touching any topic.
 */
export function requireTopic(ctx: HttpContext, action: TopicAction, topicOf: (req: ApiRequest) => unknown): Handler {
  return (req, _res, next) => {
    const topic = topicOf(req);
    if (typeof topic === 'string') ctx.auth.requireTopic(req.principal, action, topic);
    else ctx.auth.requireAuthenticated(req.principal);
    next();
  };
}

/* The grant checks of the message routes, as plain functions of the principal and the request. */

/** Enqueue: write on the body's topic; a missing or non-string topic is left to validation's 400. */
export function checkWriteOfBody(ctx: HttpContext, principal: Principal | null, body: unknown): void {
  const topic = (body as Record<string, unknown> | null)?.topic;
  if (typeof topic === 'string') ctx.auth.requireTopic(principal, 'write', topic);
  else ctx.auth.requireAuthenticated(principal);
}

/** Dequeue: write, or a consume grant for the group in the body (contract §8). */
export function checkConsumeOfBody(ctx: HttpContext, principal: Principal | null, body: unknown): void {
  const { topic, consumer_group: group } = (body ?? {}) as Record<string, unknown>;
  if (typeof topic === 'string') ctx.auth.requireConsume(principal, topic, typeof group === 'string' ? group : undefined);
}

/**
 * Ack and nack by id: the grant is checked on the message's topic. An unknown id passes on, so the domain
 * answers its usual 404 without revealing more to the unauthorised than to anyone else.
 */
export async function checkConsumeOfMessage(ctx: HttpContext, principal: Principal | null, id: string, body: unknown): Promise<void> {
  if (!ctx.auth.enabled) return;
  const topic = await ctx.messages.topicOf(id);
  const group = (body as Record<string, unknown> | null)?.consumer_group;
  if (topic !== null) ctx.auth.requireConsume(principal, topic, typeof group === 'string' ? group : undefined);
}

export function requireConsumeOfBody(ctx: HttpContext): Handler {
  return (req, _res, next) => {
    checkConsumeOfBody(ctx, req.principal, req.body);
    next();
  };
}

export function requireConsumeOfMessage(ctx: HttpContext): Handler {
  return async (req, _res, next) => {
    await checkConsumeOfMessage(ctx, req.principal, req.params.id, req.body);
    next();
  };
}

export function requireWriteOfBody(ctx: HttpContext): Handler {
  return (req, _res, next) => {
    checkWriteOfBody(ctx, req.principal, req.body);
    next();
  };
}

export function requireRequeueOfMessage(ctx: HttpContext): Handler {
  return async (req, _res, next) => {
    if (!ctx.auth.enabled) return next();
    const topic = await ctx.messages.topicOf(req.params.id);
    if (topic !== null) ctx.auth.requireRequeue(req.principal, topic);
    next();
  };
}

/** Batch ack (`{ids, consumer_group?}`): every topic the ids live in must be consumable by the caller. */
export async function checkConsumeOfMessages(ctx: HttpContext, principal: Principal | null, body: unknown): Promise<void> {
  if (!ctx.auth.enabled) return;
  const { ids, consumer_group: group } = (body ?? {}) as Record<string, unknown>;
  if (!Array.isArray(ids)) return;
  for (const topic of await ctx.messages.topicsOf(ids)) ctx.auth.requireConsume(principal, topic, typeof group === 'string' ? group : undefined);
}

/** Batch enqueue (`{messages: [{topic, ...}]}`): write on every topic named. */
export function requireWriteOfBatch(ctx: HttpContext): Handler {
  return (req, _res, next) => {
    const messages = ((req.body ?? {}) as Record<string, unknown>).messages;
    if (!Array.isArray(messages)) return next();
    const topics = new Set(messages.map((m: unknown) => (m as Record<string, unknown> | null)?.topic).filter((t): t is string => typeof t === 'string'));
    for (const topic of topics) ctx.auth.requireTopic(req.principal, 'write', topic);
    ctx.auth.requireAuthenticated(req.principal);
    next();
  };
}
