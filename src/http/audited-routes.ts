import { configChanges, configValues } from '../queue/audit.js';
import { DEFAULT_PURGE_STATUSES, PURGEABLE_STATUSES } from '../queue/topics.js';
import type { TopicConfigValues } from '../store/topic-configs.js';
import type { HttpContext } from './context.js';
import type { AuditCall, AuditTable } from './middleware/audit.js';

/**
 * Every HTTP route that changes configuration or data outside produce and consume, with what its audit
 * record says (docs/security.md, "Audit log"). A route added here is recorded; test/audit-log.test.ts
 * checks that no changing route is left out.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const GROUP = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
const CONFIG_FIELDS = ['max_retries', 'message_ttl_seconds', 'max_depth', 'throughput_limit', 'replayable', 'replay_window_seconds'];

const uuid = (value: unknown) => (typeof value === 'string' && UUID.test(value) ? value.toLowerCase() : null);
const group = (value: unknown) => (typeof value === 'string' && GROUP.test(value) ? value : undefined);
/** A short free-text field the caller sent (a username, a grant pattern, a cron expression): never long text. */
const short = (value: unknown) => (typeof value === 'string' && value.length <= 255 ? value : undefined);
const number = (value: unknown) => (typeof value === 'number' ? value : undefined);
/** The names among `known` that the body sets (never their values: a refused body may hold anything). */
const fieldsSet = (body: Record<string, unknown>, known: string[]) => known.filter((field) => body[field] !== undefined);
const topicParam = (c: AuditCall) => c.params.topic;

/** The configuration as this instance sees it (its cache is current after its own writes). */
function currentConfig(ctx: HttpContext, topic: string | undefined): TopicConfigValues | null {
  try {
    return ctx.topics.getConfig(topic);
  } catch {
    return null;
  }
}

async function username(ctx: HttpContext, id: string | undefined): Promise<string | undefined> {
  return id ? (await ctx.users.find(id))?.username : undefined;
}

const userTarget = (c: AuditCall) => uuid(c.params.id);

const reaperRun = (reaper: string) => ({
  action: 'reaper.run' as const,
  target: () => reaper,
  details: (c: AuditCall) => (c.ok ? { expired: number(c.response?.expired), deleted: number(c.response?.deleted), audit_deleted: number(c.response?.audit_deleted) } : {}),
});

