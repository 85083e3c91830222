import type { RouteTable } from '../router.js';
import type { z } from 'zod';
import type { HttpContext } from '../context.js';
import type { ApiRequest, ApiResponse } from '../request.js';
import { dequeuedMessageJson, messageJson } from '../format.js';
import { checkConsumeOfMessage, checkConsumeOfMessages, requireConsumeOfBody, requireConsumeOfMessage, requireRequeueOfMessage, requireWriteOfBatch, requireWriteOfBody } from '../middleware/auth.js';
import { sendEmpty, sendJson, sendJsonList } from '../respond.js';
import { route } from '../route-table.js';
import { ackBatchBody, ackBody, dequeueBody, enqueueBody, listMessagesQuery, nackBody, parseBatchBody, parseBody, parseQuery } from '../validation.js';
import { ackBatchOfHeld } from '../../queue/held-ack-batch.js';
import { assertTopicName } from '../../queue/topic-names.js';
import type { EnqueueInput } from '../../queue/messages.js';
import type { MessageFilter } from '../../store/messages/browse.js';

function toEnqueueInput(parsed: z.output<typeof enqueueBody>): EnqueueInput {
  return { topic: parsed.topic, payload: Buffer.from(parsed.payload, 'utf8'), metadata: parsed.metadata ?? undefined, key: parsed.key ?? null };
}

async function enqueueOne(ctx: HttpContext, body: unknown): Promise<{ id: string }> {
  const { id } = await ctx.messages.enqueue(toEnqueueInput(parseBody(enqueueBody, body)));
  return { id };
}

/** A client whose connection closed while the claim ran gets no answer: what it took goes back. */
async function dequeueOf(ctx: HttpContext, rawBody: unknown, res: ApiResponse) {
  const body = parseBody(dequeueBody, rawBody);
  const input = { topic: body.topic, count: body.count, visibilityTimeoutSeconds: body.visibility_timeout_seconds, consumerGroup: body.consumer_group };
  const messages = await ctx.messages.dequeueFor(input, () => res.destroyed);
  return { messages: messages.map(dequeuedMessageJson) };
}

async function ackOne(ctx: HttpContext, id: unknown, rawBody: unknown): Promise<void> {
  const body = parseBody(ackBody, rawBody);
  await ctx.messages.ack(id, body.consumer_group);
}

/**
 * A group-less ack of a message this instance dequeued: the grant is checked on the topic it was dequeued
 * from, and the message is settled only while it is still on that topic (MessageService.ackOnTopic), so no
 * read of its topic is needed. False leaves the ack to the ordinary way (the grant on the topic read from the
 * message, then the ack), which gives everything else its usual answer in the usual order: a body that does
 * not parse, a message that moved (to its dead-letter topic), was acked already or was dequeued elsewhere.
 */
async function ackOnDequeuedTopic(ctx: HttpContext, req: ApiRequest): Promise<boolean> {
  const topic = ctx.messages.dequeuedTopicOf(req.params.id);
  if (topic === undefined || !ctx.auth.allowsConsume(req.principal, topic)) return false;
  try {
    if (parseBody(ackBody, req.body).consumer_group) return false;
  } catch {
    return false;
  }
  return ctx.messages.ackOnTopic(req.params.id, topic);
}

/**
 * A batch ack: the messages this instance dequeued without a group are checked against the topic of their
 * dequeue and settled only while still on it, without reading their topics, as a single ack by id is; the
 * other ids get the grant on the topics read from the messages first (src/queue/held-ack-batch.ts). A body
 * that does not parse gets that grant check on all its ids, then its 400.
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
  return ackBatchOfHeld(ctx.messages, body.ids, group, {
    heldTopicOf: (id) => ctx.messages.dequeuedTopicOf(id),
    mayConsume: (topic) => ctx.auth.allowsConsume(req.principal, topic),
    authorize: (ids) => checkConsumeOfMessages(ctx, req.principal, { ids, consumer_group: group }),
  });
}

export function messageRoutes(ctx: HttpContext, router: RouteTable): void {
  // Grants (contract §8) run first in each POST chain, before the handler; an unknown method still gets the 405.
  // In the chain rather than as layers of their own, which every request would walk path by path. The acks
  // (by id and batch) check their grants in their handlers: on the topic of the dequeue, when this instance made it.
  route(ctx, router, '/api/messages', {
    GET: async (req, res) => {
      const { limit, offset, topic, status } = parseQuery(listMessagesQuery, req.query);
      // Contract §8: an explicit topic needs a read grant (403); without one, non-admins see their readable topics only.
      const filter: MessageFilter = { topic, status };
      if (topic !== undefined) {
        // A name no topic can have is the request's fault, whoever asks: 400 before the grant check's 403.
        assertTopicName(topic);
        ctx.auth.requireTopic(req.principal, 'read', topic);
      } else filter.scope = ctx.auth.visibleScope(req.principal, 'read') ?? undefined;
      const page = await ctx.topics.listMessages(filter, limit, offset);
      await sendJsonList(res, 200, page.items.map(messageJson), { total: page.total, limit, offset });
    },
    POST: [
      requireWriteOfBody(ctx),
      async (req, res) => {
        sendJson(res, 201, await enqueueOne(ctx, req.body));
      },
    ],
  });
  route(ctx, router, '/api/messages/batch', {
    POST: [
      requireWriteOfBatch(ctx),
      async (req, res) => {
        const { messages } = parseBatchBody(req.body);
        sendJson(res, 201, await ctx.messages.enqueueBatch(messages.map(toEnqueueInput)));
      },
    ],
  });
  route(ctx, router, '/api/messages/dequeue', {
    POST: [
      requireConsumeOfBody(ctx),
      async (req, res) => {
        sendJson(res, 200, await dequeueOf(ctx, req.body, res));
      },
    ],
  });
  route(ctx, router, '/api/messages/ack', {
    POST: async (req, res) => {
      const { acked, notFound } = await ackBatchOf(ctx, req);
      sendJson(res, 200, { acked, not_found: notFound });
    },
  });
  route(ctx, router, '/api/messages/:id/ack', {
    POST: async (req, res) => {
      if (!(await ackOnDequeuedTopic(ctx, req))) {
        await checkConsumeOfMessage(ctx, req.principal, req.params.id, req.body);
        await ackOne(ctx, req.params.id, req.body);
      }
      sendEmpty(res, 204);
    },
  });
  route(ctx, router, '/api/messages/:id/nack', {
    POST: [
      requireConsumeOfMessage(ctx),
      async (req, res) => {
        const body = parseBody(nackBody, req.body);
        await ctx.messages.nack(req.params.id, body.error ?? '', body.consumer_group);
        sendEmpty(res, 204);
      },
    ],
  });
  route(ctx, router, '/api/messages/:id/requeue', {
    POST: [
      requireRequeueOfMessage(ctx),
      async (req, res) => {
        await ctx.messages.requeue(req.params.id);
        sendEmpty(res, 204);
      },
    ],
  });
}
