import { z } from 'zod';
import { isValidPattern } from '../auth/grants-policy.js';
import { MIN_PASSWORD_LENGTH } from '../auth/passwords.js';
import { assertConsumerGroupName } from '../queue/consumer-group-names.js';
import { DomainError, invalid } from '../queue/errors.js';
import { ACK_BATCH_IDS_MESSAGE, DEQUEUE_COUNT_MESSAGE, MAX_DELAY_SECONDS, MAX_DEQUEUE_COUNT, DELAY_SECONDS_MESSAGE, MAX_VISIBILITY_SECONDS, VISIBILITY_CHANGE_MESSAGE, VISIBILITY_TIMEOUT_MESSAGE } from '../queue/bounds.js';
import { MAX_BATCH_ENQUEUE } from '../queue/messages.js';
import { MESSAGE_STATUSES, PURGEABLE_STATUSES, topicConfigBody } from '../queue/topics.js';
import { MAX_WAIT_SECONDS, WAIT_SECONDS_MESSAGE } from '../queue/bounds.js';
import type { MessageStatus } from '../store/messages/rows.js';

/** As src/auth/users.ts, which checks them again for its other callers. */
const MAX_USERNAME_LENGTH = 255;
/** As src/queue/consumer-group-names.ts: a grant names a group that registration could create. */
const MAX_GROUP_NAME_LENGTH = 200;

/**
 * Text JSON can carry but UTF-8 cannot: a lone UTF-16 surrogate (`"\ud800"` without its pair). Stored, it
 * would become U+FFFD, so two different keys, names or payloads could come back as one; it is refused
 * instead, by every string field of every request (`wellFormed` below), naming the field.
 */
const isWellFormed = (value: string): boolean => (value as string & { isWellFormed(): boolean }).isWellFormed();
const notWellFormed = (field: string) => `${field} must be well-formed Unicode text: it holds a lone surrogate (such as \\ud800)`;

const toWellFormed = (value: string): string => (value as string & { toWellFormed(): string }).toWellFormed();

/** The one check of every request string: well-formed Unicode, else 400 naming `field`. */
function wellFormed<T extends z.ZodString>(schema: T, field: string): T {
  return schema.refine(isWellFormed, { error: notWellFormed(field) }) as T;
}

/**
 * JSON.parse makes `"__proto__"` an own key like any other, but z.record leaves it out of what it returns
 * (assigning it would replace the result's prototype): refused rather than dropped. Keys must be
 * well-formed like every other string.
 */
function checkMetadataKeys(value: unknown, ctx: z.RefinementCtx): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return;
  if (Object.hasOwn(value, '__proto__')) ctx.addIssue({ code: 'custom', message: 'metadata must not have the key "__proto__"' });
  else if (Object.keys(value).some((key) => !isWellFormed(key))) ctx.addIssue({ code: 'custom', message: notWellFormed('metadata keys') });
}

/**
 * Every request body and query this transport accepts, in one place. The OpenAPI document (src/http/openapi)
 * is generated from these same schemas, so what is documented is what is checked. `.meta()` only describes:
 * the rules the domain keeps (topic and group names, keys, payload size, cron, Avro, RFC 3339 times) are
 * described in words there, and checked once, by the domain, for HTTP and gRPC alike.
 */
const stringMap = z
  .preprocess(
    (value, ctx) => {
      checkMetadataKeys(value, ctx);
      return value;
    },
    z.record(z.string(), wellFormed(z.string({ error: 'metadata values must be strings' }), 'metadata values'), {
      error: 'metadata must be an object of string values',
    }),
  )
  .meta({ description: 'Free string keys and string values.' });

const TOPIC = 'A topic name: 1-200 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit.';
const optionalGroup = () => wellFormed(z.string({ error: 'consumer_group must be a string' }), 'consumer_group').optional().meta({ description: 'The consumer group (fan-out topics).' });

