import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Receipt } from '../queue/queues.js';
import { receiptHandleInvalid } from './errors.js';

/**
 * Receipt handles: opaque to clients, and signed, so that a client cannot forge or alter one to settle a
 * message it did not receive. The body names the message, its topic, the attempts it had when received (the
 * claim: another receive since makes the handle stale), the end of that claim (so that two receives of a
 * message never hand out the same handle), the receive's token (another ReceiveMessage since makes it stale)
 * and the consumer group, if any. The HMAC-SHA256 key is the
 * service's, shared by every instance (QueueService.receiptKey: generated once, kept in the database).
 */
interface Body {
  /** message id */
  m: string;
  /** topic */
  t: string;
  /** retry_count when received */
  r: number;
  /** claim end (ms) */
  c: number;
  /** consumer group */
  g?: string;
  /** the receive's token */
  k?: string;
}

const sign = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();

export function issueReceiptHandle(key: Buffer, receipt: Receipt & { claimedUntil: number; group?: string }): string {
  const body: Body = { m: receipt.id, t: receipt.topic, r: receipt.retryCount, c: receipt.claimedUntil };
  if (receipt.group) body.g = receipt.group;
  if (receipt.token) body.k = receipt.token;
  const text = Buffer.from(JSON.stringify(body)).toString('base64url');
  return `${text}.${sign(key, text).toString('base64url')}`;
}

/** The receipt a handle names; ReceiptHandleIsInvalid for anything this service did not issue. */
export function readReceiptHandle(key: Buffer, handle: unknown): Receipt {
  if (typeof handle !== 'string' || handle.length > 2048) throw receiptHandleInvalid();
  const [text, signature, extra] = handle.split('.');
  if (!text || !signature || extra !== undefined) throw receiptHandleInvalid();
  const expected = sign(key, text);
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw receiptHandleInvalid();
  let body: Body;
  try {
    body = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Body;
  } catch {
    throw receiptHandleInvalid();
  }
  if (typeof body?.m !== 'string' || typeof body.t !== 'string' || typeof body.r !== 'number') throw receiptHandleInvalid();
  return { id: body.m, topic: body.t, retryCount: body.r, token: typeof body.k === 'string' ? body.k : undefined };
}
