import { z } from 'zod';
import type { Message } from '../../queue/message.js';
import type { WaitingCaller } from '../../queue/long-poll.js';
import { sqsAction, type SqsAction, type SqsCall } from '../action.js';
import { md5OfAttributes, md5OfBody } from '../digests.js';
import { attributesOf, DEDUP_KEY, selectAttributes } from '../message-attributes.js';
import { issueReceiptHandle } from '../receipt-handles.js';
import { NOT_AUDITED } from './batches.js';
import { sequenceNumberOf } from './send.js';

const queueUrl = { QueueUrl: z.string() };

const SYSTEM_ATTRIBUTES = ['SenderId', 'SentTimestamp', 'ApproximateReceiveCount', 'ApproximateFirstReceiveTimestamp', 'MessageGroupId', 'MessageDeduplicationId', 'SequenceNumber'];

function systemAttributesOf(message: Message, names: string[], call: SqsCall<unknown>, receives: { count: number; firstAt: number }): Record<string, string> | undefined {
  if (names.length === 0) return undefined;
  const wanted = names.includes('All') ? SYSTEM_ATTRIBUTES : names;
  const fifo = call.queue.endsWith('.fifo');
  const values: Record<string, string | undefined> = {
    SenderId: call.principal?.userId ?? call.ctx.config.sqs.account_id,
    SentTimestamp: String(message.createdAt),
    // The ReceiveMessage calls that got it, or its attempts if HTTP or gRPC consumers dequeued it more often.
    ApproximateReceiveCount: String(Math.max(receives.count, message.retryCount + 1)),
    ApproximateFirstReceiveTimestamp: String(receives.firstAt),
    MessageGroupId: message.orderingKey ?? undefined,
    MessageDeduplicationId: fifo ? message.metadata[DEDUP_KEY] : undefined,
    SequenceNumber: fifo ? sequenceNumberOf(message.id) : undefined,
  };
  const out: Record<string, string> = {};
  for (const name of wanted) if (values[name] !== undefined) out[name] = values[name]!;
  return out;
}

/** A receive that waits (WaitTimeSeconds) ends when the client leaves. */
function waitingCallerOf(call: SqsCall<unknown>): WaitingCaller {
  const controller = new AbortController();
  if (call.res.destroyed) controller.abort();
  else call.res.once('close', () => !call.res.writableFinished && controller.abort());
  return { cancelled: controller.signal };
}

/** Receiving: a claim of up to 10 messages, long polling included. */
export const receiveActions: SqsAction[] = [
  sqsAction({
    name: 'ReceiveMessage',
    summary: 'Claims up to 10 messages (a dequeue), waiting up to WaitTimeSeconds for one (long polling)',
    access: { kind: 'consume' },
    queue: 'QueueUrl',
    request: z.object({
      ...queueUrl,
      MaxNumberOfMessages: z.int().min(1, { error: 'MaxNumberOfMessages must be between 1 and 10' }).max(10, { error: 'MaxNumberOfMessages must be between 1 and 10' }).optional(),
      VisibilityTimeout: z.int().min(0).max(43_200).optional(),
      WaitTimeSeconds: z.int().min(0, { error: 'WaitTimeSeconds must be between 0 and 20' }).max(20, { error: 'WaitTimeSeconds must be between 0 and 20' }).optional(),
      AttributeNames: z.array(z.string()).optional(),
      MessageSystemAttributeNames: z.array(z.string()).optional(),
      MessageAttributeNames: z.array(z.string()).optional(),
      ReceiveRequestAttemptId: z.string().optional(),
    }),
    audit: { notAudited: NOT_AUDITED },
    handler: async (call) => {
      const { ctx, body, queue, queues } = call;
      queues.assertExists(queue);
      // A claim lasts at least a second: VisibilityTimeout 0 (visible again at once) claims for one.
      const visibility = body.VisibilityTimeout === undefined ? undefined : Math.max(1, body.VisibilityTimeout);
      const input = { topic: queue, count: body.MaxNumberOfMessages ?? 1, visibilityTimeoutSeconds: visibility };
      // No WaitTimeSeconds: the queue's ReceiveMessageWaitTimeSeconds.
      const waitSeconds = body.WaitTimeSeconds ?? ctx.topics.configOf(queue)?.receive_wait_seconds ?? 0;
      const messages = await ctx.messages.dequeueWaiting(input, waitSeconds, waitingCallerOf(call));
      const key = await queues.receiptKey();
      const receivedAt = Date.now();
      const receives = await queues.recordReceives(messages.map((m) => m.id));
      const systemNames = [...(body.AttributeNames ?? []), ...(body.MessageSystemAttributeNames ?? [])];
      return {
        Messages: messages.map((m) => {
          const text = m.payload.toString('utf8');
          const out: Record<string, unknown> = {
            MessageId: m.id,
            ReceiptHandle: issueReceiptHandle(key, { id: m.id, topic: m.topic, retryCount: m.retryCount, claimedUntil: m.claimedUntil ?? receivedAt, token: receives.get(m.id)?.token }),
            MD5OfBody: md5OfBody(text),
            Body: text,
          };
          const system = systemAttributesOf(m, systemNames, call, receives.get(m.id) ?? { count: m.retryCount + 1, firstAt: receivedAt });
          if (system) out.Attributes = system;
          const attributes = selectAttributes(attributesOf(m.metadata), body.MessageAttributeNames);
          const md5 = md5OfAttributes(attributes);
          if (md5) {
            out.MessageAttributes = attributes;
            out.MD5OfMessageAttributes = md5;
          }
          return out;
        }),
      };
    },
  }),
];