/** Strict: also the shape of each item of a batch, whose unknown fields the router's field check does not reach. */
export const enqueueBody = z.strictObject({
  topic: wellFormed(z.string({ error: 'topic is required and must be a string' }), 'topic').meta({ description: `${TOPIC} Not a \`.dlq\` topic.` }),
  payload: wellFormed(z.string({ error: 'payload is required and must be a string' }), 'payload').meta({ description: 'Non-empty; at most queue.max_payload_bytes bytes of UTF-8 (413 beyond).' }),
  metadata: stringMap.nullish(),
  key: wellFormed(z.string({ error: 'key must be a string' }), 'key').nullish().meta({ description: '1-255 characters; a pending message with this key on the topic is overwritten (its delay too).' }),
  ordering_key: wellFormed(z.string({ error: 'ordering_key must be a string' }), 'ordering_key')
    .nullish()
    .meta({ description: '1-255 bytes of UTF-8: the messages of one ordering key on a topic (and in each consumer group) are delivered one at a time, in enqueue order.' }),
  delay_seconds: z
    .int({ error: DELAY_SECONDS_MESSAGE })
    .min(0, { error: DELAY_SECONDS_MESSAGE })
    .max(MAX_DELAY_SECONDS, { error: DELAY_SECONDS_MESSAGE })
    .nullish()
    .meta({
      description:
        "Stored at once (pending, counted by max_depth), but no consumer gets it for this many seconds, at most queue.max_delay_seconds. Absent: the topic's delivery_delay_seconds; 0: at once whatever the topic says. Not with deliver_at; it must end before the message's TTL does.",
    }),
  deliver_at: wellFormed(z.string({ error: 'deliver_at must be an RFC 3339 time with a time zone' }), 'deliver_at')
    .nullish()
    .meta({ description: 'RFC 3339 with a zone: no consumer gets it before then (a past time: at once); at most queue.max_delay_seconds ahead. Not with delay_seconds.' }),
});

export const enqueueBatchBody = z.object({
  messages: z
    .array(enqueueBody, { error: 'messages must be an array of messages' })
    .min(1, { error: 'messages must hold at least one message' })
    .max(MAX_BATCH_ENQUEUE, { error: `messages must hold at most ${MAX_BATCH_ENQUEUE} messages` }),
});

/** The domain checks these too (for gRPC); the texts are the domain's, so both transports say the same. */
const countMessage = DEQUEUE_COUNT_MESSAGE;
const visibilityMessage = VISIBILITY_TIMEOUT_MESSAGE;

export const dequeueBody = z.object({
  topic: wellFormed(z.string({ error: 'topic is required and must be a string' }), 'topic').meta({ description: `${TOPIC} \`.dlq\` topics included.` }),
  count: z.int({ error: countMessage }).min(1, { error: countMessage }).max(MAX_DEQUEUE_COUNT, { error: countMessage }).optional().meta({ default: 1 }),
  visibility_timeout_seconds: z
    .int({ error: visibilityMessage })
    .min(1, { error: visibilityMessage })
    .max(MAX_VISIBILITY_SECONDS, { error: visibilityMessage })
    .optional()
    .meta({ description: 'Default queue.visibility_timeout.' }),
  consumer_group: optionalGroup(),
  wait_seconds: z
    .int({ error: WAIT_SECONDS_MESSAGE })
    .min(0, { error: WAIT_SECONDS_MESSAGE })
    .max(MAX_WAIT_SECONDS, { error: WAIT_SECONDS_MESSAGE })
    .optional()
    .meta({
      description:
        'Long polling (extension): with nothing available, wait up to this many seconds for a message and answer as soon as one comes; an empty list when none did. Absent or 0: answer at once. 429 when server.max_waiting_dequeues calls wait already.',
    }),
});

export const visibilityBody = z.object({
  visibility_timeout_seconds: z
    .int({ error: VISIBILITY_CHANGE_MESSAGE })
    .min(0, { error: VISIBILITY_CHANGE_MESSAGE })
    .max(MAX_VISIBILITY_SECONDS, { error: VISIBILITY_CHANGE_MESSAGE })
    .meta({ description: 'The claim now ends this many seconds from now; 0 gives the message back at once without counting an attempt.' }),
  consumer_group: optionalGroup(),
});

