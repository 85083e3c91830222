import { isUtf8 } from 'node:buffer';
import parseUrl from 'parseurl';
import type { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { clientAddress } from '../http/client-address.js';
import type { HttpContext } from '../http/context.js';
import { singleBodyLimit } from '../http/body-limits.js';
import type { ApiRequest, ApiResponse, Handler } from '../http/request.js';
import { ANONYMOUS_ACTOR } from '../queue/audit.js';
import { DomainError } from '../queue/errors.js';
import { QueueService } from '../queue/queues.js';
import { isValidTopicName } from '../queue/topic-names.js';
import type { SqsAction } from './action.js';
import { SQS_ACTION_BY_NAME } from './actions.js';
import { readRawBody } from './body.js';
import { queryCodeOf, SqsError, sqsErrorOf } from './errors.js';
import { queueUrls } from './queue-urls.js';
import { parseSignedRequest, signatureMatches } from './signature.js';

const JSON_TYPE = 'application/x-amz-json-1.0';
const TARGET_PREFIX = 'AmazonSQS.';
/** Attribute names and values besides the message body (10 attributes of a few KiB each, at most). */
const ATTRIBUTES_HEADROOM = 256 * 1024;

function send(res: ApiResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** An error as AWS JSON 1.0 answers it: `__type`, `message`, and the Query protocol's code in x-amzn-query-error. */
export function sendSqsError(res: ApiResponse, err: SqsError): void {
  if (res.headersSent) return void res.destroy();
  const fault = err.status >= 500 ? 'Receiver' : 'Sender';
  send(res, err.status, { __type: `com.amazonaws.sqs#${err.code}`, message: err.message }, { 'x-amzn-query-error': `${queryCodeOf(err.code)};${fault}` });
}

/** The zod issues of a request as SQS names them: a missing parameter, or an invalid value. */
function parameterError(error: z.ZodError, body: Record<string, unknown>): SqsError {
  const issue = error.issues[0];
  const path = issue.path.map(String);
  let value: unknown = body;
  for (const part of path) value = value && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
  const name = path.join('.') || 'request';
  if (value === undefined) return new SqsError('MissingParameter', `The request must contain the parameter ${name}.`);
  return new SqsError('InvalidParameterValue', `Value for parameter ${name} is invalid. Reason: ${issue.message}.`);
}

/** The access rule of the action on its queue (docs/sqs.md, Access); nothing with authentication off. */
function checkAccess(ctx: HttpContext, action: SqsAction, principal: Principal | null, queue: string): void {
  if (!ctx.auth.enabled) return;
  const access = action.access;
  if (access.kind === 'token') ctx.auth.requireAuthenticated(principal);
  else if (access.kind === 'admin') ctx.auth.requireAdmin(principal);
  else if (access.kind === 'consume') ctx.auth.requireConsume(principal, queue);
  else ctx.auth.requireTopic(principal, access.action, queue);
}

/**
 * The SQS-compatible API (docs/sqs.md): AWS JSON 1.0 requests (`X-Amz-Target: AmazonSQS.<Action>`) on
 * `POST /` and on a queue URL's path. In this order: the body (its bytes are signed), the action, the
 * signature (with authentication on), the queue the request names, the access rule, the request's fields,
 * then the action's handler; each refusal is an SQS error, and audited actions are recorded either way.
 */
export function sqsEndpoint(ctx: HttpContext): Handler {
  const queues = new QueueService({ db: ctx.db, topics: ctx.topics, messages: ctx.messages });
  const limit = singleBodyLimit(ctx.config) + ATTRIBUTES_HEADROOM;
  const { account_id: accountId, region } = ctx.config.sqs;

  const authenticate = async (req: ApiRequest, raw: Buffer): Promise<Principal | null> => {
    if (!ctx.auth.enabled) return null;
    const signed = parseSignedRequest(req.headers, Date.now());
    const url = parseUrl(req);
    let verdict: boolean | undefined;
    const verify = async (secret: string) => {
      verdict = await signatureMatches({ method: req.method ?? 'POST', path: url?.pathname ?? '/', query: req.query as Record<string, string | string[]>, headers: req.headers, body: raw }, signed, secret);
      return verdict;
    };
    try {
      return await ctx.auth.authenticateSigned(signed.accessKeyId, verify, clientAddress(req, ctx.config.server.trust_proxy));
    } catch (err) {
      if (err instanceof DomainError && err.code === 'unauthenticated') {
        throw verdict === false
          ? new SqsError('SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.', 403)
          : new SqsError('InvalidClientTokenId', 'The security token included in the request is invalid.', 403);
      }
      throw err;
    }
  };

  const serve = async (req: ApiRequest, res: ApiResponse): Promise<void> => {
    const raw = await readRawBody(req, limit);
    const target = req.headers['x-amz-target'];
    if (typeof target !== 'string' || target === '') {
      const type = String(req.headers['content-type'] ?? '');
      if (type.startsWith('application/x-www-form-urlencoded') || /^Action=/.test(raw.subarray(0, 64).toString('latin1'))) {
        throw new SqsError('InvalidAction', 'The Query protocol (form-encoded Action=...) is not supported: use an AWS SDK that speaks the AWS JSON 1.0 protocol (X-Amz-Target: AmazonSQS.<Action>).');
      }
      throw new SqsError('MissingAction', 'The request must name its action in the X-Amz-Target header (AmazonSQS.<Action>).');
    }
    const action = target.startsWith(TARGET_PREFIX) ? SQS_ACTION_BY_NAME.get(target.slice(TARGET_PREFIX.length)) : undefined;
    if (!action) throw new SqsError('UnknownOperationException', 'The action or operation requested is invalid. Verify that the action is typed correctly.');
    const principal = await authenticate(req, raw);
    req.principal = principal;
    let body: Record<string, unknown>;
    try {
      if (!isUtf8(raw)) throw new Error('not UTF-8');
      const parsed = raw.length === 0 ? {} : (JSON.parse(raw.toString('utf8')) as unknown);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as Record<string, unknown>;
    } catch {
      throw new SqsError('SerializationException', 'The request body is not a JSON object.');
    }
    const urls = queueUrls(req, accountId, region);
    let queue = '';
    if (action.queue === 'QueueUrl') {
      // On a queue URL's path, QueueUrl may be left out of the body: the path names the queue.
      if (body.QueueUrl === undefined && req.params.queue) body.QueueUrl = `/${accountId}/${req.params.queue}`;
      queue = urls.queueOf(body.QueueUrl);
    } else if (action.queue === 'QueueName') {
      if (typeof body.QueueName !== 'string' || body.QueueName === '') throw new SqsError('MissingParameter', 'The request must contain the parameter QueueName.');
      queue = body.QueueName;
      // A name no topic can have: nobody's grant covers it, and no queue has it.
      if (!isValidTopicName(queue)) throw new SqsError(action.name === 'CreateQueue' ? 'InvalidParameterValue' : 'QueueDoesNotExist', action.name === 'CreateQueue' ? 'Can only include alphanumeric characters, hyphens, underscores or dots.' : 'The specified queue does not exist.');
    }
    const audited = 'action' in action.audit ? action.audit.action : undefined;
    let answer: Record<string, unknown> = {};
    let failure: unknown;
    try {
      checkAccess(ctx, action, principal, queue);
      const parsed = action.request.safeParse(body);
      if (!parsed.success) throw parameterError(parsed.error, body);
      answer = await action.handler({ ctx, req, res, body: parsed.data, principal, queue, queues, urls });
    } catch (err) {
      failure = err;
    }
    // Recorded before the answer goes out (refusals too), as the HTTP API's audited operations are: a client
    // that saw 200 finds its change in the audit log.
    if (audited) {
      const status = failure === undefined ? 200 : sqsErrorOf(failure).status;
      const actor = principal ? { id: principal.userId, name: principal.username } : ANONYMOUS_ACTOR;
      const topic = isValidTopicName(queue) ? queue : null;
      await ctx.maintenance.audit.record({ actor, action: audited, topic, target: topic, ok: status < 400, status, details: { sqs_action: action.name } }, req.log).catch(() => undefined);
    }
    if (failure !== undefined) throw failure;
    if (!res.destroyed) send(res, 200, answer);
  };

  return (req, res) => {
    res.setHeader('x-amzn-RequestId', String(res.getHeader('X-Request-Id') ?? ''));
    serve(req, res).catch((err: unknown) => {
      const error = sqsErrorOf(err);
      if (error.status >= 500) req.log.error({ err }, 'SQS request failed');
      sendSqsError(res, error);
    });
  };
}
