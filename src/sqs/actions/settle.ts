import { z } from 'zod';
import type { Receipt } from '../../queue/queues.js';
import { sqsAction, type SqsAction, type SqsCall } from '../action.js';
import { receiptHandleInvalid } from '../errors.js';
import { readReceiptHandle } from '../receipt-handles.js';
import { checkBatch, eachEntry, NOT_AUDITED } from './batches.js';

const queueUrl = { QueueUrl: z.string() };

/** The receipt a handle names, for this call's queue; ReceiptHandleIsInvalid for another queue's. */
async function receiptOf(call: SqsCall<unknown>, handle: unknown) {
  const receipt = readReceiptHandle(await call.queues.receiptKey(), handle);
  if (receipt.topic !== call.queue) throw receiptHandleInvalid();
  return receipt;
}

/** Settling received messages by receipt handle: deleting them, moving the end of their claim. */
export const settleActions: SqsAction[] = [
  sqsAction({
    name: 'DeleteMessage',
    summary: 'Acknowledges a received message by its receipt handle; a stale handle deletes nothing',
    access: { kind: 'consume' },
    queue: 'QueueUrl',
    request: z.object({ ...queueUrl, ReceiptHandle: z.string() }),
    audit: { notAudited: NOT_AUDITED },
    handler: async (call) => {
      await call.queues.deleteReceived([await receiptOf(call, call.body.ReceiptHandle)]);
      return {};
    },
  }),
  sqsAction({
    name: 'DeleteMessageBatch',
    summary: 'Up to 10 DeleteMessage entries',
    access: { kind: 'consume' },
    queue: 'QueueUrl',
    request: z.object({ ...queueUrl, Entries: z.array(z.object({ Id: z.string(), ReceiptHandle: z.string() })) }),
    audit: { notAudited: NOT_AUDITED },
    handler: async (call) => {
      checkBatch(call.body.Entries);
      // The handles are read one by one (a bad one fails its entry); the deletes go together.
      const receipts = new Map<string, Receipt>();
      const answer = await eachEntry(call.body.Entries, async (entry) => {
        receipts.set(entry.Id, await receiptOf(call, entry.ReceiptHandle));
        return {};
      });
      await call.queues.deleteReceived([...receipts.values()]);
      return answer;
    },
  }),
  sqsAction({
    name: 'ChangeMessageVisibility',
    summary: 'Moves the end of a received message’s claim (0: visible again at once)',
    access: { kind: 'consume' },
    queue: 'QueueUrl',
    request: z.object({ ...queueUrl, ReceiptHandle: z.string(), VisibilityTimeout: z.int().min(0).max(43_200) }),
    audit: { notAudited: NOT_AUDITED },
    handler: async (call) => {
      await call.queues.changeReceivedVisibility(await receiptOf(call, call.body.ReceiptHandle), call.body.VisibilityTimeout);
      return {};
    },
  }),
  sqsAction({
    name: 'ChangeMessageVisibilityBatch',
    summary: 'Up to 10 ChangeMessageVisibility entries',
    access: { kind: 'consume' },
    queue: 'QueueUrl',
    request: z.object({ ...queueUrl, Entries: z.array(z.object({ Id: z.string(), ReceiptHandle: z.string(), VisibilityTimeout: z.int().min(0).max(43_200) })) }),
    audit: { notAudited: NOT_AUDITED },
    handler: async (call) => {
      checkBatch(call.body.Entries);
      return eachEntry(call.body.Entries, async (entry) => {
        await call.queues.changeReceivedVisibility(await receiptOf(call, entry.ReceiptHandle), entry.VisibilityTimeout);
        return {};
      });
    },
  }),
];