export const nackBody = z.object({
  // Diagnostic text, often cut by UTF-16 code units in the consumer (`message.slice(0, n)` can split an emoji):
  // a lone surrogate becomes U+FFFD rather than refusing the nack and leaving the message held until its timeout.
  error: z
    .string({ error: 'error must be a string' })
    .transform(toWellFormed)
    .optional()
    .meta({ description: 'Recorded as last_error (at most 64 KiB kept); a lone UTF-16 surrogate is recorded as U+FFFD.' }),
  consumer_group: optionalGroup(),
  delay_seconds: z
    .int({ error: DELAY_SECONDS_MESSAGE })
    .min(0, { error: DELAY_SECONDS_MESSAGE })
    .max(MAX_DELAY_SECONDS, { error: DELAY_SECONDS_MESSAGE })
    .optional()
    .meta({ description: 'A retry is claimable again only this many seconds after the nack (default 0: at once).' }),
});

export const ackBody = z.object({ consumer_group: optionalGroup() });

export const ackBatchBody = z.object({
  ids: z
    .array(wellFormed(z.string({ error: 'ids must be strings' }), 'ids'), { error: 'ids is required and must be an array of message ids' })
    .max(MAX_DEQUEUE_COUNT, { error: ACK_BATCH_IDS_MESSAGE }),
  consumer_group: optionalGroup(),
});

export const schemaBody = z.object({
  schema_json: wellFormed(z.string({ error: 'schema_json is required and must be a string' }), 'schema_json').meta({ description: 'An Avro schema, as JSON text.' }),
});

export const consumerGroupBody = z.object({
  consumer_group: wellFormed(z.string({ error: 'consumer_group is required and must be a string' }), 'consumer_group').meta({ description: '1-200 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit.' }),
});

/** The time is checked by the archive (422 for a bad one, as the spec has it), so any value reaches it. */
export const replayBody = z.object({
  from_time: z
    .unknown()
    .optional()
    .meta({ type: 'string', format: 'date-time', description: 'RFC 3339; default the start of the replay window, else the whole log.' }),
});

export const scheduleBody = z.object({
  schedule: wellFormed(z.string({ error: 'schedule is required and must be a string (a cron expression, or "" to disable)' }), 'schedule').meta({ description: 'A 5-field cron expression (6 with leading seconds, or a nickname such as @daily); "" disables the reaper.' }),
});

export const purgeBody = z.object({
  statuses: z
    .array(
      z.enum(PURGEABLE_STATUSES, { error: (issue) => `unrecognised status "${String(issue.input)}"; use ${PURGEABLE_STATUSES.join(', ')}` }),
      { error: 'statuses must be an array' },
    )
    .nullish()
    .meta({ description: 'Default (absent or empty): pending, processing and expired.' }),
});

export { topicConfigBody } from '../queue/topics.js';

const username = () =>
  wellFormed(z.string({ error: 'username is required and must be a non-empty string' }), 'username')
    .refine((v) => v.trim() !== '', { error: 'username is required and must be a non-empty string' })
    .max(MAX_USERNAME_LENGTH, { error: `username must be at most ${MAX_USERNAME_LENGTH} characters` });
const password = () =>
  wellFormed(z.string({ error: 'password is required and must be a string' }), 'password')
    .min(1, { error: 'password is required and must be a string' })
    .min(MIN_PASSWORD_LENGTH, { error: `password must be at least ${MIN_PASSWORD_LENGTH} characters` });
const isAdmin = () => z.boolean({ error: 'is_admin must be a boolean' });

export const createUserBody = z.object({ username: username(), password: password(), is_admin: isAdmin().nullish().meta({ default: false }) });

/** Only the fields given change; null is not "unchanged". */
export const updateUserBody = z.object({ username: username().optional(), password: password().optional(), is_admin: isAdmin().optional() });

const PATTERN_MESSAGE = 'topic_pattern must be "*", a topic name, "<prefix>.*" or "<prefix>*"';
const topicPattern = () =>
  wellFormed(z.string({ error: PATTERN_MESSAGE }), 'topic_pattern')
    .refine((v) => v === '' || isValidPattern(v), { error: PATTERN_MESSAGE })
    .nullish()
    .meta({ description: '"*" (the default), a topic name, "<prefix>.*" or "<prefix>*".' });

