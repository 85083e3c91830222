/**
 * The topic of each message this instance handed out by a dequeue without a consumer group, until its
 * visibility deadline or its ack: an ack by id of such a message can then check the caller's grant on that
 * topic and settle the message only while it is still there (MessageService.ackOnTopic), without reading
 * its topic first. Only a hint: an ack whose message moved meanwhile, was dequeued through another
 * instance or fell out of here takes the ordinary way, with the same answers.
 */
interface Dequeued {
  topic: string;
  until: number;
  /** Its line's key: an ack can hand the line over in its own transaction (src/store/messages/settle.ts). */
  orderingKey: string | null;
}

export class DequeuedTopics {
  /** In insertion order, which is deadline order for one visibility timeout: the oldest go first. */
  private readonly entries = new Map<string, Dequeued>();

  /** Bounds the memory (about 100 bytes an entry) whatever the consumers leave unacked. */
  constructor(private readonly max = 50_000) {}

  remember(id: string, topic: string, until: number, orderingKey: string | null): void {
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(id, { topic, until, orderingKey });
  }

  /** The topic the message was dequeued from, while its visibility deadline (at `now`) has not passed. */
  topicOf(id: string, now: number): string | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    if (now < entry.until) return entry.topic;
    this.entries.delete(id);
    return undefined;
  }

  /** A claim whose deadline moved (a visibility change): remembered until the new one. */
  extend(id: string, until: number): void {
    const entry = this.entries.get(id);
    if (entry) entry.until = until;
  }

  forget(id: string): void {
    this.entries.delete(id);
  }

  /** Forgets the message, telling what was known of it: its ordering key, where it was dequeued from `topic`. */
  take(id: string, topic: string): { orderingKey: string | null } | undefined {
    const entry = this.entries.get(id);
    this.entries.delete(id);
    return entry?.topic === topic ? entry : undefined;
  }
}
