import type { Request, RequestHandler } from 'express';
import type { Principal, TopicAction } from '../../auth/authorizer.js';
import type { HttpContext } from '../context.js';

declare module 'express-serve-static-core' {
  interface Request {
    /** The caller behind the bearer token; null when auth is disabled or the path needs no token. */
    principal: Principal | null;
  }
}

/** Spec Endpoints, access `none` (plus the /readyz probe and the OpenAPI document). Paths outside /api (the admin UI's files) are open too. */
const OPEN_PATHS = new Set(['/healthz', '/readyz', '/api/version', '/api/openapi.json', '/api/auth/status', '/api/auth/login']);

/**
 * Whether a path needs a bearer token (route-table.ts asks once per route template, and for paths no route
 * has). Express matches routes case-insensitively and ignores a trailing slash, so this check must too.
 */
export function needsToken(path: string): boolean {
  const normalised = path.toLowerCase().replace(/\/+$/, '');
  return !OPEN_PATHS.has(normalised) && (normalised.startsWith('/api/') || normalised === '/metrics');
}

/** Admin-only routes (spec Authorization 9, users, grants, maintenance). */
export function requireAdmin(ctx: HttpContext): RequestHandler {
  return (req, _res, next) => {
    ctx.auth.requireAdmin(req.principal);
    next();
  };
}

/**
 * A per-topic grant on the topic `topicOf` names. A missing or non-string topic is left to the route's own
 * validation, which answers 400 before touching any topic.
 */
export function requireTopic(ctx: HttpContext, action: TopicAction, topicOf: (req: Request) => unknown): RequestHandler {
  return (req, _res, next) => {
    const topic = topicOf(req);
    if (typeof topic === 'string') ctx.auth.requireTopic(req.principal, action, topic);
    else ctx.auth.requireAuthenticated(req.principal);
    next();
  };
}

/*
 * The grant checks of the three hot routes, as plain functions of the principal and the request: their
 * express chains (routes/messages.ts) and the dispatcher in front of express (fast-path.ts) both call these,
 * so a request is authorised by the same code whichever of the two serves it.
 */

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

export function requireConsumeOfBody(ctx: HttpContext): RequestHandler {
  return (req, _res, next) => {
    checkConsumeOfBody(ctx, req.principal, req.body);
    next();
  };
}

export function requireConsumeOfMessage(ctx: HttpContext): RequestHandler {
  return async (req, _res, next) => {
    await checkConsumeOfMessage(ctx, req.principal, req.params.id as string, req.body);
    next();
  };
}

export function requireWriteOfBody(ctx: HttpContext): RequestHandler {
  return (req, _res, next) => {
    checkWriteOfBody(ctx, req.principal, req.body);
    next();
  };
}

export function requireRequeueOfMessage(ctx: HttpContext): RequestHandler {
  return async (req, _res, next) => {
    if (!ctx.auth.enabled) return next();
    const topic = await ctx.messages.topicOf(req.params.id);
    if (topic !== null) ctx.auth.requireRequeue(req.principal, topic);
    next();
  };
}

/** Batch ack (`{ids, consumer_group?}`): every topic the ids live in must be consumable by the caller. */
export function requireConsumeOfMessages(ctx: HttpContext): RequestHandler {
  return async (req, _res, next) => {
    if (!ctx.auth.enabled) return next();
    const { ids, consumer_group: group } = (req.body ?? {}) as Record<string, unknown>;
    if (!Array.isArray(ids)) return next();
    for (const topic of await ctx.messages.topicsOf(ids)) ctx.auth.requireConsume(req.principal, topic, typeof group === 'string' ? group : undefined);
    next();
  };
}

/** Batch enqueue (`{messages: [{topic, ...}]}`): write on every topic named. */
export function requireWriteOfBatch(ctx: HttpContext): RequestHandler {
  return (req, _res, next) => {
    const messages = (req.body ?? {}).messages;
    if (!Array.isArray(messages)) return next();
    const topics = new Set(messages.map((m: unknown) => (m as Record<string, unknown> | null)?.topic).filter((t): t is string => typeof t === 'string'));
    for (const topic of topics) ctx.auth.requireTopic(req.principal, 'write', topic);
    ctx.auth.requireAuthenticated(req.principal);
    next();
  };
}
