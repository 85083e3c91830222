import { z } from 'zod';
import { VERSION } from '../../version.js';
import { needsToken, type Operation } from '../operation.js';
import * as R from './responses.js';

type JsonObject = Record<string, unknown>;

const JSON_SCHEMA = { target: 'draft-2020-12', io: 'input' } as const;
const SCHEMA_REF = (name: string) => `#/components/schemas/${name}`;

/** Sorted: loaders disagree on the order of a module namespace's keys (tsx sorts them, vitest does not). */
const RESPONSE_BODIES: Record<string, z.ZodType> = Object.fromEntries(
  Object.entries(R)
    .map(([name, schema]) => [name === 'ErrorBody' ? 'Error' : name, schema as z.ZodType] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
);

/** Error answers, shared by reference: every one is `{"error": "..."}`. */
const ERRORS: Record<number, { name: string; description: string; retryAfter?: true }> = {
  400: {
    name: 'BadRequest',
    description:
      'The request is malformed or a value is invalid; `error` says which. Every operation, one without a request body included, answers it for a body that does not parse as JSON, is not a JSON object or holds a field the operation does not take (`unknown field "x"`), and for a body cut short, not matching its Content-Length or not decompressing.',
  },
  401: { name: 'Unauthorized', description: 'No valid bearer token (authentication on).' },
  403: { name: 'Forbidden', description: 'The token lacks the grant or the admin flag this needs.' },
  404: { name: 'NotFound', description: 'No such resource.' },
  409: { name: 'Conflict', description: 'Already exists, or managed by a Kubernetes resource.' },
  413: {
    name: 'PayloadTooLarge',
    description: 'Every operation answers it for a request body over the limit (64 MiB for a batch enqueue, 6 x queue.max_payload_bytes + 64 KiB otherwise, after decompression). On an enqueue (one message or a batch): a payload over queue.max_payload_bytes, or metadata over 64 KiB as JSON.',
  },
  415: {
    name: 'UnsupportedMediaType',
    description: 'Every operation answers it for a body sent with a Content-Type charset the service does not read (send UTF-8) or a Content-Encoding other than identity, gzip, deflate or br.',
  },
  422: { name: 'Unprocessable', description: 'Well-formed but refused: see `error`.' },
  429: { name: 'TooManyRequests', description: 'The topic is full, or too many login attempts or failed access keys from this client.', retryAfter: true },
  500: { name: 'InternalError', description: 'An unexpected failure (logged with the request id).' },
  503: {
    name: 'Unavailable',
    description: 'The database is unavailable or busy, or the server has too many connections; on the access-key operations, access keys are off (no auth.credentials_key).',
    retryAfter: true,
  },
};

const TAGS = [
  { name: 'service', description: 'Health, readiness, version, metrics and this document.' },
  { name: 'auth', description: 'Logging in (docs/auth.md).' },
  { name: 'messages', description: 'Enqueue, dequeue, ack, nack and requeue.' },
  { name: 'topics', description: 'Topic configuration, Avro schemas, stats and maintenance.' },
  { name: 'consumer-groups', description: 'Fan-out to consumer groups.' },
  { name: 'replay', description: 'The archive log of replayable topics, and replay.' },
  { name: 'reapers', description: 'The expiry, delete and archive reapers.' },
  { name: 'users', description: 'Users and their grants (admin only).' },
  { name: 'audit', description: 'The audit trail (admin only).' },
];

const PATH_PARAMETERS: Record<string, string> = {
  id: 'A message id or user id (a UUID).',
  topic: 'A topic name.',
  key: 'A message key.',
  group: 'A consumer group name.',
  grantId: 'A grant id (a UUID).',
  keyId: 'An access key id (`CVAK...`).',
};

/** `/api/messages/:id/ack` → `/api/messages/{id}/ack` */
export const openApiPath = (template: string) => template.replace(/:(\w+)/g, '{$1}');

const pathParameterNames = (template: string) => [...template.matchAll(/:(\w+)/g)].map((m) => m[1]);

/** zod's bounds of a safe integer say nothing to a reader; and the document carries no `$schema` per schema. */
function tidy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(tidy);
  if (value === null || typeof value !== 'object') return value;
  const out: JsonObject = {};
  for (const [key, item] of Object.entries(value)) {
    if (key === '$schema' || key === '$id') continue;
    if (key === 'minimum' && item === Number.MIN_SAFE_INTEGER) continue;
    if (key === 'maximum' && item === Number.MAX_SAFE_INTEGER) continue;
    out[key] = tidy(item);
  }
  return out;
}

/** The request bodies of the operations, by the names they declare. */
function requestBodies(operations: readonly Operation[]): Record<string, z.ZodType> {
  const bodies: Record<string, z.ZodType> = {};
  for (const { body, operationId } of operations) {
    if (!body) continue;
    if (bodies[body.name] !== undefined && bodies[body.name] !== body.schema) throw new Error(`${operationId}: request body name ${body.name} is taken by another schema`);
    bodies[body.name] = body.schema;
  }
  return bodies;
}

