import type { Knex } from 'knex';
import type { Logger } from '../log/logger.js';
import { insertAuditRow, listAuditRows, type AuditRow } from '../store/audit-log.js';
import { TOPIC_CONFIG_FIELDS, type TopicConfigValues } from '../store/topic-configs.js';
import { invalid } from './errors.js';
import { describeManager, encodeManager, type ManagedBy } from './managed-by.js';
import { assertTopicName, isValidTopicName } from './topic-names.js';

/** What an audit record says was done (docs/security.md, "Audit log", lists each with its details). */
export type AuditAction =
  | 'topic_config.set'
  | 'topic_config.delete'
  | 'topic_config.release'
  | 'topic_schema.set'
  | 'topic_schema.delete'
  | 'topic_schema.release'
  | 'consumer_group.register'
  | 'consumer_group.unregister'
  | 'consumer_group.release'
  | 'user.create'
  | 'user.update'
  | 'user.delete'
  | 'grant.create'
  | 'grant.delete'
  | 'consume_grant.create'
  | 'access_key.create'
  | 'access_key.delete'
  | 'access_grants.apply'
  | 'access_grants.delete'
  | 'access_grants.release'
  | 'topic.purge'
  | 'topic.delete_by_key'
  | 'topic.replay'
  | 'message_log.delete'
  | 'message.requeue'
  | 'reaper_schedule.set'
  | 'reaper_schedule.clear'
  | 'reaper.run';

/** Who did it: a user (id and name at the time), `anonymous` (auth off) or a Kubernetes resource (id null). */
export interface AuditActor {
  id: string | null;
  name: string;
}

export const ANONYMOUS_ACTOR: AuditActor = { id: null, name: 'anonymous' };

/** The controller acts as the resource it applies: `TopicConfig team-a/orders`. */
export const managerActor = (manager: ManagedBy): AuditActor => ({ id: null, name: describeManager(encodeManager(manager)) });

export interface AuditEvent {
  actor: AuditActor;
  action: AuditAction;
  /** Kept only when it is a valid topic name: a refused request may name anything. */
  topic?: string | null;
  /** What was acted on: the topic, a user id, a reaper. */
  target?: string | null;
  ok: boolean;
  /** The HTTP status of the answer; null for the controller's writes. */
  status?: number | null;
  /** Names, counts and settings only: never payloads, message keys, passwords, hashes or tokens. */
  details?: Record<string, unknown>;
}

export interface AuditEntry {
  id: number;
  at: number;
  actor: AuditActor;
  action: string;
  topic: string | null;
  target: string | null;
  result: 'ok' | 'error';
  status: number | null;
  details: Record<string, unknown>;
}

const MAX_ACTOR = 512;
const MAX_TARGET = 255;
/** Details are small by construction; a record is never refused for its details, they are dropped instead. */
const MAX_DETAILS = 4096;

function detailsText(details: Record<string, unknown> | undefined): string {
  const text = JSON.stringify(details ?? {});
  return text.length <= MAX_DETAILS ? text : JSON.stringify({ truncated: true });
}

function toRow(event: AuditEvent, at: number): Omit<AuditRow, 'id'> {
  return {
    at,
    actor_id: event.actor.id,
    actor: event.actor.name.slice(0, MAX_ACTOR),
    action: event.action,
    topic: isValidTopicName(event.topic) ? event.topic : null,
    target: event.target == null ? null : event.target.slice(0, MAX_TARGET),
    result: event.ok ? 'ok' : 'error',
    status: event.status ?? null,
    details: detailsText(event.details),
  };
}

function toEntry(row: AuditRow): AuditEntry {
  let details: Record<string, unknown> = {};
  try {
    details = JSON.parse(row.details);
  } catch {
    // written by this module, so always JSON; an unreadable row still lists
  }
  return {
    id: row.id,
    at: row.at,
    actor: { id: row.actor_id, name: row.actor },
    action: row.action,
    topic: row.topic,
    target: row.target,
    result: row.result === 'ok' ? 'ok' : 'error',
    status: row.status,
    details,
  };
}

export interface AuditLogDeps {
  db: Knex;
  logger: Logger;
  now?: () => number;
}

/**
 * The audit trail: every administrative change, and every refused attempt at one, as a row of `audit_log`
 * and one `audit` log line. Recording never fails the change it records: the change is already committed
 * when its record is written, so a failed write is logged (error) and the caller's answer stands.
 */
export class AuditLog {
  private readonly now: () => number;

  constructor(private readonly deps: AuditLogDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Never throws. `log`: the request's logger, so the line carries its request id. */
  async record(event: AuditEvent, log: Logger = this.deps.logger): Promise<void> {
    let row: Omit<AuditRow, 'id'>;
    try {
      row = toRow(event, this.now());
      log.info({ actor: row.actor, actorId: row.actor_id, action: row.action, target: row.target, result: row.result, status: row.status }, 'audit');
      await insertAuditRow(this.deps.db, row);
    } catch (err) {
      log.error({ err, action: event.action }, 'could not write an audit record');
    }
  }

  async list(filter: { topic?: unknown; actor?: unknown }, limit: number, offset: number): Promise<{ items: AuditEntry[]; total: number }> {
    const topic = filter.topic === undefined ? undefined : assertTopicName(filter.topic);
    const actor = filter.actor;
    if (actor !== undefined && (typeof actor !== 'string' || actor === '' || actor.length > MAX_ACTOR)) {
      throw invalid(`actor must be a name or user id of 1-${MAX_ACTOR} characters`);
    }
    const page = await listAuditRows(this.deps.db, { topic, actor }, limit, offset);
    return { items: page.items.map(toEntry), total: page.total };
  }
}

/** A topic configuration's settings (without topic, manager and time), or null for none. */
export function configValues(row: TopicConfigValues | null | undefined): Record<string, unknown> | null {
  if (!row) return null;
  return Object.fromEntries(TOPIC_CONFIG_FIELDS.map((field) => [field, row[field]]));
}

/**
 * The settings a write changed, `{max_retries: {from: 3, to: 5}}`. A topic without a configuration counts as
 * one with every setting null (the global default) and replayable false.
 */
export function configChanges(before: TopicConfigValues | null | undefined, after: TopicConfigValues): Record<string, { from: unknown; to: unknown }> {
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const field of TOPIC_CONFIG_FIELDS) {
    const from = before ? before[field] : field === 'replayable' ? false : null;
    if (from !== after[field]) changes[field] = { from, to: after[field] };
  }
  return changes;
}
