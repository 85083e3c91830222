import { z } from 'zod';
import { invalid } from '../queue/errors.js';

/** Every request body and query this transport accepts, in one place. */
const stringMap = z.record(z.string(), z.string({ error: 'metadata values must be strings' }), { error: 'metadata must be an object of string values' });

/** Strict: also the shape of each item of a batch, whose unknown fields nothing else checks (see BODY_FIELDS). */
export const enqueueBody = z.strictObject({
  topic: z.string({ error: 'topic is required and must be a string' }),
  payload: z.string({ error: 'payload is required and must be a string' }),
  metadata: stringMap.nullish(),
  key: z.string({ error: 'key must be a string' }).nullish(),
});

export const enqueueBatchBody = z.object({
  messages: z.array(z.unknown(), { error: 'messages must be an array of messages' }),
});

export const dequeueBody = z.object({
  topic: z.string({ error: 'topic is required and must be a string' }),
  count: z.number({ error: 'count must be an integer from 1 to 1000' }).optional(),
  visibility_timeout_seconds: z.number({ error: 'visibility_timeout_seconds must be an integer from 1 to 43200' }).optional(),
  consumer_group: z.string({ error: 'consumer_group must be a string' }).optional(),
});

export const nackBody = z.object({
  error: z.string({ error: 'error must be a string' }).optional(),
  consumer_group: z.string({ error: 'consumer_group must be a string' }).optional(),
});

export const ackBody = z.object({
  consumer_group: z.string({ error: 'consumer_group must be a string' }).optional(),
});

export const ackBatchBody = z.object({
  ids: z.array(z.string({ error: 'ids must be strings' }), { error: 'ids is required and must be an array of message ids' }),
  consumer_group: z.string({ error: 'consumer_group must be a string' }).optional(),
});

export const schemaBody = z.object({ schema_json: z.string({ error: 'schema_json is required and must be a string' }) });

export const consumerGroupBody = z.object({ consumer_group: z.string({ error: 'consumer_group is required and must be a string' }) });

export const replayBody = z.object({ from_time: z.unknown().optional() });

export const scheduleBody = z.object({ schedule: z.string({ error: 'schedule is required and must be a string (a cron expression, or "" to disable)' }) });

export const purgeBody = z.object({ statuses: z.array(z.unknown(), { error: 'statuses must be an array' }).nullish() });

/** Top-level fields of a body that is not read through a zod schema (topic configuration, users, grants, login). */
const TOPIC_CONFIG_FIELDS = ['max_retries', 'message_ttl_seconds', 'max_depth', 'throughput_limit', 'replayable', 'replay_window_seconds'];
const USER_FIELDS = ['username', 'password', 'is_admin'];

const fieldsOf = (schema: z.ZodObject) => Object.keys(schema.shape);

/**
 * Unknown request fields are refused: every field a route reads is listed here, by method and route
 * template, and a body holding any other field is 400 `unknown field "x"`, on every route (routes not listed
 * take no body fields at all) and on the fast path alike. A misspelt field is an error rather than a silent
 * default: `{"max_retires": 5}` would otherwise reset a topic's configuration to the defaults. route-table.ts
 * runs the check on every express route, fast-path.ts on the three hot routes.
 */
export const BODY_FIELDS: Readonly<Record<string, readonly string[]>> = {
  'POST /api/messages': fieldsOf(enqueueBody),
  'POST /api/messages/batch': fieldsOf(enqueueBatchBody),
  'POST /api/messages/dequeue': fieldsOf(dequeueBody),
  'POST /api/messages/ack': fieldsOf(ackBatchBody),
  'POST /api/messages/:id/ack': fieldsOf(ackBody),
  'POST /api/messages/:id/nack': fieldsOf(nackBody),
  'PUT /api/topic-configs/:topic': TOPIC_CONFIG_FIELDS,
  'PUT /api/topic-schemas/:topic': fieldsOf(schemaBody),
  'POST /api/topics/:topic/purge': fieldsOf(purgeBody),
  'POST /api/topics/:topic/consumer-groups': fieldsOf(consumerGroupBody),
  'POST /api/topics/:topic/replay': fieldsOf(replayBody),
  'PUT /api/admin/delete-reaper/schedule': fieldsOf(scheduleBody),
  'POST /api/auth/login': ['username', 'password'],
  'POST /api/users': USER_FIELDS,
  'PUT /api/users/:id': USER_FIELDS,
  'POST /api/users/:id/grants': ['action', 'topic_pattern'],
  'POST /api/users/:id/consumer-group-grants': ['consumer_group', 'topic_pattern'],
};

function unknownFieldsMessage(unknown: string[], allowed: readonly string[]): string {
  const named = unknown.slice(0, 3).map((f) => JSON.stringify(f.length > 64 ? `${f.slice(0, 64)}…` : f)).join(', ');
  const what = `unknown field${unknown.length > 1 ? 's' : ''} ${named}${unknown.length > 3 ? ` and ${unknown.length - 3} more` : ''}`;
  return allowed.length === 0 ? `${what}; this request takes no body fields` : `${what}; allowed: ${allowed.join(', ')}`;
}

/** 400 when `body` (an object, see assertObjectBody) holds a field that `METHOD /template` does not read. */
export function assertKnownFields(route: string, body: unknown): void {
  if (body === undefined || body === null || typeof body !== 'object') return;
  const allowed = BODY_FIELDS[route] ?? [];
  let unknown: string[] | undefined;
  for (const field in body) if (!allowed.includes(field)) (unknown ??= []).push(field);
  if (unknown) throw invalid(unknownFieldsMessage(unknown, allowed));
}

/**
 * A request body is a JSON object, or nothing (an empty body reads as `{}`). JSON that parses to an array,
 * a string, a number, a boolean or null is 400 `request body must be a JSON object`; JSON that does not parse
 * is `malformed JSON body` (src/http/errors.ts).
 */
export function assertObjectBody(body: unknown): void {
  if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) throw invalid(NOT_AN_OBJECT);
}

const NOT_AN_OBJECT = 'request body must be a JSON object';

const MAX_PAGE = 200;

/** Contract §7: limit above 200 is clamped; limit < 1, non-integers or a negative offset are 400. */
export function parsePage(query: Record<string, unknown>): { limit: number; offset: number } {
  const integer = (name: string, fallback: number): number => {
    const raw = query[name];
    if (raw === undefined || raw === '') return fallback;
    if (typeof raw !== 'string' || !/^-?\d+$/.test(raw)) throw invalid(`${name} must be an integer`);
    return Number(raw);
  };
  const limit = integer('limit', 50);
  const offset = integer('offset', 0);
  if (limit < 1) throw invalid('limit must be at least 1');
  if (offset < 0) throw invalid('offset must not be negative');
  return { limit: Math.min(limit, MAX_PAGE), offset };
}

/** An absent or empty body is `{}`; anything but a JSON object is 400. */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const value = body === undefined ? {} : body;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid(NOT_AN_OBJECT);
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (issue.code === 'unrecognized_keys' && schema instanceof z.ZodObject) throw invalid(unknownFieldsMessage(issue.keys, fieldsOf(schema)));
  throw invalid(issue.message);
}

export function queryString(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalid(`${name} must be given once, as a string`);
  return value;
}
