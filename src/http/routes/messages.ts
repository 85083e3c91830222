import type { z } from 'zod';
import type { HttpContext } from '../context.js';
import type { ApiRequest } from '../request.js';
import { dequeuedMessageJson, iso, messageJson } from '../format.js';
import { checkConsumeOfMessage, checkConsumeOfMessages, consumeOfBody, consumeOfMessage, requeueOfMessage, writeOfBatch, writeOfBody } from '../middleware/auth.js';
import { uuid } from '../audit-details.js';
import { operation, TOKEN, type Operation } from '../operation.js';
import * as R from '../openapi/responses.js';
import { sendEmpty, sendJson, sendJsonList } from '../respond.js';
import { ackBatchBody, ackBody, dequeueBody, enqueueBatchBody, enqueueBody, listMessagesQuery, nackBody, parseBatchBody, parseBody, visibilityBody } from '../validation.js';
import { assertTopicName } from '../../queue/topic-names.js';
import { waitingCaller } from '../waiting-caller.js';
import type { EnqueueInput } from '../../queue/messages.js';
import type { MessageFilter } from '../../store/messages/browse.js';
import { traceReceive, traceSend, traceSettle } from '../../tracing/message-spans.js';

const NOT_AUDITED = 'produce and consume are the message traffic itself, not changes to audit';

function toEnqueueInput(parsed: z.output<typeof enqueueBody>): EnqueueInput {
  return {
    topic: parsed.topic,
    payload: Buffer.from(parsed.payload, 'utf8'),
    metadata: parsed.metadata ?? undefined,
    key: parsed.key ?? null,
    orderingKey: parsed.ordering_key ?? null,
    delaySeconds: parsed.delay_seconds ?? undefined,
    deliverAt: parsed.deliver_at,
  };
}

/**
 * A group-less ack of a message this instance dequeued is settled on the topic it was dequeued from, with the
 * grant checked on that topic and no read of the message's (MessageService.ackHeld). Anything else goes the
 * ordinary way, the grant on the topic read from the message, then the ack, which gives everything else its
 * usual answer in the usual order: a body that does not parse, a message that moved (to its dead-letter
 * topic), was acked already or was dequeued elsewhere.
 */
async function ackOne(ctx: HttpContext, req: ApiRequest): Promise<void> {
  let groupless: boolean;
  try {
    groupless = !parseBody(ackBody, req.body).consumer_group;
  } catch {
    groupless = false;
  }
  if (groupless && (await ctx.messages.ackHeld(req.params.id, undefined, { mayConsume: (topic) => ctx.auth.allowsConsume(req.principal, topic) }))) return;
  await checkConsumeOfMessage(ctx, req.principal, req.params.id, req.body);
  await ctx.messages.ack(req.params.id, parseBody(ackBody, req.body).consumer_group);
}

/**
 * A batch ack: the ids this instance dequeued without a group are settled as a single ack by id is; the
 * other ids get the grant on the topics read from the messages first. A body that does not parse gets that
 * grant check on all its ids, then its 400.
 */
async function ackBatchOf(ctx: HttpContext, req: ApiRequest) {
  let body: z.output<typeof ackBatchBody>;
  try {
    body = parseBody(ackBatchBody, req.body);
  } catch (err) {
    await checkConsumeOfMessages(ctx, req.principal, req.body);
    throw err;
  }
  const group = body.consumer_group;
  return ctx.messages.ackBatchHeld(body.ids, group, {
    mayConsume: (topic) => ctx.auth.allowsConsume(req.principal, topic),
    authorize: (ids) => checkConsumeOfMessages(ctx, req.principal, { ids, consumer_group: group }),
  });
}

/** The ids and group of an ack body that may not have parsed yet (a settle span names them; the handler refuses a bad body). */
function idsOf(body: unknown): unknown[] {
  const ids = (body as { ids?: unknown } | undefined)?.ids;
  return Array.isArray(ids) ? ids : [];
}

function groupOf(body: unknown): string | undefined {
  const group = (body as { consumer_group?: unknown } | undefined)?.consumer_group;
  return typeof group === 'string' && group !== '' ? group : undefined;
}

