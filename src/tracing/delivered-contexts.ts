import type { TraceCarrier } from './trace-metadata.js';

/**
 * How many deliveries' trace contexts an instance remembers: a consumer that never settles (its messages come
 * back through the visibility timeout) must not grow the map; the oldest are forgotten first.
 */
const MAX_REMEMBERED = 50_000;

export interface DeliveredContext {
  topic: string;
  carrier: TraceCarrier;
}

/**
 * Reads the stored trace contexts of messages by id (src/store/messages/trace-context.ts), for the settle of
 * a message another instance delivered; ids whose message carries none are absent from the answer.
 */
export type StoredContexts = (ids: string[]) => Promise<Map<string, { topic: string; trace: TraceCarrier }>>;

/**
 * The stored trace context of each message this instance delivered, until its ack or nack: an ack carries only
 * the message's id, and reading the message's metadata for it would cost every traced ack a statement. An ack
 * that reaches another instance than the delivery's finds nothing here: its span, when recorded, reads the
 * context from the store instead (StoredContexts).
 */
export class DeliveredContexts {
  private readonly byId = new Map<string, DeliveredContext>();

  remember(id: string, delivered: DeliveredContext): void {
    this.byId.delete(id);
    this.byId.set(id, delivered);
    if (this.byId.size > MAX_REMEMBERED) this.byId.delete(this.byId.keys().next().value!);
  }

  /** The delivery's context, forgotten: a message is settled once (a retry is delivered, and remembered, again). */
  take(id: string): DeliveredContext | undefined {
    const found = this.byId.get(id);
    if (found) this.byId.delete(id);
    return found;
  }
}
