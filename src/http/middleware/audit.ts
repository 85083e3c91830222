import type { ServerResponse } from 'node:http';
import { ANONYMOUS_ACTOR, type AuditAction, type AuditActor, type AuditEvent } from '../../queue/audit.js';
import { isValidTopicName } from '../../queue/topic-names.js';
import { within } from '../../deadline.js';
import type { HttpContext } from '../context.js';
import type { ApiRequest, Handler } from '../request.js';

/** What an audited route's declaration sees once the answer is known. */
export interface AuditCall<S = unknown> {
  /** The path parameters as the route matched them. */
  params: Record<string, string>;
  /** The parsed body (undefined when it could not be parsed). */
  body: Record<string, unknown>;
  query: Record<string, unknown>;
  /** The JSON the route answered (undefined for 204s and errors). */
  response: any;
  /** What `before` read. */
  state: S;
  ok: boolean;
}

/**
 * One audited route: its action, what it acts on and the details worth keeping. Every function picks the
 * fields it records by name, so a payload, a message key, a password or a token can never slip in.
 */
export interface AuditSpec<S = unknown> {
  action: AuditAction | ((call: AuditCall<S>) => AuditAction);
  /** The topic acted on; the target too, unless `target` says otherwise. Kept only when it is a valid name. */
  topic?: (call: AuditCall<S>) => unknown;
  /** What was acted on when it is not a topic: a user id, a reaper. */
  target?: (call: AuditCall<S>) => string | null | undefined;
  /** Reads what the change is about to remove or move (a user's name, the topic of a message); never fails the request. */
  before?: (params: Record<string, string>, ctx: HttpContext) => S | Promise<S>;
  details?: (call: AuditCall<S>) => Record<string, unknown> | undefined;
}

/**
 * How long an answer waits for its audit record to be written. A success the caller sees has its record
 * stored (or the failure to store it logged) unless the database is slower than this; the write goes on
 * in the background then.
 */
const AUDIT_WAIT_MS = 2000;

const actorOf = (req: ApiRequest): AuditActor => (req.principal ? { id: req.principal.userId, name: req.principal.username } : ANONYMOUS_ACTOR);

/**
 * Records one request of an audited route. Runs before the operation's access check and body parsing (router.ts),
 * so a 403, a 400 for a malformed body and a 409 for a managed row are recorded just like a success. The
 * record is written when the answer is ready and before it is sent (res.end is held until the write is
 * done, at most AUDIT_WAIT_MS): a client that saw 2xx finds its change in the audit log.
 */
function recorder(ctx: HttpContext, spec: AuditSpec): Handler {
  return async (req, res, next) => {
    const params = { ...req.params };
    let state: unknown;
    try {
      state = await spec.before?.(params, ctx);
    } catch {
      state = undefined;
    }
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    let ending = false;
    res.end = ((...args: unknown[]) => {
      if (ending) return res;
      ending = true;
      const status = res.statusCode;
      const response = status < 400 ? answeredJson(res, args[0]) : undefined;
      // 401: nobody to hold to account (the access log has those lines).
      const write = status === 401 ? Promise.resolve() : ctx.maintenance.audit.record(eventOf(req, spec, { params, state, response, status }), req.log);
      void within(write, AUDIT_WAIT_MS).then(() => end(...args));
      return res;
    }) as ServerResponse['end'];
    next();
  };
}

/** The JSON a route answered (respond.ts writes it in one piece), for the declarations' `response`. */
function answeredJson(res: ServerResponse, chunk: unknown): unknown {
  if (!String(res.getHeader('Content-Type') ?? '').startsWith('application/json')) return undefined;
  if (typeof chunk !== 'string' && !Buffer.isBuffer(chunk)) return undefined;
  try {
    return JSON.parse(chunk.toString());
  } catch {
    return undefined;
  }
}

function eventOf(req: ApiRequest, spec: AuditSpec, answer: { params: Record<string, string>; state: unknown; response: unknown; status: number }) {
  const ok = answer.status < 400;
  const body = req.body !== null && typeof req.body === 'object' && !Array.isArray(req.body) ? (req.body as Record<string, unknown>) : {};
  const call: AuditCall = { params: answer.params, body, query: req.query, response: answer.response, state: answer.state, ok };
  // A declaration that trips over an odd body must not lose the record: keep what is known.
  const safely = <T>(f: () => T): T | undefined => {
    try {
      return f();
    } catch {
      return undefined;
    }
  };
  const topicValue = spec.topic ? safely(() => spec.topic!(call)) : undefined;
  const topic = isValidTopicName(topicValue) ? topicValue : null;
  const event: AuditEvent = {
    actor: actorOf(req),
    action: typeof spec.action === 'function' ? spec.action(call) : spec.action,
    topic,
    target: spec.target ? (safely(() => spec.target!(call)) ?? null) : topic,
    ok,
    status: answer.status,
    details: spec.details ? safely(() => spec.details!(call)) : undefined,
  };
  return event;
}

/**
 * The recorder of an audited operation (operation.ts, `audit`). The router puts it in the operation's chain
 * after authentication (the principal is known) and before everything that may refuse the request.
 */
export function auditRecorder(ctx: HttpContext, spec: AuditSpec<any>): Handler {
  return recorder(ctx, spec);
}
