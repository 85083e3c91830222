import { z } from 'zod';
import { invalid } from '../queue/errors.js';

/** Every request body and query this transport accepts, in one place. */
const stringMap = z.record(z.string(), z.string({ error: 'metadata values must be strings' }), { error: 'metadata must be an object of string values' });

export const enqueueBody = z.object({
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
  const value = body === undefined || body === null ? {} : body;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid('request body must be a JSON object');
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw invalid(issue.message);
}

export function queryString(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalid(`${name} must be given once, as a string`);
  return value;
}