export const grantBody = z.object({
  action: z.enum(['read', 'write', 'admin'], {
    error: 'action is required and must be one of read, write, admin (consume grants: POST /api/users/:id/consumer-group-grants)',
  }),
  topic_pattern: topicPattern(),
});

/** The domain's own rule (consumer-group-names.ts), with its message: 400 where that rule would be. */
function groupNameIssue(value: string, ctx: z.RefinementCtx): void {
  try {
    assertConsumerGroupName(value);
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    ctx.addIssue({ code: 'custom', message: err.message });
  }
}

const GROUP_REQUIRED = 'consumer_group is required and must be a non-empty string';
/**
 * A consume grant names one group exactly (grants-policy.ts compares names, no patterns), so its group
 * follows the registration rule: a name no group can have would be a grant that allows nothing.
 */
export const consumerGroupGrantBody = z.object({
  consumer_group: wellFormed(z.string({ error: GROUP_REQUIRED }), 'consumer_group')
    .min(1, { error: GROUP_REQUIRED })
    .max(MAX_GROUP_NAME_LENGTH, { error: `consumer_group must be at most ${MAX_GROUP_NAME_LENGTH} characters` })
    .superRefine(groupNameIssue),
  topic_pattern: topicPattern(),
});

/**
 * Describes the login body; the checks themselves stay behind the login rate limit (every attempt counts
 * before anything else, src/auth/authorizer.ts), with these same messages.
 */
export const loginBody = z.object({
  username: z.string({ error: (issue) => (issue.input == null ? 'username is required' : 'username must be a string') }).min(1, { error: 'username is required' }),
  password: z.string({ error: (issue) => (issue.input == null ? 'password is required' : 'password must be a string') }).min(1, { error: 'password is required' }),
});

/** The fields a body schema reads (a batch's: `messages`); none for a schema that is no object. */
export const fieldsOf = (schema: z.ZodType): string[] => (schema instanceof z.ZodObject ? Object.keys(schema.shape) : []);

function unknownFieldsMessage(unknown: string[], allowed: readonly string[]): string {
  const named = unknown.slice(0, 3).map((f) => JSON.stringify(f.length > 64 ? `${f.slice(0, 64)}…` : f)).join(', ');
  const what = `unknown field${unknown.length > 1 ? 's' : ''} ${named}${unknown.length > 3 ? ` and ${unknown.length - 3} more` : ''}`;
  return allowed.length === 0 ? `${what}; this request takes no body fields` : `${what}; allowed: ${allowed.join(', ')}`;
}

/**
 * Unknown request fields are refused: a body holding a field its operation does not read is 400 `unknown field
 * "x"`, on every route (one without a body schema takes no fields at all). A misspelt field is an error rather
 * than a silent default: `{"max_retires": 5}` would otherwise reset a topic's configuration to the defaults.
 * The router runs this check in every operation's chain, after the access check.
 */
