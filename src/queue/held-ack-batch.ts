import { MAX_DEQUEUE_COUNT } from './bounds.js';
import { normaliseMessageId } from './message-ids.js';

/** What a transport knows of the caller of an ack by id (MessageService.ackHeld, ackBatchHeld). */
export interface HeldAckCaller {
  /** Whether the caller may consume `topic` without a group; other refusals (no valid token) throw. */
  mayConsume(topic: string): boolean | Promise<boolean>;
  /**
   * The topic of a group-less delivery the transport made itself and still knows (gRPC: its Subscribe
   * streams'), asked before the group-less dequeues of this instance (MessageService.dequeuedTopicOf).
   */
  heldTopicOf?(id: string): string | undefined;
  /** The deliveries about to be settled, once each (gRPC: they stop counting against their stream's window). */
  release?(ids: string[]): void;
}

/** A batch ack's caller: also the ordinary way's grant check. */
export interface AckBatchCaller extends HeldAckCaller {
  /** The grant on the topics read from the messages `ids` (also when there are none: the token); throws to refuse. */
  authorize(ids: string[]): Promise<void>;
}

/** What ackBatchOfHeld needs of MessageService. */
export interface HeldAckSettler {
  dequeuedTopicOf(id: string): string | undefined;
  ackOnTopics(held: ReadonlyArray<{ id: string; topic: string }>): Promise<Set<string>>;
  ackBatch(ids: string[], consumerGroup?: string): Promise<{ acked: string[] }>;
}

/**
 * A batch ack that does not read the topics of the deliveries this instance made: each is checked against the
 * topic it was delivered on and settled only while it is still there (MessageService.ackOnTopics). The other
 * ids take the ordinary way first (the grant on the topics read from the messages, then MessageService.ackBatch),
 * so whatever refuses them (a topic the caller may not consume, a fan-out message without a group, an
 * oversized batch) refuses the call before anything is acked. What the first way does not settle (a delivery
 * acked already, or moved: to its dead-letter topic, say) takes the ordinary way last, with its usual answer;
 * a delivery that moved to a topic the caller may not consume refuses the call then, with the others acked.
 * Answers as `MessageService.ackBatch` does: every id of the request, in its order, acked or not found.
 */
export async function ackBatchOfHeld(
  messages: HeldAckSettler,
  ids: string[],
  group: string | undefined,
  caller: AckBatchCaller,
): Promise<{ acked: string[]; notFound: string[] }> {
  const withinLimit = ids.length <= MAX_DEQUEUE_COUNT;
  const byTopic = new Map<string, Set<string>>();
  const rest: string[] = [];
  for (const id of ids) {
    const topic = group === undefined && withinLimit ? (caller.heldTopicOf?.(id) ?? messages.dequeuedTopicOf(id)) : undefined;
    if (topic === undefined) rest.push(id);
    else byTopic.set(topic, (byTopic.get(topic) ?? new Set()).add(id));
  }
  const held: Array<{ id: string; topic: string }> = [];
  for (const [topic, heldIds] of byTopic) {
    if (await caller.mayConsume(topic)) for (const id of heldIds) held.push({ id, topic });
    else rest.push(...heldIds);
  }
  const settled = new Set<string>();
  const theOrdinaryWay = async (batch: string[], release: boolean) => {
    await caller.authorize(batch);
    // An oversized batch is refused whole (MessageService.ackBatch) and releases nothing.
    if (release && withinLimit) caller.release?.(batch);
    for (const id of (await messages.ackBatch(batch, group)).acked) settled.add(normaliseMessageId(id) ?? id);
  };
  if (rest.length > 0 || held.length === 0) await theOrdinaryWay(rest, true);
  if (held.length > 0) {
    caller.release?.(held.map((h) => h.id));
    for (const id of await messages.ackOnTopics(held)) settled.add(id);
    // Released above already: a second release would tell the peers about a delivery none of them holds.
    const misses = held.map((h) => h.id).filter((id) => !settled.has(normaliseMessageId(id) ?? id));
    if (misses.length > 0) await theOrdinaryWay(misses, false);
  }
  const acked: string[] = [];
  const notFound: string[] = [];
  for (const id of ids) (settled.has(normaliseMessageId(id) ?? '') ? acked : notFound).push(id);
  return { acked, notFound };
}
