import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { EnqueueInput } from '../../queue/messages.js';
import { sqsAction, type SqsAction, type SqsCall } from '../action.js';
import { md5OfAttributes, md5OfBody } from '../digests.js';
import { invalidParameter, SqsError } from '../errors.js';
import { DEDUP_KEY, messageAttributeSchema, metadataOf } from '../message-attributes.js';
import { checkBatch, eachEntry, NOT_AUDITED } from './batches.js';

const queueUrl = { QueueUrl: z.string() };
/** The characters SQS allows in a body: #x9 #xA #xD, #x20 to #xD7FF, #xE000 to #xFFFD, #x10000 to #x10FFFF. */
const BAD_BODY_CHARACTER = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

const messageFields = {
  MessageBody: z.string(),
  DelaySeconds: z.int().min(0).max(900).optional(),
  MessageAttributes: z.record(z.string(), messageAttributeSchema).optional(),
  MessageSystemAttributes: z.record(z.string(), messageAttributeSchema).optional(),
  MessageDeduplicationId: z.string().optional(),
  MessageGroupId: z.string().min(1).max(128).optional(),
};
const messageEntry = z.object(messageFields);
type MessageEntry = z.output<typeof messageEntry>;

/** A deduplication id: 1-128 printable ASCII characters, as SQS takes them. */
const DEDUP_ID = /^[!-~]{1,128}$/;

/**
 * One SendMessage (or batch entry): attributes to metadata, and in a FIFO queue the group to the ordering
 * key and the send deduplicated for 5 minutes by its deduplication id (or the body's SHA-256).
 */
async function sendOne(call: SqsCall<unknown>, entry: MessageEntry): Promise<Record<string, unknown>> {
  const { ctx, queue, queues } = call;
  const fifo = queue.endsWith('.fifo');
  if (entry.MessageBody === '') throw new SqsError('MissingParameter', 'The request must contain the parameter MessageBody.');
  if (BAD_BODY_CHARACTER.test(entry.MessageBody)) throw new SqsError('InvalidMessageContents', 'Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF');
  const metadata = metadataOf(entry.MessageAttributes);
  const input: EnqueueInput & { topic: string } = { topic: queue, payload: Buffer.from(entry.MessageBody, 'utf8'), metadata, delaySeconds: entry.DelaySeconds };
  if (!fifo) {
    if (entry.MessageDeduplicationId !== undefined) throw invalidParameter('The request includes a parameter that is not valid for this queue type: MessageDeduplicationId.');
    return sentOf(queue, entry, (await ctx.messages.enqueue(input)).id);
  }
  if (entry.MessageGroupId === undefined) throw new SqsError('MissingParameter', 'The request must contain the parameter MessageGroupId.');
  if (entry.DelaySeconds !== undefined && entry.DelaySeconds !== 0) throw invalidParameter(`Value ${entry.DelaySeconds} for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.`);
  if (entry.MessageDeduplicationId === undefined && ctx.topics.configOf(queue)?.content_based_deduplication === false) {
    throw invalidParameter('The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly');
  }
  const dedupId = entry.MessageDeduplicationId ?? createHash('sha256').update(entry.MessageBody, 'utf8').digest('hex');
  if (!DEDUP_ID.test(dedupId)) throw invalidParameter('MessageDeduplicationId can only hold 1-128 printable ASCII characters.');
  const { id } = await queues.sendOnce({ ...input, metadata: { ...metadata, [DEDUP_KEY]: dedupId }, orderingKey: entry.MessageGroupId }, dedupId);
  return sentOf(queue, entry, id);
}

function sentOf(queue: string, entry: MessageEntry, id: string): Record<string, unknown> {
  const out: Record<string, unknown> = { MessageId: id, MD5OfMessageBody: md5OfBody(entry.MessageBody) };
  const attributesMd5 = entry.MessageAttributes ? md5OfAttributes(entry.MessageAttributes) : undefined;
  if (attributesMd5) out.MD5OfMessageAttributes = attributesMd5;
  if (queue.endsWith('.fifo')) out.SequenceNumber = sequenceNumberOf(id);
  return out;
}

/** FIFO sequence numbers: the message id's time-ordered digits (ids are UUIDv7), as a decimal string. */
export const sequenceNumberOf = (id: string) => BigInt(`0x${id.replace(/-/g, '').slice(0, 20)}`).toString().padStart(20, '0');

/** Sending: one message, or a batch of up to 10. */
export const sendActions: SqsAction[] = [
  sqsAction({
    name: 'SendMessage',
    summary: 'Enqueues a message: attributes as metadata, MessageGroupId as ordering key, deduplicated for 5 minutes (FIFO)',
    access: { kind: 'grant', action: 'write' },
    queue: 'QueueUrl',
    request: z.object({ ...queueUrl, ...messageFields }),
    audit: { notAudited: NOT_AUDITED },
    handler: async (call) => {
      const { body, queue, queues } = call;
      queues.assertExists(queue);
      return sendOne(call, body);
    },
  }),
  sqsAction({
    name: 'SendMessageBatch',
    summary: 'Up to 10 SendMessage entries, each succeeding or failing on its own',
    access: { kind: 'grant', action: 'write' },
    queue: 'QueueUrl',
    request: z.object({ ...queueUrl, Entries: z.array(messageEntry.extend({ Id: z.string() })) }),
    audit: { notAudited: NOT_AUDITED },
    handler: async (call) => {
      const { ctx, body, queue, queues } = call;
      queues.assertExists(queue);
      checkBatch(body.Entries);
      const total = body.Entries.reduce((n, e) => n + Buffer.byteLength(e.MessageBody), 0);
      if (total > ctx.config.queue.max_payload_bytes) throw new SqsError('BatchRequestTooLong', `Batch requests cannot be longer than ${ctx.config.queue.max_payload_bytes} bytes.`);
      return eachEntry(body.Entries, (entry) => sendOne(call, entry));
    },
  }),
];