export const AUDITED_ROUTES: AuditTable = {
  'PUT /api/topic-configs/:topic': {
    action: 'topic_config.set',
    topic: topicParam,
    before: (params, ctx) => currentConfig(ctx, params.topic),
    details: (c: AuditCall<TopicConfigValues | null>) =>
      c.ok ? { changed: configChanges(c.state, c.response as TopicConfigValues) } : { fields: fieldsSet(c.body, CONFIG_FIELDS) },
  },
  'DELETE /api/topic-configs/:topic': {
    action: 'topic_config.delete',
    topic: topicParam,
    before: (params, ctx) => currentConfig(ctx, params.topic),
    details: (c: AuditCall<TopicConfigValues | null>) => (c.ok ? { previous: configValues(c.state) } : {}),
  },
  'PUT /api/topic-schemas/:topic': {
    action: 'topic_schema.set',
    topic: topicParam,
    details: (c) => (c.ok ? { version: number(c.response?.version) } : {}),
  },
  'DELETE /api/topic-schemas/:topic': { action: 'topic_schema.delete', topic: topicParam },
  'POST /api/topics/:topic/consumer-groups': {
    action: 'consumer_group.register',
    topic: topicParam,
    details: (c) => ({ consumer_group: group(c.body.consumer_group) }),
  },
  'DELETE /api/topics/:topic/consumer-groups/:group': {
    action: 'consumer_group.unregister',
    topic: topicParam,
    details: (c) => ({ consumer_group: group(c.params.group) }),
  },
  'POST /api/topics/:topic/purge': {
    action: 'topic.purge',
    topic: topicParam,
    details: (c) => {
      if (!c.ok) return {};
      const asked = Array.isArray(c.body.statuses) ? c.body.statuses.filter((s) => (PURGEABLE_STATUSES as readonly unknown[]).includes(s)) : [];
      return { statuses: asked.length > 0 ? [...new Set(asked)] : DEFAULT_PURGE_STATUSES, deleted: number(c.response?.deleted) };
    },
  },
  // The key is what the caller deletes by, and keys are never recorded: the topic and the count only.
  'DELETE /api/topics/:topic/messages/by-key/:key': {
    action: 'topic.delete_by_key',
    topic: topicParam,
    details: (c) => (c.ok ? { deleted: number(c.response?.deleted) } : {}),
  },
  'DELETE /api/topics/:topic/message-log': {
    action: 'message_log.delete',
    topic: topicParam,
    details: (c) => (c.ok ? { before: short(c.query.before), deleted: number(c.response?.deleted) } : {}),
  },
  'POST /api/topics/:topic/replay': {
    action: 'topic.replay',
    topic: topicParam,
    details: (c) => (c.ok ? { replayed_from: short(c.response?.replayed_from), enqueued: number(c.response?.enqueued) } : {}),
  },
  // The dead letter's topic, read before the requeue moves it.
  'POST /api/messages/:id/requeue': {
    action: 'message.requeue',
    before: (params, ctx) => ctx.messages.topicOf(params.id),
    topic: (c: AuditCall<string | null>) => c.state,
    details: (c) => ({ message_id: uuid(c.params.id) ?? undefined }),
  },
  'PUT /api/admin/delete-reaper/schedule': {
    action: (c) => (typeof c.body.schedule === 'string' && c.body.schedule.trim() === '' ? 'reaper_schedule.clear' : 'reaper_schedule.set'),
    target: () => 'delete',
    details: (c) => ({ schedule: c.ok ? short(c.response?.schedule) : short(c.body.schedule) }),
  },
  'POST /api/admin/expiry-reaper/run': reaperRun('expiry'),
  'POST /api/admin/delete-reaper/run': reaperRun('delete'),
  'POST /api/admin/archive-reaper/run': reaperRun('archive'),
  // Users: never a password or its hash; `changed` names the fields a PUT set.
  'POST /api/users': {
    action: 'user.create',
    target: (c) => (c.ok ? uuid(c.response?.id) : null),
    details: (c) => ({ username: short(c.body.username), is_admin: c.body.is_admin === true }),
  },
  'PUT /api/users/:id': {
    action: 'user.update',
    target: userTarget,
    before: (params, ctx) => username(ctx, params.id),
    details: (c: AuditCall<string | undefined>) => ({
      username: c.ok ? short(c.response?.username) : c.state,
      changed: fieldsSet(c.body, ['username', 'password', 'is_admin']),
      is_admin: typeof c.body.is_admin === 'boolean' ? c.body.is_admin : undefined,
    }),
  },
  'DELETE /api/users/:id': {
    action: 'user.delete',
    target: userTarget,
    before: (params, ctx) => username(ctx, params.id),
    details: (c: AuditCall<string | undefined>) => ({ username: c.state }),
  },
  'POST /api/users/:id/grants': {
    action: 'grant.create',
    target: userTarget,
    before: (params, ctx) => username(ctx, params.id),
    details: (c: AuditCall<string | undefined>) => ({
      username: c.state,
      grant_id: c.ok ? uuid(c.response?.id) : undefined,
      action: short(c.body.action),
      topic_pattern: c.ok ? short(c.response?.topic_pattern) : short(c.body.topic_pattern),
    }),
  },
  'DELETE /api/users/:id/grants/:grantId': {
    action: 'grant.delete',
    target: userTarget,
    before: (params, ctx) => username(ctx, params.id),
    details: (c: AuditCall<string | undefined>) => ({ username: c.state, grant_id: uuid(c.params.grantId) ?? undefined }),
  },
  'POST /api/users/:id/consumer-group-grants': {
    action: 'consume_grant.create',
    target: userTarget,
    before: (params, ctx) => username(ctx, params.id),
    details: (c: AuditCall<string | undefined>) => ({
      username: c.state,
      grant_id: c.ok ? uuid(c.response?.id) : undefined,
      consumer_group: short(c.body.consumer_group),
      topic_pattern: c.ok ? short(c.response?.topic_pattern) : short(c.body.topic_pattern),
    }),
  },
};
