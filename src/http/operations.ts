import { buildOpenApiDocument } from './openapi/document.js';
import type { Operation } from './operation.js';
import { fieldsOf } from './validation.js';
import { accessKeyOperations } from './routes/access-keys.js';
import { auditLogOperations } from './routes/audit-log.js';
import { authOperations } from './routes/auth.js';
import { consumerGroupOperations } from './routes/consumer-groups.js';
import { messageOperations } from './routes/messages.js';
import { reaperOperations } from './routes/reapers.js';
import { replayOperations } from './routes/replay.js';
import { serviceOperations } from './routes/service.js';
import { topicAdminOperations } from './routes/topic-admin.js';
import { topicConfigOperations } from './routes/topic-configs.js';
import { userOperations } from './routes/users.js';

let document: { document: Record<string, unknown>; text: string } | undefined;

/** The OpenAPI document of every operation, built on first use (at start-up) and kept: it never changes at run time. */
export function openApiDocument(): { document: Record<string, unknown>; text: string } {
  if (!document) {
    const built = buildOpenApiDocument(OPERATIONS);
    document = { document: built, text: JSON.stringify(built) };
  }
  return document;
}

/**
 * Every operation of the HTTP API (docs/http-api.md), in the order of the OpenAPI document. The router tries
 * the message operations first (router order, app.ts): they carry nearly all of the traffic.
 */
export const OPERATIONS: readonly Operation[] = [
  ...serviceOperations(() => openApiDocument().text),
  ...authOperations,
  ...messageOperations,
  ...topicConfigOperations,
  ...topicAdminOperations,
  ...consumerGroupOperations,
  ...replayOperations,
  ...reaperOperations,
  ...userOperations,
  ...accessKeyOperations,
  ...auditLogOperations,
];

/** The operations in the order the router tries their paths: the hot message operations first. */
export const ROUTER_ORDER: readonly Operation[] = [...messageOperations, ...OPERATIONS.filter((op) => !messageOperations.includes(op))];

/** The body fields each `METHOD /template` reads, derived from the declarations (the fuzzers and consistency tests read it). */
export const BODY_FIELDS: Readonly<Record<string, readonly string[]>> = Object.fromEntries(
  OPERATIONS.filter((op) => op.body).map((op) => [`${op.method} ${op.path}`, fieldsOf(op.body!.schema)]),
);
