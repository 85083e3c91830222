import type { Principal } from '../../auth/authorizer.js';
import type { HttpContext } from '../context.js';
import type { Access, Guard } from '../operation.js';

/**
 * Whether a path that no operation serves needs a bearer token before its 404: the API's namespace and the
 * metrics do, so that a caller without a token learns nothing about which paths exist; the admin UI's files
 * do not. Matched like the router: case-insensitively, a trailing slash ignored.
 */
export function pathNeedsToken(path: string): boolean {
  const normalised = path.toLowerCase().replace(/\/+$/, '');
  return normalised.startsWith('/api/') || normalised === '/metrics';
}

/* The grant checks of the message operations (docs/auth.md, Grants). */

/** Enqueue: write on the body's topic; a missing or non-string topic is left to validation's 400. */
export const writeOfBody: Access = {
  kind: 'grant',
  action: 'write',
  check: (ctx, req) => {
    const topic = (req.body as Record<string, unknown> | undefined)?.topic;
    if (typeof topic === 'string') ctx.auth.requireTopic(req.principal, 'write', topic);
    else ctx.auth.requireAuthenticated(req.principal);
  },
};

/** Batch enqueue (`{messages: [{topic, ...}]}`): write on every topic named. */
export const writeOfBatch: Access = {
  kind: 'grant',
  action: 'write',
  check: (ctx, req) => {
    const messages = ((req.body ?? {}) as Record<string, unknown>).messages;
    if (!Array.isArray(messages)) return;
    const topics = new Set(messages.map((m: unknown) => (m as Record<string, unknown> | null)?.topic).filter((t): t is string => typeof t === 'string'));
    for (const topic of topics) ctx.auth.requireTopic(req.principal, 'write', topic);
    ctx.auth.requireAuthenticated(req.principal);
  },
};

/** Dequeue: write on the topic, or a consume grant for the group in the body. */
export const consumeOfBody: Access = {
  kind: 'grant',
  action: 'consume',
  check: (ctx, req) => {
    const { topic, consumer_group: group } = (req.body ?? {}) as Record<string, unknown>;
    if (typeof topic === 'string') ctx.auth.requireConsume(req.principal, topic, typeof group === 'string' ? group : undefined);
  },
};

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

export const consumeOfMessage: Access = {
  kind: 'grant',
  action: 'consume',
  check: (ctx, req) => checkConsumeOfMessage(ctx, req.principal, req.params.id, req.body),
};

/** Requeue: write on the dead letter's topic or its original topic. */
const requeueCheck: Guard = async (ctx, req) => {
  if (!ctx.auth.enabled) return;
  const topic = await ctx.messages.topicOf(req.params.id);
  if (topic !== null) ctx.auth.requireRequeue(req.principal, topic);
};
export const requeueOfMessage: Access = { kind: 'grant', action: 'requeue', check: requeueCheck };

/** Batch ack (`{ids, consumer_group?}`): every topic the ids live in must be consumable by the caller. */
export async function checkConsumeOfMessages(ctx: HttpContext, principal: Principal | null, body: unknown): Promise<void> {
  if (!ctx.auth.enabled) return;
  const { ids, consumer_group: group } = (body ?? {}) as Record<string, unknown>;
  if (!Array.isArray(ids)) return;
  for (const topic of await ctx.messages.topicsOf(ids)) ctx.auth.requireConsume(principal, topic, typeof group === 'string' ? group : undefined);
}
