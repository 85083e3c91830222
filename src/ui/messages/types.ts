import type { components } from '../api/openapi';

/** A message as `GET /api/messages` lists it (unset fields are null or "": docs/http-api.md, Message fields). */
export type Message = components['schemas']['Message'];
export type MessagePage = components['schemas']['MessagePage'];
/** A message as `POST /api/messages/dequeue` returns it. */
export type DequeuedMessage = components['schemas']['DequeuedMessage'];
export type MessageStatus = Message['status'];

/** The statuses a stored message can have (the `status` filter of `GET /api/messages`). */
export const MESSAGE_STATUSES: readonly MessageStatus[] = ['pending', 'processing', 'failed', 'expired'];

/** What a purge may remove; none chosen means all but `failed` (docs/http-api.md, Messaging rules, Purge). */
export const PURGEABLE_STATUSES: readonly MessageStatus[] = ['pending', 'processing', 'expired', 'failed'];

export const PAGE_SIZES = [25, 50, 100, 200] as const;

/** Dead letters live in `<topic>.dlq`; only they can be requeued. */
export function isDeadLetter(message: Pick<Message, 'topic'>): boolean {
  return message.topic.endsWith('.dlq');
}