/** Enqueue, dequeue, ack, nack and requeue: the hot operations, first in the router. */
export const messageOperations: Operation[] = [
  operation({
    method: 'GET',
    path: '/api/messages',
    operationId: 'listMessages',
    summary: 'List messages',
    description: 'Oldest first (`order=newest`: newest first). With a topic, a read grant on it (403 otherwise); without one, a non-admin sees the topics it may read.',
    tag: 'messages',
    // The grant depends on the query: a read grant on its topic, or the list narrowed to the readable topics.
    access: { kind: 'grant', action: 'read' },
    query: listMessagesQuery,
    success: { status: 200, schema: R.MessagePage, description: 'A page of messages; `total` counts every message the filters select.' },
    errors: [400],
    handler: async (ctx, req, res) => {
      const { limit, offset, topic, status, order } = req.query as unknown as z.output<typeof listMessagesQuery>;
      const filter: MessageFilter = { topic, status, order };
      if (topic !== undefined) {
        // A name no topic can have is the request's fault, whoever asks: 400 before the grant check's 403.
        assertTopicName(topic);
        ctx.auth.requireTopic(req.principal, 'read', topic);
      } else filter.scope = ctx.auth.visibleScope(req.principal, 'read') ?? undefined;
      const page = await ctx.topics.listMessages(filter, limit, offset);
      await sendJsonList(res, 200, page.items.map(messageJson), { total: page.total, limit, offset });
    },
  }),
  operation({
    method: 'POST',
    path: '/api/messages',
    operationId: 'enqueueMessage',
    summary: 'Enqueue a message',
    description: 'A write grant on the topic. 422 for a payload the topic schema refuses or an unregistered topic; 429 when the topic is full.',
    tag: 'messages',
    access: writeOfBody,
    audit: { notAudited: NOT_AUDITED },
    body: { name: 'EnqueueRequest', schema: enqueueBody },
    success: { status: 201, schema: R.Enqueued, description: 'Enqueued (or the pending message with its key overwritten).' },
    errors: [400, 422, 429],
    handler: async (ctx, req, res) => {
      const input = toEnqueueInput(req.body);
      const enqueue = () => ctx.messages.enqueue(input);
      const { id } = req.trace ? await traceSend(req.trace, [input], enqueue, (r) => [r.id]) : await enqueue();
      sendJson(res, 201, { id });
    },
  }),
  operation({
    method: 'POST',
    path: '/api/messages/batch',
    operationId: 'enqueueMessages',
    summary: 'Enqueue up to 1,000 messages, all or nothing (extension)',
    tag: 'messages',
    access: writeOfBatch,
    audit: { notAudited: NOT_AUDITED },
    body: { name: 'EnqueueBatchRequest', schema: enqueueBatchBody, parse: parseBatchBody, limit: 'batch' },
    success: { status: 201, schema: R.EnqueuedBatch, description: 'Every message enqueued.' },
    errors: [400, 422, 429],
    handler: async (ctx, req, res) => {
      const inputs = req.body.messages.map(toEnqueueInput);
      const enqueue = () => ctx.messages.enqueueBatch(inputs);
      sendJson(res, 201, req.trace ? await traceSend(req.trace, inputs, enqueue, (r) => r.ids) : await enqueue());
    },
  }),
  operation({
    method: 'POST',
    path: '/api/messages/dequeue',
    operationId: 'dequeueMessages',
    summary: 'Claim pending messages',
    description:
      'A write grant on the topic, or a consume grant for the consumer group. Without wait_seconds it never blocks: an empty list when nothing is pending. With wait_seconds (long polling, extension) it waits up to that long for a message; 429 when server.max_waiting_dequeues calls wait already.',
    tag: 'messages',
    access: consumeOfBody,
    audit: { notAudited: NOT_AUDITED },
    body: { name: 'DequeueRequest', schema: dequeueBody },
    success: { status: 200, schema: R.Dequeued, description: 'The claimed messages, oldest first.' },
    errors: [400, 422, 429],
    handler: async (ctx, req, res) => {
      const { topic, count, visibility_timeout_seconds, consumer_group, wait_seconds } = req.body;
      const input = { topic, count, visibilityTimeoutSeconds: visibility_timeout_seconds, consumerGroup: consumer_group };
      // A client whose connection closed while the claim ran gets no answer: what it took goes back.
      const dequeue = () =>
        wait_seconds ? ctx.messages.dequeueWaiting(input, wait_seconds, waitingCaller(ctx, req, res, topic, consumer_group)) : ctx.messages.dequeueFor(input, () => res.destroyed);
      const messages = req.trace ? await traceReceive(req.trace, { topic, group: consumer_group, batch: true }, dequeue) : await dequeue();
      sendJson(res, 200, { messages: messages.map(dequeuedMessageJson) });
    },
  }),
  operation({
    method: 'POST',
    path: '/api/messages/ack',
    operationId: 'ackMessages',
    summary: 'Acknowledge many messages (extension)',
    tag: 'messages',
    // Checked in the handler: on the topic of the dequeue for messages this instance handed out, else on the
    // topics read from the messages.
    access: { kind: 'grant', action: 'consume' },
    audit: { notAudited: NOT_AUDITED },
    body: { name: 'AckBatchRequest', schema: ackBatchBody, parse: 'handler' },
    success: { status: 200, schema: R.AckBatchResult, description: 'Which ids were acknowledged.' },
    errors: [400, 422],
    handler: async (ctx, req, res) => {
      const ack = () => ackBatchOf(ctx, req);
      const { acked, notFound } = req.trace ? await traceSettle(req.trace, 'ack', idsOf(req.body), groupOf(req.body), ack) : await ack();
      sendJson(res, 200, { acked, not_found: notFound });
    },
  }),
  operation({
    method: 'POST',
    path: '/api/messages/:id/ack',
    operationId: 'ackMessage',
    summary: 'Acknowledge a message',
    tag: 'messages',
    // Checked in the handler, as for the batch ack.
    access: { kind: 'grant', action: 'consume' },
    audit: { notAudited: NOT_AUDITED },
    body: { name: 'AckRequest', schema: ackBody, optional: true, parse: 'handler' },
    success: { status: 204, schema: 'empty', description: 'Acknowledged.' },
    errors: [400, 404, 422],
    handler: async (ctx, req, res) => {
      await (req.trace ? traceSettle(req.trace, 'ack', [req.params.id], groupOf(req.body), () => ackOne(ctx, req)) : ackOne(ctx, req));
      sendEmpty(res, 204);
    },
  }),
  operation({
    method: 'POST',
    path: '/api/messages/:id/nack',
    operationId: 'nackMessage',
    summary: 'Report a failed attempt',
    tag: 'messages',
    access: consumeOfMessage,
    audit: { notAudited: NOT_AUDITED },
    body: { name: 'NackRequest', schema: nackBody, optional: true },
    success: { status: 204, schema: 'empty', description: 'Pending again, dead-lettered or failed, by the retry rules.' },
    errors: [400, 404, 422],
    handler: async (ctx, req, res) => {
      const nack = () => ctx.messages.nack(req.params.id, req.body.error ?? '', req.body.consumer_group, req.body.delay_seconds);
      await (req.trace ? traceSettle(req.trace, 'nack', [req.params.id], req.body.consumer_group, nack, (outcome) => ({ 'conveyor.nack.outcome': outcome })) : nack());
      sendEmpty(res, 204);
    },
  }),
  operation({
    method: 'POST',
    path: '/api/messages/:id/visibility',
    operationId: 'changeMessageVisibility',
    summary: 'Extend or shorten the claim of a message being processed (extension)',
    description:
      'The same grant as an ack. The claim now ends visibility_timeout_seconds from now, longer or shorter than the dequeue set: a long job keeps its message by calling it before the claim ends (a heartbeat). 0 gives the message back at once, pending again with its retry_count unchanged. 404 when the message is unknown or not processing (for that group).',
    tag: 'messages',
    access: consumeOfMessage,
    audit: { notAudited: NOT_AUDITED },
    body: { name: 'VisibilityRequest', schema: visibilityBody },
    success: { status: 200, schema: R.VisibilityChanged, description: 'The new end of the claim.' },
    errors: [400, 404, 422],
    handler: async (ctx, req, res) => {
      const { availableAt } = await ctx.messages.changeVisibility(req.params.id, req.body.visibility_timeout_seconds, req.body.consumer_group);
      sendJson(res, 200, { id: req.params.id.toLowerCase(), available_at: iso(availableAt) });
    },
  }),
  operation({
    method: 'POST',
    path: '/api/messages/:id/requeue',
    operationId: 'requeueMessage',
    summary: 'Requeue a dead letter',
    description: 'Admin, or an admin grant on the original topic. 404 for anything but a dead letter.',
    tag: 'messages',
    access: requeueOfMessage,
    // The dead letter's topic, read before the requeue moves it.
    audit: {
      action: 'message.requeue',
      before: (params, ctx) => ctx.messages.topicOf(params.id),
      topic: (c) => c.state,
      details: (c) => ({ message_id: uuid(c.params.id) ?? undefined }),
    },
    success: { status: 204, schema: 'empty', description: 'Pending again on its original topic.' },
    errors: [404],
    handler: async (ctx, req, res) => {
      await ctx.messages.requeue(req.params.id);
      sendEmpty(res, 204);
    },
  }),
  operation({
    method: 'GET',
    path: '/api/messages/:id',
    operationId: 'getMessage',
    summary: 'One message by id (extension)',
    description:
      'In the shape of the list. 404 for an id that names no message, a malformed id, and a message of a topic the caller may not read: a caller learns nothing about messages outside its grants, not even that they exist.',
    tag: 'messages',
    // After every /api/messages/<word> route: the router tries paths in order, and `:id` would take theirs.
    // Any token: the grant is checked on the message's topic, and its absence answers as "not found".
    access: TOKEN,
    success: { status: 200, schema: R.Message, description: 'The message.' },
    errors: [404],
    handler: async (ctx, req, res) => {
      const message = await ctx.topics.getMessage(req.params.id, (topic) => ctx.auth.visibleTopics(req.principal, 'read', [topic]).length > 0);
      sendJson(res, 200, messageJson(message));
    },
  }),
];
