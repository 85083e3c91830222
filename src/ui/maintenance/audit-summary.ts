import type { AuditEntry } from './api';

type Details = Record<string, unknown>;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined);
const count = (v: unknown, one: string, many = `${one}s`): string => (typeof v === 'number' ? `${v.toLocaleString()} ${v === 1 ? one : many}` : many);
const list = (v: unknown): string | undefined => (Array.isArray(v) && v.length > 0 ? v.map(String).join(', ') : undefined);
/** A user id as people know it: the name from the record, else the users list, else the start of the id. */
export type UserName = (id: string) => string | undefined;

function changes(changed: unknown): string | undefined {
  if (!changed || typeof changed !== 'object') return list(changed);
  const parts = Object.entries(changed as Record<string, unknown>).map(([field, change]) => {
    if (change && typeof change === 'object' && 'from' in change && 'to' in change) {
      const { from, to } = change as { from: unknown; to: unknown };
      return `${field} ${from ?? 'default'} → ${to ?? 'default'}`;
    }
    return field;
  });
  return parts.length > 0 ? parts.join(', ') : undefined;
}

/** The counts a reaper run answered (`{expired: 3}`, `{deleted: 2, audit_deleted: 0}`). */
function counts(d: Details): string {
  const parts = Object.entries(d)
    .filter(([, v]) => typeof v === 'number')
    .map(([k, v]) => `${k.replace(/_/g, ' ')} ${(v as number).toLocaleString()}`);
  return parts.length > 0 ? `: ${parts.join(', ')}` : '';
}

/**
 * One line a person reads ("Set the configuration of orders: max_retries 3 → 5"), from a record's action,
 * topic, target and details (docs/security.md lists them). An action this UI does not know reads as its name.
 */
export function auditSummary(e: AuditEntry, userName: UserName): string {
  const d = (e.details ?? {}) as Details;
  const topic = e.topic ?? e.target ?? '';
  const user = str(d.username) ?? (e.target ? (userName(e.target) ?? `user ${e.target.slice(0, 8)}…`) : 'a user');
  const group = str(d.consumer_group);
  const text = ((): string => {
    switch (e.action) {
      case 'topic_config.set': {
        const what = changes(d.changed) ?? (list(d.fields) ? `fields ${list(d.fields)}` : undefined);
        return `Set the configuration of ${topic}${what ? `: ${what}` : ''}`;
      }
      case 'topic_config.delete':
        return `Deleted the configuration of ${topic}`;
      case 'topic_schema.set':
        return `Set the schema of ${topic}${d.version !== undefined ? ` (version ${str(d.version)})` : ''}`;
      case 'topic_schema.delete':
        return `Deleted the schema of ${topic}`;
      case 'consumer_group.register':
        return `Registered consumer group ${group ?? ''} on ${topic}`;
      case 'consumer_group.unregister':
        return `Unregistered consumer group ${group ?? ''} from ${topic}`;
      case 'topic_config.release':
      case 'topic_schema.release':
      case 'consumer_group.release':
        return `Handed the ${e.action.split('.')[0].replace('topic_', '').replace('_', ' ')} of ${topic} over to the HTTP API`;
      case 'topic.purge':
        return `Purged ${count(d.deleted, 'message')}${list(d.statuses) ? ` (${list(d.statuses)})` : ''} from ${topic}`;
      case 'topic.delete_by_key':
        return `Deleted ${count(d.deleted, 'message')} by key from ${topic}`;
      case 'message_log.delete':
        return `Deleted ${count(d.deleted, 'message-log entry', 'message-log entries')} of ${topic}${str(d.before) ? ` before ${str(d.before)}` : ''}`;
      case 'topic.replay':
        return `Replayed ${count(d.enqueued, 'message')} of ${topic}${str(d.replayed_from) ? ` from ${str(d.replayed_from)}` : ''}`;
      case 'message.requeue':
        return `Requeued dead letter ${str(d.message_id) ?? ''} from ${topic}`;
      case 'reaper_schedule.set':
        return `Set the delete-reaper schedule to "${str(d.schedule) ?? ''}"`;
      case 'reaper_schedule.clear':
        return 'Cleared the delete-reaper schedule';
      case 'reaper.run':
        return `Ran the ${e.target ?? ''} reaper${counts(d)}`;
      case 'user.create':
        return `Created user ${user}${d.is_admin === true ? ' (admin)' : ''}`;
      case 'user.update': {
        const what = list(d.changed);
        return `Updated user ${user}${what ? `: ${what}` : ''}${typeof d.is_admin === 'boolean' ? `, ${d.is_admin ? 'admin' : 'not admin'}` : ''}`;
      }
      case 'user.delete':
        return `Deleted user ${user}`;
      case 'grant.create':
      case 'grant.delete':
        return `${e.action === 'grant.create' ? 'Granted' : 'Revoked'} ${str(d.action) ?? 'a grant'} on ${str(d.topic_pattern) ?? '?'}${e.action === 'grant.create' ? ' to' : ' from'} ${user}`;
      case 'consume_grant.create':
        return `Granted consuming with group ${group ?? '?'} on ${str(d.topic_pattern) ?? '?'} to ${user}`;
      case 'access_key.create':
        return `Created an access key for ${user}`;
      case 'access_key.delete':
        return `Deleted an access key of ${user}`;
      case 'access_grants.apply':
        return `Applied the access grants of ${str(d.username) ?? e.target ?? ''}${list(d.added) ? `: added ${list(d.added)}` : ''}${list(d.removed) ? `; removed ${list(d.removed)}` : ''}`;
      case 'access_grants.delete':
        return `Revoked the managed access grants of ${str(d.username) ?? e.target ?? ''}`;
      case 'access_grants.release':
        return `Handed the access grants of ${str(d.username) ?? e.target ?? ''} over to the HTTP API`;
      default:
        return `${e.action}${e.topic ? ` on ${e.topic}` : e.target ? ` on ${e.target}` : ''}`;
    }
  })();
  return e.result === 'error' ? `Refused: ${text.charAt(0).toLowerCase()}${text.slice(1)}` : text;
}