export function assertKnownFields(allowed: readonly string[], body: unknown): void {
  if (body === undefined || body === null || typeof body !== 'object') return;
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
const INTEGER_TEXT = /^-?\d+$/;

/**
 * A query parameter holding an integer. On the wire it is text (`?limit=20`); the OpenAPI document calls it
 * an integer (`meta`), which is what the text must spell. Empty is the same as absent.
 */
function queryInteger(name: string, meta: { minimum: number; default: number; description: string }) {
  const message = `${name} must be an integer`;
  return z
    .string({ error: message })
    .refine((v) => v === '' || INTEGER_TEXT.test(v), { error: message })
    .optional()
    .meta({ type: 'integer', ...meta });
}

/** A query parameter given at most once (`?topic=a&topic=b` is 400). */
const queryText = (name: string, description: string) =>
  wellFormed(z.string({ error: `${name} must be given once, as a string` }), name).optional().meta({ description });

const pageShape = {
  limit: queryInteger('limit', { minimum: 1, default: 50, description: `Page size; above ${MAX_PAGE} is clamped to ${MAX_PAGE}.` }),
  offset: queryInteger('offset', { minimum: 0, default: 0, description: `Items to skip; above ${Number.MAX_SAFE_INTEGER} counts as that.` }),
};

const pageNumber = (text: string | undefined, fallback: number) => (text === undefined || text === '' ? fallback : Number(text));

/**
 * Paging (docs/http-api.md, Lists): limit above 200 is clamped; limit < 1, non-integers or a negative offset are 400. The range
 * checks run after every field's own check, so a bad offset text is reported before a limit of 0, as before.
 */
function paged<T extends z.ZodRawShape>(shape: T) {
  return z
    .object({ ...pageShape, ...shape })
    .superRefine((query, ctx) => {
      const { limit, offset } = query as { limit?: string; offset?: string };
      if (pageNumber(limit, 50) < 1) ctx.addIssue({ code: 'custom', message: 'limit must be at least 1' });
      if (pageNumber(offset, 0) < 0) ctx.addIssue({ code: 'custom', message: 'offset must not be negative' });
    })
    .transform((query) => {
      const { limit, offset } = query as { limit?: string; offset?: string };
      // An offset past the largest exact integer is past the end of any list: the same empty page, where the
      // number itself would reach the database as a float (SQLite: a type error) or as exponent text.
      return { ...query, limit: Math.min(pageNumber(limit, 50), MAX_PAGE), offset: Math.min(pageNumber(offset, 0), Number.MAX_SAFE_INTEGER) };
    });
}

const statusList = MESSAGE_STATUSES.join(', ');

/** `GET /api/messages` (the status filter is an extension). */
export const listMessagesQuery = paged({
  topic: queryText('topic', 'Only messages of this topic (a read grant on it with authentication on).'),
  status: z
    .enum(MESSAGE_STATUSES as [MessageStatus, ...MessageStatus[]], {
      error: (issue) => (typeof issue.input === 'string' ? `unrecognised status "${issue.input}"; use ${statusList}` : 'status must be given once, as a string'),
    })
    .optional()
    .meta({ description: 'Only messages of this status (extension).' }),
  order: z
    .enum(['oldest', 'newest'], {
      error: (issue) => (typeof issue.input === 'string' ? `unrecognised order "${issue.input}"; use oldest or newest` : 'order must be given once, as a string'),
    })
    .optional()
    .meta({ description: 'oldest (the default): queue order, oldest first; newest: the latest enqueued first (extension).' }),
});

export const messageLogQuery = paged({});

/** `GET /api/topics` (extension): paged like every list. */
export const listTopicsQuery = paged({});

const BEFORE_REQUIRED = 'before is required and must be an RFC 3339 timestamp, e.g. 2026-11-22T10:00:00Z';

export const messageLogDeleteQuery = z.object({
  before: z
    .string({ error: (issue) => (issue.input === undefined ? BEFORE_REQUIRED : 'before must be given once, as a string') })
    .meta({ format: 'date-time', description: 'Deletes the entries archived before this time.' }),
});

export const auditLogQuery = paged({
  topic: queryText('topic', 'Only records about this topic.'),
  actor: queryText('actor', 'Only records by this caller: a username, `anonymous`, a resource name, or a user id.'),
});

/** A query (node's querystring: a string, or an array when repeated) checked against its schema; 400 otherwise. */
export function parseQuery<T extends z.ZodType>(schema: T, query: unknown): z.output<T> {
  const result = schema.safeParse(query);
  if (result.success) return result.data;
  throw invalid(result.error.issues[0].message);
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

/**
 * A batch enqueue body. A fault in one message names it, as `messages[3]: topic is required…` or
 * `messages[3] must be a JSON object`, the first faulty message first.
 */
export function parseBatchBody(body: unknown): z.output<typeof enqueueBatchBody> {
  const value = body === undefined ? {} : body;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid(NOT_AN_OBJECT);
  const result = enqueueBatchBody.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const [field, index] = issue.path;
  if (field !== 'messages' || typeof index !== 'number') return parseBody(enqueueBatchBody, value);
  const at = `messages[${index}]`;
  if (issue.path.length === 2 && issue.code === 'invalid_type') throw invalid(`${at} must be a JSON object`);
  if (issue.path.length === 2 && issue.code === 'unrecognized_keys') throw invalid(`${at}: ${unknownFieldsMessage(issue.keys, fieldsOf(enqueueBody))}`);
  throw invalid(`${at}: ${issue.message}`);
}