function componentSchemas(operations: readonly Operation[]): { schemas: JsonObject; nameOf: Map<z.ZodType, string> } {
  const registry = z.registry<{ id: string }>();
  const nameOf = new Map<z.ZodType, string>();
  for (const [name, schema] of Object.entries({ ...RESPONSE_BODIES, ...requestBodies(operations) })) {
    registry.add(schema, { id: name });
    nameOf.set(schema, name);
  }
  const { schemas } = z.toJSONSchema(registry, { ...JSON_SCHEMA, uri: SCHEMA_REF });
  return { schemas: tidy(schemas) as JsonObject, nameOf };
}

function queryParameters(query: z.ZodType): JsonObject[] {
  const schema = tidy(z.toJSONSchema(query, JSON_SCHEMA)) as { properties?: Record<string, JsonObject>; required?: string[] };
  return Object.entries(schema.properties ?? {}).map(([name, { description, ...property }]) => ({
    name,
    in: 'query',
    required: schema.required?.includes(name) ?? false,
    ...(description === undefined ? {} : { description }),
    schema: property,
  }));
}

/**
 * The operation's own errors, and those the pipeline (router.ts) answers on every operation before the
 * handler has a say: 401 where a token is needed, and 429 there for a client over the limit of failed access keys; 400 for a body that does not parse as JSON, is cut short,
 * does not match its Content-Length, does not decompress, is not an object or holds an unknown field (an
 * operation that takes no body reads and refuses one too); 413 for a body over its limit; 415 for a charset or
 * Content-Encoding it does not read. Then 403 where a grant or the admin flag is needed, and the failures any
 * request may meet.
 */
function errorStatuses(op: Operation): number[] {
  const statuses = new Set([...(op.errors ?? []), 400, ...(needsToken(op) ? [401, 429] : []), 413, 415]);
  if (op.access.kind === 'grant' || op.access.kind === 'admin') statuses.add(403);
  statuses.add(500);
  statuses.add(503);
  return [...statuses].sort((a, b) => a - b);
}

function successResponse(op: Operation, nameOf: Map<z.ZodType, string>): JsonObject {
  const { schema, description } = op.success;
  if (schema === 'empty') return { description };
  if (schema === 'text') return { description, content: { 'text/plain': { schema: { type: 'string' } } } };
  const name = nameOf.get(schema);
  if (!name) throw new Error(`${op.operationId}: its response schema is not exported from responses.ts`);
  return { description, content: { 'application/json': { schema: { $ref: SCHEMA_REF(name) } } } };
}

function operationObject(op: Operation, nameOf: Map<z.ZodType, string>): JsonObject {
  const parameters = [
    ...pathParameterNames(op.path).map((name) => ({ name, in: 'path', required: true, description: PATH_PARAMETERS[name], schema: { type: 'string' } })),
    ...(op.query ? queryParameters(op.query) : []),
  ];
  const responses: JsonObject = { [op.success.status]: successResponse(op, nameOf) };
  for (const status of errorStatuses(op)) responses[status] = { $ref: `#/components/responses/${ERRORS[status].name}` };
  const requestBody = op.body ? { required: op.body.optional !== true, content: { 'application/json': { schema: { $ref: SCHEMA_REF(op.body.name) } } } } : undefined;
  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    tags: [op.tag],
    security: needsToken(op) ? [{ bearerAuth: [] }] : [],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
  };
}

function errorResponses(): JsonObject {
  const retryAfter = { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } } };
  return Object.fromEntries(
    Object.values(ERRORS).map((e) => [
      e.name,
      { description: e.description, ...(e.retryAfter ? { headers: retryAfter } : {}), content: { 'application/json': { schema: { $ref: SCHEMA_REF('Error') } } } },
    ]),
  );
}

/** The OpenAPI 3.1 document of `operations`, from their declarations. */
export function buildOpenApiDocument(operations: readonly Operation[]): JsonObject {
  const { schemas, nameOf } = componentSchemas(operations);
  const paths: Record<string, JsonObject> = {};
  for (const op of operations) (paths[openApiPath(op.path)] ??= {})[op.method.toLowerCase()] = operationObject(op, nameOf);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Conveyor HTTP API',
      version: VERSION,
      description:
        'A topic-based message queue. Generated from the declarations of the operations and the zod schemas that validate requests and describe answers; docs/http-api.md has the rules in prose.',
    },
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    tags: TAGS,
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      schemas,
      responses: errorResponses(),
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            'A token from POST /api/auth/login (a JWT); an access key as `<access_key_id>.<secret>`; or, with auth.kubernetes_enabled, a projected Kubernetes ServiceAccount token (docs/auth.md).',
        },
      },
    },
  };
}
