import type { TopicConfigValues } from '../store/topic-configs.js';
import type { HttpContext } from './context.js';
import type { AuditCall } from './middleware/audit.js';

/**
 * What the operations' audit declarations (operation.ts, `audit`) pick out of a call (docs/security.md,
 * "Audit log"): each takes a field by name and keeps it only when it has the expected form, so that a payload,
 * a message key, a password or a token can never reach the record.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const GROUP = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

export const uuid = (value: unknown) => (typeof value === 'string' && UUID.test(value) ? value.toLowerCase() : null);
export const group = (value: unknown) => (typeof value === 'string' && GROUP.test(value) ? value : undefined);
/** A short free-text field the caller sent (a username, a grant pattern, a cron expression): never long text. */
export const short = (value: unknown) => (typeof value === 'string' && value.length <= 255 ? value : undefined);
export const number = (value: unknown) => (typeof value === 'number' ? value : undefined);
/** The names among `known` that the body sets (never their values: a refused body may hold anything). */
export const fieldsSet = (body: Record<string, unknown>, known: readonly string[]) => known.filter((field) => body[field] !== undefined);
export const topicParam = (c: AuditCall) => c.params.topic;

/** The configuration as this instance sees it (its cache is current after its own writes). */
export function currentConfig(ctx: HttpContext, topic: string | undefined): TopicConfigValues | null {
  try {
    return ctx.topics.getConfig(topic);
  } catch {
    return null;
  }
}

export async function username(ctx: HttpContext, id: string | undefined): Promise<string | undefined> {
  return id ? (await ctx.users.find(id))?.username : undefined;
}

export const userTarget = (c: AuditCall) => uuid(c.params.id);

export const reaperRun = (reaper: string) => ({
  action: 'reaper.run' as const,
  target: () => reaper,
  details: (c: AuditCall) => (c.ok ? { expired: number(c.response?.expired), deleted: number(c.response?.deleted), audit_deleted: number(c.response?.audit_deleted) } : {}),
});

