import type { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import type { HttpContext } from '../http/context.js';
import type { ApiRequest, ApiResponse } from '../http/request.js';
import type { AuditAction } from '../queue/audit.js';
import type { QueueService } from '../queue/queues.js';
import type { QueueUrls } from './queue-urls.js';

/**
 * Who may call an action with authentication on, as the HTTP API's operations say it (src/http/operation.ts):
 * - `token`: any valid access key (the handler narrows what it shows: ListQueues);
 * - `grant`: that grant on the queue's topic (`write` for sending, `read` for reading its settings, `admin`
 *   for changing them);
 * - `consume`: what a dequeue and an ack need (the write grant on the topic);
 * - `admin`: the admin flag (deleting and purging queues, as the HTTP purge).
 */
export type SqsAccess = { kind: 'token' } | { kind: 'grant'; action: 'read' | 'write' | 'admin' } | { kind: 'consume' } | { kind: 'admin' };

/** What an audited action records (the queue is the topic acted on); the others say why not. */
export type SqsAudit = { action: AuditAction } | { notAudited: string };

/** Where an action's request names its queue: QueueUrl, QueueName, or none (ListQueues). */
export type QueueParameter = 'QueueUrl' | 'QueueName' | 'none';

export interface SqsCall<B> {
  ctx: HttpContext;
  req: ApiRequest;
  res: ApiResponse;
  body: B;
  principal: Principal | null;
  /** The queue (topic) the request names; '' for actions without one. */
  queue: string;
  queues: QueueService;
  urls: QueueUrls;
}

/**
 * One action of the SQS-compatible API, declared once: the dispatch (X-Amz-Target), the access check, the
 * audit record, the request validation and docs/sqs.md's table of actions (checked by test/sqs-docs.test.ts)
 * all come from it.
 */
export interface SqsAction<S extends z.ZodType = z.ZodType> {
  name: string;
  summary: string;
  access: SqsAccess;
  queue: QueueParameter;
  request: S;
  audit: SqsAudit;
  handler: (call: SqsCall<z.output<S>>) => Promise<Record<string, unknown>>;
}

export function sqsAction<S extends z.ZodType>(action: SqsAction<S>): SqsAction {
  return action as unknown as SqsAction;
}

/** How docs/sqs.md names an access rule. */
export function accessText(access: SqsAccess): string {
  switch (access.kind) {
    case 'token':
      return 'any access key';
    case 'grant':
      return `${access.action} grant`;
    case 'consume':
      return 'write grant (as dequeue)';
    case 'admin':
      return 'admin';
  }
}

/** What the types cannot hold a declaration to: unique names, a reason for every action left out of the audit. */
export function checkSqsActions(actions: readonly SqsAction[]): void {
  const names = new Set<string>();
  for (const action of actions) {
    if (!/^[A-Z][A-Za-z]+$/.test(action.name)) throw new Error(`SQS action ${action.name}: not an action name`);
    if (names.has(action.name)) throw new Error(`SQS action ${action.name} is declared twice`);
    names.add(action.name);
    if (!action.summary) throw new Error(`SQS action ${action.name}: summary is missing`);
    if ('notAudited' in action.audit && !action.audit.notAudited) throw new Error(`SQS action ${action.name}: notAudited must say why`);
  }
}
