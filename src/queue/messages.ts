import type { Knex } from 'knex';
import { normaliseMessageId, uuidv7 } from './message-ids.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import { findTopicsById } from '../store/messages/browse.js';
import { giveBackDeliveries } from '../store/deliveries/give-back.js';
import { giveBackMessages } from '../store/messages/give-back.js';
import { claimMessages } from '../store/messages/claim.js';
import { BatchRejected, insertMessages, newMessageRow, type InsertOutcome, type NewMessage } from '../store/messages/insert.js';
import { ackMessages, nackMessage, releaseExpired, requeueDeadLetter, type AckTarget, type AttemptResult } from '../store/messages/settle.js';
import { archiveMessages } from '../store/message-log.js';
import { moveClaimDeadline, releaseClaim } from '../store/messages/visibility.js';
import { moveDeliveryDeadline, releaseDeliveryClaim } from '../store/deliveries/visibility.js';
import { catchUpWithCluster } from '../store/cluster-catch-up.js';
import { FanOut } from './fan-out.js';
import { announceAttempt, announceRedelivery, attemptRules, boundedLastError, VISIBILITY_EXPIRED } from './attempts.js';
import type { AttemptsObserver } from './attempts-observer.js';
import { backoffOf } from './backoff.js';
import { availableAtOf } from './delays.js';
import { validatePayload } from './avro.js';
import type { Catalog } from './catalog.js';
import { DomainError, invalid, messageNotFound } from './errors.js';
import { ClaimCombiner } from './claim-combiner.js';
import { GroupCommitter } from './group-commit.js';
import { keyError, orderingKeyError } from './message-keys.js';
import { DequeuedTopics } from './dequeued-topics.js';
import { toMessage, type DequeueInput, type Message } from './message.js';
import type { MessageRow } from '../store/messages/rows.js';
import type { NackOutcome, QueueMetrics } from './metrics-port.js';
import { ACK_BATCH_IDS_MESSAGE, DEQUEUE_COUNT_MESSAGE, delayMessage, MAX_DEQUEUE_COUNT, MAX_VISIBILITY_SECONDS, VISIBILITY_CHANGE_MESSAGE, VISIBILITY_TIMEOUT_MESSAGE } from './bounds.js';
import { ackBatchOfHeld, type AckBatchCaller, type HeldAckCaller } from './held-ack-batch.js';
import { assertNotDeadLetterTopic, assertTopicName, baseTopicOf, isDlqTopic, isValidTopicName } from './topic-names.js';
import { SubscriptionHub, type Reservation } from './subscriptions.js';
import type { TopicSignals } from './topic-signals.js';
import type { HandOff, LongPoll, WaitingCaller } from './long-poll.js';
import { nextClaimableAt } from './next-claimable.js';
import { waitMsOf } from './wait-seconds.js';

export interface EnqueueInput {
  topic: unknown;
  payload: Buffer;
  metadata?: Record<string, string>;
  key?: string | null;
  /** Seconds before any consumer may get it (0 to queue.max_delay_seconds); absent: the topic's delivery delay. */
  delaySeconds?: unknown;
  /** Or not before this time (RFC 3339 text, or epoch ms); not together with delaySeconds. */
  deliverAt?: string | number | null;
  /** Delivered one at a time with the topic's other messages of this key, in enqueue order. */
  orderingKey?: string | null;
}

export interface MessageServiceDeps {
  db: Knex;
  queue: Config['queue'];
  catalog: Catalog;
  metrics: QueueMetrics;
  signals: TopicSignals;
  /** Dequeues waiting for messages (dequeueWaiting). */
  longPoll: LongPoll;
  now?: () => number;
  /** Enqueue flushes in flight at once: SQLite has one writer, MySQL gains from a few. */
  maxConcurrentFlushes: number;
  /** Hears of the messages a dequeue released after their visibility timeout (tracing, when on). */
  attemptsObserver?: AttemptsObserver;
  logger: Logger;
}

/** Re-exported for src/http/validation.ts until it imports bounds.ts, where it is defined. */
export const MAX_BATCH_ENQUEUE = 1000;
/** A message's metadata, as the JSON stored with it. */
export const MAX_METADATA_BYTES = 65_536;
/**
 * A dequeue skips the expired-visibility probe (one query) when one for the same topic (and group) found
 * nothing this recently, so a delivery whose visibility timeout passes comes back at most this much later.
 * Per instance and on the service clock; every instance probes on its own, so none depends on another.
 */
const EXPIRY_PROBE_INTERVAL_MS = 100;

/** A full topic has room again once a consumer takes a message: worth a retry soon (HTTP: Retry-After). */
const QUEUE_FULL_RETRY_AFTER_SECONDS = 1;
const queueFull = (topic: string) =>
  new DomainError('queue_full', `topic "${topic}" is full (max_depth reached)`, { retryAfterSeconds: QUEUE_FULL_RETRY_AFTER_SECONDS });

/**
 * How many claimed messages (their `sizes`, in claim order) one answer carries: those whose size together stays within
 * `maxBytes`, and always the first. An answer of 1,000 messages of 1 MiB would pass what one JSON text can
 * hold (and a default gRPC client's 4 MiB receive limit long before), failing after the claim and costing
 * every message an attempt. The size counts what an answer repeats per message (payload, metadata text, key,
 * topic) plus a fixed part for the id, times and counters: at least the message's protobuf encoding.
 */
function answerLength(sizes: number[], maxBytes: number): number {
  let size = 0;
  for (let i = 0; i < sizes.length; i++) {
    size += sizes[i];
    if (size > maxBytes && i > 0) return i;
  }
  return sizes.length;
}

/** A message's share of an answer's bytes: its fields and some room for the encoding. */
const rowBytes = (row: MessageRow) => row.payload.length + Buffer.byteLength(row.metadata) + (row.msg_key === null ? 0 : Buffer.byteLength(row.msg_key)) + row.topic.length + 128;
const messageBytes = (m: Message) => m.payload.length + Buffer.byteLength(JSON.stringify(m.metadata)) + (m.key === null ? 0 : Buffer.byteLength(m.key)) + m.topic.length + 128;

/** Enqueue, dequeue, ack, nack and requeue: every rule of docs/http-api.md, Messaging rules, for every transport. */
export class MessageService {
  private readonly now: () => number;
  private readonly enqueues: GroupCommitter<NewMessage, InsertOutcome>;
  private readonly acks: GroupCommitter<AckTarget, boolean>;
  /** The primary-key reads of topicOf and topicsOf, batched as group commit batches: one SELECT for every id asked for meanwhile. */
  private readonly topicReads: GroupCommitter<string, string | null>;
  private readonly claims: ClaimCombiner<MessageRow>;
  private readonly fanOut: FanOut;
  /** Push consumers (gRPC Subscribe streams) of this instance; new messages go straight to waiting ones. */
  readonly subscriptions: SubscriptionHub;
  /** Topic (and group) -> service time of the last expiry probe that found nothing. */
  private readonly quietProbes = new Map<string, number>();
  private readonly dequeuedTopics = new DequeuedTopics();

  constructor(private readonly deps: MessageServiceDeps) {
    this.now = deps.now ?? Date.now;
    this.fanOut = new FanOut(deps.db, deps.catalog);
    this.subscriptions = new SubscriptionHub({
      dequeue: (input) => this.dequeue(input),
      giveBack: (spec, messages) => this.giveBack(spec.topic, spec.group, messages),
      signals: deps.signals,
      visibilitySecondsOf: (topic) => this.visibilitySecondsOf(topic),
    });
    this.enqueues = new GroupCommitter((batch) => this.storeEnqueues(batch), { maxBatch: 500, maxConcurrent: deps.maxConcurrentFlushes });
    // One ack flush at a time on either engine: acks that arrive meanwhile make the next DELETE bigger instead of
    // a second statement. On MariaDB that cut the Subscribe p99 (fewer statements competing with the enqueue
    // INSERTs) at the same batch-ack throughput (docs/benchmark.md, fourth round).
    this.acks = new GroupCommitter((targets) => this.ackFlush(targets), { maxBatch: 1000, maxConcurrent: 1 });
    // With auth on, every ack and nack by id first reads its message's topic for the grant check.
    this.topicReads = new GroupCommitter(
      async (ids) => {
        const topics = await findTopicsById(deps.db, ids);
        return ids.map((id) => topics.get(id) ?? null);
      },
      { maxBatch: MAX_DEQUEUE_COUNT, maxConcurrent: deps.maxConcurrentFlushes },
    );
    // One claim per lane at a time: a second concurrent claim of the same topic only walks past the rows the
    // first holds (SKIP LOCKED) and made MariaDB spend ~10-15% more CPU per message (docs/benchmark.md).
    this.claims = new ClaimCombiner({ maxRows: MAX_DEQUEUE_COUNT, maxConcurrent: 1 });
  }

  async enqueue(input: EnqueueInput): Promise<{ id: string }> {
    const message = this.prepare(input);
    const outcome = await this.enqueues.submit(message);
    return this.accepted(message.topic, outcome);
  }

  /**
   * All or nothing: one transaction; a full topic rejects the whole batch. `field` names the list in errors
   * as the caller's transport does (HTTP `messages`, gRPC `requests`).
   */
  async enqueueBatch(inputs: EnqueueInput[], field = 'messages'): Promise<{ ids: string[] }> {
    if (inputs.length === 0) throw invalid(`${field} must hold at least one message`);
    if (inputs.length > MAX_BATCH_ENQUEUE) throw invalid(`${field} must hold at most ${MAX_BATCH_ENQUEUE} messages`);
    const messages = inputs.map((input, i) => {
      try {
        return this.prepare(input);
      } catch (err) {
        if (err instanceof DomainError) throw new DomainError(err.code, `${field}[${i}]: ${err.message}`);
        throw err;
      }
    });
    let outcomes: InsertOutcome[];
    try {
      outcomes = await this.insertAll(messages, true);
    } catch (err) {
      if (err instanceof BatchRejected) {
        this.deps.metrics.rejected(err.message, 'depth');
        throw queueFull(err.message);
      }
      throw err;
    }
    return { ids: outcomes.map((o, i) => this.accepted(messages[i].topic, o).id) };
  }

  async dequeue(input: DequeueInput): Promise<Message[]> {
    const topic = assertTopicName(input.topic);
    const count = input.count ?? 1;
    if (!Number.isInteger(count) || count < 1 || count > MAX_DEQUEUE_COUNT) throw invalid(DEQUEUE_COUNT_MESSAGE);
    if (input.visibilityTimeoutSeconds !== undefined && !isValidVisibility(input.visibilityTimeoutSeconds)) {
      throw invalid(VISIBILITY_TIMEOUT_MESSAGE);
    }
    const visibility = this.visibilitySecondsOf(topic, input.visibilityTimeoutSeconds);
    this.assertRegistered(baseTopicOf(topic));
    const route = await this.fanOut.dequeueRoute(topic, input.consumerGroup);

    const now = this.now();
    const visibleMs = Math.round(visibility * 1000);
    // The claim itself runs when its lane's combined claim does, on the clock and topic config of that moment.
    const claim = (limit: number) => {
      const at = this.now();
      return { topic, limit, now: at, visibleUntil: at + visibleMs, ratePerSecond: this.deps.catalog.config(topic)?.throughput_limit };
    };
    let rows;
    if (route.kind === 'group') {
      await this.releaseExpiredUnlessQuiet(`${topic}\u0000${route.group}`, now, () =>
        this.fanOut.releaseExpired(topic, route.group, attemptRules(this.policy(), now), VISIBILITY_EXPIRED, now),
      );
      const lane = JSON.stringify(['group', topic, route.group, visibleMs]);
      rows = await this.claims.claim(lane, count, (limit) => this.counted(topic, this.fanOut.dequeue({ ...claim(limit), group: route.group })));
    } else {
      await this.releaseExpiredUnlessQuiet(topic, now, () => releaseExpired(this.deps.db, topic, now, attemptRules(this.policy(), now), VISIBILITY_EXPIRED));
      const lane = JSON.stringify(['topic', topic, route.deadLetterGroup ?? null, visibleMs]);
      rows = await this.claims.claim(lane, count, (limit) => this.counted(topic, claimMessages(this.deps.db, { ...claim(limit), consumerGroup: route.deadLetterGroup })));
      if (route.deadLetterGroup === undefined) for (const row of rows) this.dequeuedTopics.remember(row.id, row.topic, row.visible_at, row.ordering_key);
    }
    const claimed = rows.map(toMessage);
    const answered = claimed.slice(0, answerLength(rows.map(rowBytes), this.deps.queue.max_dequeue_bytes));
    if (answered.length < claimed.length) {
      // Not given back (the database is down): they come back through their visibility timeout.
      await this.giveBack(topic, input.consumerGroup, claimed.slice(answered.length)).catch(() => {});
    }
    if (answered.length > 0) this.deps.metrics.message('dequeued', topic, answered.length);
    return answered;
  }

  /**
   * A dequeue for a caller that may be gone by the time its claim returns (a cancelled gRPC call, a closed
   * HTTP connection): then nobody can receive what the claim took, so it is given back and the answer is
   * empty. Only a caller known to be gone: one that may have read the answer keeps the delivery.
   */
  async dequeueFor(input: DequeueInput, gone: () => boolean): Promise<Message[]> {
    const messages = await this.dequeue(input);
    if (messages.length === 0 || !gone()) return messages;
    // Not given back (the database is down): they come back through their visibility timeout.
    // One claim's messages are all of the topic it claimed from.
    await this.giveBack(messages[0].topic, input.consumerGroup, messages).catch(() => {});
    return [];
  }

  /**
   * `dequeueFor` that, finding nothing, waits up to `waitSeconds` (0 to 20; absent or 0: answers at once) for
   * a message of the topic (and group), and answers as soon as a claim finds some: long polling
   * (src/queue/long-poll.ts). The caller leaving ends the wait; what a claim took for it by then goes back.
   */
  async dequeueWaiting(input: DequeueInput, waitSeconds: unknown, caller: WaitingCaller): Promise<Message[]> {
    const waitMs = waitMsOf(waitSeconds);
    const gone = () => caller.cancelled.aborted;
    if (waitMs === 0) return this.dequeueFor(input, gone);
    const topic = assertTopicName(input.topic);
    return this.deps.longPoll.wait({
      topic,
      group: input.consumerGroup,
      count: input.count ?? 1,
      waitMs,
      cancelled: caller.cancelled,
      reauthorize: caller.reauthorize,
      claim: () => this.dequeueFor(input, gone),
      handOff: input.consumerGroup === undefined ? this.handOffTo(topic, input, caller) : undefined,
      nextAt: async (until) => {
        const route = await this.fanOut.dequeueRoute(topic, input.consumerGroup);
        return nextClaimableAt(this.deps.db, route, { topic, now: this.now(), until, ratePerSecond: this.deps.catalog.config(topic)?.throughput_limit });
      },
    });
  }

  /**
   * The visibility timeout a dequeue of the topic gets, in seconds: the one it asked for, else the topic's
   * visibility_timeout_seconds, else queue.visibility_timeout. Every claim path (a dequeue's own claim, a
   * long poll's hand-off, a Subscribe feed's bookkeeping) asks here, so they cannot disagree.
   */
  visibilitySecondsOf(topic: string, requested?: number): number {
    return requested ?? this.deps.catalog.config(topic)?.visibility_timeout_seconds ?? this.deps.queue.visibility_timeout;
  }

  /**
   * How a topic's waiting dequeue takes messages an enqueue stored claimed for it (LongPoll.reserve): as its
   * claim would answer them (the access checked again, the answer's byte bound), the rest given back.
   */
  private handOffTo(topic: string, input: DequeueInput, caller: WaitingCaller): HandOff {
    return {
      visibilityMs: Math.round(this.visibilitySecondsOf(topic, input.visibilityTimeoutSeconds) * 1000),
      take: async (messages) => {
        let answered: Message[] = [];
        try {
          await caller.reauthorize?.();
          if (!caller.cancelled.aborted) answered = messages.slice(0, answerLength(messages.map(messageBytes), this.deps.queue.max_dequeue_bytes));
        } finally {
          // Not given back (the database is down): they come back through their visibility timeout.
          if (answered.length < messages.length) await this.giveBack(topic, undefined, messages.slice(answered.length)).catch(() => {});
        }
        for (const m of answered) this.dequeuedTopics.remember(m.id, topic, m.claimedUntil!, m.orderingKey);
        return answered;
      },
    };
  }

  /** Graceful shutdown: every waiting dequeue answers now, empty, and later ones do not wait. */
  endWaits(): void {
    this.deps.longPoll.close();
  }

  /**
   * Claimed messages a consumer of this instance did not get: pending again with no attempt counted
   * (src/store/messages/give-back.ts), and the topic woken for whoever has room.
   */
  private async giveBack(topic: string, consumerGroup: string | undefined, messages: Message[]): Promise<void> {
    const held = messages.flatMap((m) => (m.claimedUntil === undefined ? [] : [{ id: m.id, claimedUntil: m.claimedUntil }]));
    if (held.length === 0) return;
    for (const { id } of held) this.dequeuedTopics.forget(id);
    // The way dequeueRoute claimed them: a group's deliveries, except on a dead-letter topic.
    if (consumerGroup && !isDlqTopic(topic)) await giveBackDeliveries(this.deps.db, consumerGroup, held);
    else {
      const superseded = await giveBackMessages(this.deps.db, held, this.now());
      if (superseded > 0) this.deps.metrics.message('superseded', topic, superseded);
    }
    this.deps.signals.signal(topic);
  }

  /**
   * The topic a group-less dequeue of this instance took the message from, while its visibility lasts: an ack
   * may try `ackOnTopic` with it (src/queue/dequeued-topics.ts).
   */
  dequeuedTopicOf(id: unknown): string | undefined {
    const messageId = normaliseMessageId(id);
    return messageId ? this.dequeuedTopics.topicOf(messageId, this.now()) : undefined;
  }

  async ack(id: unknown, consumerGroup?: string): Promise<void> {
    const messageId = normaliseMessageId(id);
    if (!messageId) throw messageNotFound();
    this.dequeuedTopics.forget(messageId);
    if (!(await this.orAfterCatchUp(() => this.ackOne(messageId, consumerGroup), (found) => !found))) throw messageNotFound();
  }

  private async ackOne(messageId: string, consumerGroup?: string): Promise<boolean> {
    const routes = await this.fanOut.settleRoutes([messageId], consumerGroup);
    if (routes.group.length > 0) return (await this.ackGroup(routes.group, consumerGroup!)).size > 0;
    return routes.plain.length > 0 && (await this.acks.submit({ id: messageId }));
  }

  /**
   * The ack of a delivery this instance made on `topic` (a Subscribe stream's), by a caller whose grant was
   * checked on `topic` instead of on the topic read from the message: it settles the message only while it is
   * processing on that topic, so the grant held for the topic the message was deleted from, and the read is
   * saved (with auth on it was one statement per ack batch besides the DELETE). False when the message is not
   * there (acked already, moved to its dead-letter topic, unknown) or anything else needs a look: the caller
   * then takes the ordinary way (the topic's grant, then `ack`), which gives that case its usual answer.
   */
  async ackOnTopic(id: unknown, topic: string): Promise<boolean> {
    return (await this.ackOnTopics([{ id, topic }])).size > 0;
  }

  /**
   * `ackOnTopic` for several deliveries at once (a batch ack, gRPC or HTTP), each on its own topic, through
   * the same ack group commit. Resolves to the (normalised) ids settled; the others need the ordinary way.
   */
  async ackOnTopics(held: ReadonlyArray<{ id: unknown; topic: string }>): Promise<Set<string>> {
    const topics = new Map<string, string>();
    const orderingKeys = new Map<string, string | null>();
    for (const { id, topic } of held) {
      const messageId = normaliseMessageId(id);
      if (!messageId) continue;
      const known = this.dequeuedTopics.take(messageId, topic);
      if (known) orderingKeys.set(messageId, known.orderingKey);
      topics.set(messageId, topic);
    }
    const settled = new Set<string>();
    if (topics.size === 0) return settled;
    let plain: string[];
    try {
      // A fan-out message needs a consumer group: the ordinary way refuses it, after its own grant check.
      plain = (await this.fanOut.settleRoutes([...topics.keys()], undefined)).plain;
    } catch {
      return settled;
    }
    await Promise.all(
      plain.map(async (id) => {
        if (await this.acks.submit({ id, topic: topics.get(id)!, orderingKey: orderingKeys.get(id) })) settled.add(id);
      }),
    );
    return settled;
  }

  /**
   * The shortcut of an ack by id, for every transport: a group-less delivery this instance made (found through
   * `caller.heldTopicOf`, then this instance's group-less dequeues) is checked against the topic it was
   * delivered on (`caller.mayConsume`) and settled only while it is still there (`ackOnTopic`), without
   * reading the message's topic first. `caller.release` hears of it before the settle. False when that way
   * does not apply or settles nothing (a group, a delivery this instance does not know, a topic the caller may
   * not consume, a message acked already or moved): the caller then takes the ordinary way (the grant on the
   * topic read from the message, then `ack`), which gives that case its usual answer.
   */
  async ackHeld(id: string, consumerGroup: string | undefined, caller: HeldAckCaller): Promise<boolean> {
    if (consumerGroup !== undefined) return false;
    const topic = caller.heldTopicOf?.(id) ?? this.dequeuedTopicOf(id);
    if (topic === undefined || !(await caller.mayConsume(topic))) return false;
    caller.release?.([id]);
    return this.ackOnTopic(id, topic);
  }

  /**
   * A batch ack with the shortcut of `ackHeld` for the deliveries this instance made, the ordinary way (after
   * `caller.authorize`) for the other ids (src/queue/held-ack-batch.ts). Answers as `ackBatch` does.
   */
  ackBatchHeld(ids: string[], consumerGroup: string | undefined, caller: AckBatchCaller): Promise<{ acked: string[]; notFound: string[] }> {
    return ackBatchOfHeld(this, ids, consumerGroup, caller);
  }

  /**
   * A settle that found nothing may have reached another Galera node than the claim it settles, one that had
   * not applied that claim yet (src/store/cluster-catch-up.ts): once the node has caught up, it looks again.
   * Plain servers and SQLite see every commit at once and answer the first result.
   */
  private async orAfterCatchUp<T>(run: () => Promise<T>, missed: (result: T) => boolean): Promise<T> {
    const result = await run();
    if (!missed(result) || !(await catchUpWithCluster(this.deps.db))) return result;
    return run();
  }

  async ackBatch(ids: unknown[], consumerGroup?: string): Promise<{ acked: string[]; notFound: string[] }> {
    if (ids.length > MAX_DEQUEUE_COUNT) throw invalid(ACK_BATCH_IDS_MESSAGE);
    const valid = [...new Set(ids.map(normaliseMessageId).filter((id): id is string => id !== null))];
    const found = await this.ackSome(valid, consumerGroup);
    const missing = valid.filter((id) => !found.has(id));
    if (missing.length > 0 && (await catchUpWithCluster(this.deps.db))) for (const id of await this.ackSome(missing, consumerGroup)) found.add(id);
    const acked: string[] = [];
    const notFound: string[] = [];
    for (const id of ids) {
      const normalised = normaliseMessageId(id);
      (normalised && found.has(normalised) ? acked : notFound).push(String(id));
    }
    return { acked, notFound };
  }

  private async ackSome(ids: string[], consumerGroup?: string): Promise<Set<string>> {
    const routes = await this.fanOut.settleRoutes(ids, consumerGroup);
    // Through the ack group commit: concurrent batch acks share delete transactions, as single acks do.
    const settled = await Promise.all(routes.plain.map((id) => this.acks.submit({ id })));
    const found = new Set(routes.plain.filter((_, i) => settled[i]));
    if (routes.group.length > 0) for (const id of await this.ackGroup(routes.group, consumerGroup!)) found.add(id);
    return found;
  }

  /**
   * A failed attempt. A retry is claimable again after the topic's retry backoff for its attempt count, or
   * with `delaySeconds` that long after the nack instead (0: at once): a downstream outage is waited out
   * instead of burning the retries at once. A dead-lettered or failed message is not delayed. Resolves to what
   * the nack did (a trace's nack span records it).
   */
  async nack(id: unknown, reason = '', consumerGroup?: string, delaySeconds?: unknown): Promise<NackOutcome> {
    const cap = this.deps.queue.max_delay_seconds;
    if (delaySeconds !== undefined && (typeof delaySeconds !== 'number' || !Number.isInteger(delaySeconds) || delaySeconds < 0 || delaySeconds > cap)) throw invalid(delayMessage(cap));
    const messageId = normaliseMessageId(id);
    if (!messageId) throw messageNotFound();
    this.dequeuedTopics.forget(messageId);
    const error = boundedLastError(reason);
    const attempt = async (): Promise<AttemptResult | null> => {
      const routes = await this.fanOut.settleRoutes([messageId], consumerGroup);
      const now = this.now();
      const rules = attemptRules(this.policy(), now, delaySeconds === undefined ? undefined : (delaySeconds as number) * 1000);
      if (routes.group.length > 0) return this.fanOut.nack(messageId, consumerGroup!, error, rules, now);
      return routes.plain.length > 0 ? nackMessage(this.deps.db, messageId, error, rules, now) : null;
    };
    const result = await this.orAfterCatchUp(attempt, (r) => !r);
    if (!result) throw messageNotFound();
    const outcome = result.outcome === 'superseded' ? 'retry' : result.outcome;
    this.deps.metrics.nacked(result.topic, outcome);
    announceAttempt(result, this.deps.metrics, this.deps.signals);
    return outcome;
  }

  /**
   * Changes the visibility of a processing message (its group's delivery, with a consumer group): its claim
   * now ends `seconds` from now, longer or shorter than the dequeue set, so a long job keeps its message by
   * calling this before the deadline (a heartbeat). 0 gives the message back at once, pending again with no
   * attempt counted, and wakes the topic's consumers. Resolves to when the message becomes available again
   * unless it is settled first; 404 when it is unknown or not processing (for that group).
   */
  async changeVisibility(id: unknown, seconds: unknown, consumerGroup?: string): Promise<{ availableAt: number }> {
    if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < 0 || seconds > MAX_VISIBILITY_SECONDS) throw invalid(VISIBILITY_CHANGE_MESSAGE);
    const messageId = normaliseMessageId(id);
    if (!messageId) throw messageNotFound();
    const now = this.now();
    const until = now + seconds * 1000;
    const attempt = async (): Promise<string | null> => {
      const routes = await this.fanOut.settleRoutes([messageId], consumerGroup);
      if (routes.group.length > 0) return seconds === 0 ? releaseDeliveryClaim(this.deps.db, messageId, consumerGroup!) : moveDeliveryDeadline(this.deps.db, messageId, consumerGroup!, until);
      if (routes.plain.length === 0) return null;
      return seconds === 0 ? releaseClaim(this.deps.db, messageId, now) : moveClaimDeadline(this.deps.db, messageId, until);
    };
    const topic = await this.orAfterCatchUp(attempt, (t) => t === null);
    if (topic === null) throw messageNotFound();
    if (seconds === 0) {
      this.dequeuedTopics.forget(messageId);
      this.deps.signals.signal(topic);
    } else this.dequeuedTopics.extend(messageId, until);
    return { availableAt: until };
  }

  /** The topic a message lives in (null for an unknown or malformed id): per-topic grants of ack, nack and requeue. */
  async topicOf(id: unknown): Promise<string | null> {
    const messageId = normaliseMessageId(id);
    return messageId ? this.orAfterCatchUp(() => this.topicReads.submit(messageId), (topic) => topic === null) : null;
  }

  /**
   * The topics of messages, for the grants of a batch ack, gRPC Ack and Nack. An id this node does not know
   * yet is read again once it has caught up (as `topicOf` does): the settle that follows catches up too, so
   * an id skipped here would be settled without its topic's grant ever being checked.
   */
  async topicsOf(ids: unknown[]): Promise<string[]> {
    const valid = [...new Set(ids.map(normaliseMessageId).filter((id): id is string => id !== null))].slice(0, MAX_DEQUEUE_COUNT);
    const read = (some: string[]) => Promise.all(some.map((id) => this.topicReads.submit(id)));
    const topics = await read(valid);
    const missing = valid.filter((_, i) => topics[i] === null);
    if (missing.length > 0 && (await catchUpWithCluster(this.deps.db))) topics.push(...(await read(missing)));
    return [...new Set(topics.filter((topic): topic is string => topic !== null))];
  }

  async requeue(id: unknown): Promise<void> {
    const messageId = normaliseMessageId(id);
    if (!messageId) throw notDeadLetter();
    const now = this.now();
    const target = { maxRetries: (topic: string) => this.maxRetriesOf(topic), expiresAt: (topic: string) => this.expiresAtOf(topic, now), now };
    const attempt = async () => {
      const fannedOut = await this.fanOut.requeue(messageId, target);
      return fannedOut === undefined ? requeueDeadLetter(this.deps.db, messageId, target) : fannedOut;
    };
    const result = await this.orAfterCatchUp(attempt, (r) => !r);
    if (!result) throw notDeadLetter();
    this.deps.metrics.message(result.outcome === 'superseded' ? 'superseded' : 'requeued', result.topic);
    // Displaced: the older pending message holding its key gave way to it.
    if (result.outcome === 'displaced') this.deps.metrics.message('superseded', result.topic);
    if (result.outcome !== 'superseded') this.deps.signals.signal(result.topic);
  }

  /** Waits for queued enqueues and acks to commit (graceful shutdown). */
  async drain(): Promise<void> {
    await Promise.all([this.enqueues.drained(), this.acks.drained()]);
  }

  /**
   * Replay: archived messages go back in as new pending messages (new ids, retry_count 0) through the normal
   * insert path, so key upserts, max_depth and fan-out apply. Returns how many were stored; stops counting at
   * a full topic (`full` is true then).
   */
  async reenqueue(items: Array<{ topic: string; key: string | null; orderingKey?: string | null; payload: Buffer; metadata: string }>): Promise<{ stored: number; full: boolean }> {
    if (items.length === 0) return { stored: 0, full: false };
    const now = this.now();
    const messages: NewMessage[] = items.map((item) => ({
      id: uuidv7(now),
      topic: item.topic,
      key: item.key,
      orderingKey: item.orderingKey ?? null,
      payload: item.payload,
      metadata: item.metadata,
      maxRetries: this.maxRetriesOf(item.topic),
      expiresAt: this.expiresAtOf(item.topic, now),
      createdAt: now,
    }));
    const outcomes = await this.insertAll(messages, false);
    // Counted as any enqueue is: what was stored, and what a full topic refused.
    outcomes.forEach((o, i) => {
      if (o.outcome === 'full') this.deps.metrics.rejected(messages[i].topic, 'depth');
      else this.deps.metrics.message('enqueued', messages[i].topic);
    });
    const stored = outcomes.filter((o) => o.outcome !== 'full').length;
    for (const topic of new Set(items.map((i) => i.topic))) this.deps.signals.signal(topic);
    return { stored, full: stored < outcomes.length };
  }

  private prepare(input: EnqueueInput): NewMessage {
    const topic = this.rejectInvalid(input.topic, () => assertNotDeadLetterTopic(assertTopicName(input.topic)));
    const { payload } = input;
    if (payload.length === 0) this.reject(topic, 'invalid', invalid('payload must be a non-empty string'));
    if (payload.length > this.deps.queue.max_payload_bytes) {
      this.reject(topic, 'invalid', new DomainError('payload_too_large', `payload exceeds ${this.deps.queue.max_payload_bytes} bytes`));
    }
    const metadata = JSON.stringify(input.metadata ?? {});
    // A bound of its own, or one message's metadata could outgrow its column (16 MiB on MySQL) or the packet
    // that carries a whole group commit, and fail the other callers' messages of that flush with it.
    if (Buffer.byteLength(metadata) > MAX_METADATA_BYTES) {
      this.reject(topic, 'invalid', new DomainError('payload_too_large', `metadata exceeds ${MAX_METADATA_BYTES} bytes (as JSON)`));
    }
    const key = input.key ?? null;
    const badKey = key === null ? undefined : keyError(key);
    if (badKey) this.reject(topic, 'invalid', badKey);
    const orderingKey = input.orderingKey ?? null;
    const badOrderingKey = orderingKey === null ? undefined : orderingKeyError(orderingKey);
    if (badOrderingKey) this.reject(topic, 'invalid', badOrderingKey);
    if (!this.isRegistered(topic)) this.reject(topic, 'registration', notRegistered(topic));
    const schema = this.deps.catalog.schema(topic);
    if (schema) {
      try {
        validatePayload(schema.compiled, payload);
      } catch (err) {
        this.reject(topic, 'schema', err as Error);
      }
    }
    const now = this.now();
    const expiresAt = this.expiresAtOf(topic, now);
    let availableAt: number;
    try {
      const policy = { maxSeconds: this.deps.queue.max_delay_seconds, topicDelaySeconds: this.deps.catalog.config(topic)?.delivery_delay_seconds };
      availableAt = availableAtOf(input, policy, now, expiresAt);
    } catch (err) {
      this.reject(topic, 'invalid', err as Error);
    }
    return { id: uuidv7(now), topic, key, payload, metadata, maxRetries: this.maxRetriesOf(topic), expiresAt, createdAt: now, availableAt, orderingKey };
  }

  private accepted(topic: string, outcome: InsertOutcome): { id: string } {
    if (outcome.outcome === 'full') {
      this.deps.metrics.rejected(topic, 'depth');
      throw queueFull(topic);
    }
    this.deps.metrics.message('enqueued', topic);
    // A message handed to a waiting subscriber is nobody else's to claim: waking anyone would be an empty claim.
    if (!isClaimed(outcome)) this.deps.signals.signal(topic);
    return { id: outcome.id };
  }

  private async counted(topic: string, claim: Promise<MessageRow[]>): Promise<MessageRow[]> {
    const rows = await claim;
    this.deps.metrics.claim(topic, rows.length);
    return rows;
  }

  /**
   * The enqueue group commit. Where a feed of this instance's subscribers, or a dequeue of its own, waits with
   * room and nothing older to claim, the oldest unkeyed messages of its topic are stored already claimed for
   * it and handed over after the commit: no claim transaction, no wake-up, one commit from enqueue to delivery.
   */
  private async storeEnqueues(batch: NewMessage[]): Promise<InsertOutcome[]> {
    const reservations = this.reserveForWaiting(batch);
    let outcomes: InsertOutcome[] = [];
    try {
      outcomes = await this.insertAll(batch, false);
      return outcomes;
    } finally {
      const indexOf = new Map(batch.map((m, i) => [m, i]));
      for (const { topic, reservation, messages } of reservations) {
        const handed = messages.filter((m) => isClaimed(outcomes[indexOf.get(m)!])).map((m) => toMessage(newMessageRow(m)));
        reservation.fulfil(handed);
        if (handed.length > 0) {
          this.deps.metrics.message('dequeued', topic, handed.length);
          this.deps.metrics.message('handed_over', topic, handed.length);
        }
      }
    }
  }

  /** Reservations for the batch's messages on waiting subscribers first, then on waiting dequeues. */
  private reserveForWaiting(batch: NewMessage[]): Array<{ topic: string; reservation: Reservation; messages: NewMessage[] }> {
    const reservations: Array<{ topic: string; reservation: Reservation; messages: NewMessage[] }> = [];
    if (!this.subscriptions.waiting() && this.deps.longPoll.size === 0) return reservations;
    const eligible = new Map<string, NewMessage[]>();
    for (const message of batch) {
      // Keyed messages stay pending for upserts; a throughput limit is enforced by claims only; a delayed
      // message is nobody's before its time; one with an ordering key waits for its turn.
      if (message.key !== null || message.availableAt || message.orderingKey != null || this.deps.catalog.config(message.topic)?.throughput_limit) continue;
      const list = eligible.get(message.topic);
      if (list) list.push(message);
      else eligible.set(message.topic, [message]);
    }
    const now = this.now();
    for (const [topic, messages] of eligible) {
      let left = messages;
      for (const waiting of [this.subscriptions, this.deps.longPoll]) {
        const reservation = left.length > 0 ? waiting.reserve(topic, left.length, now) : undefined;
        if (!reservation) continue;
        const taken = left.slice(0, reservation.count);
        for (const message of taken) message.claimedUntil = reservation.visibleUntil;
        reservations.push({ topic, reservation, messages: taken });
        left = left.slice(reservation.count);
      }
    }
    return reservations;
  }

  private insertAll(messages: NewMessage[], atomic: boolean): Promise<InsertOutcome[]> {
    return insertMessages(this.deps.db, messages, {
      maxDepthOf: (topic) => this.deps.catalog.config(topic)?.max_depth,
      atomic,
      mayHaveGroups: (topic) => this.fanOut.isFanOut(topic),
    });
  }

  private async ackFlush(targets: AckTarget[]): Promise<boolean[]> {
    const acked = new Map((await this.ackRows(targets)).map((a) => [a.id, a.topic]));
    // Two acks of one message in one batch: only the first settles it; the other finds it gone (404), as it
    // would have in separate transactions. An ack bound to a topic did not settle a message of another one
    // (topic "": gone after a lost answer, see ackMessages).
    return targets.map(({ id, topic }) => {
      const found = acked.get(id);
      if (found === undefined || (topic !== undefined && found !== topic && found !== '')) return false;
      acked.delete(id);
      return true;
    });
  }

  private async ackRows(targets: AckTarget[]) {
    // Replayable topics: archived inside the ack's transaction, so a failed ack archives nothing.
    // Without any, the store may ack in one statement.
    const archive = async (trx: Knex.Transaction, rows: Array<{ id: string; topic: string }>) => {
      const replayable = rows.filter((r) => this.deps.catalog.config(r.topic)?.replayable === true).map((r) => r.id);
      if (replayable.length > 0) await archiveMessages(trx, replayable, this.now());
    };
    const acked = await ackMessages(this.deps.db, targets, this.now(), {
      beforeDelete: this.deps.catalog.hasReplayableTopics() ? archive : undefined,
      handOverFailed: (topics, err) =>
        this.deps.logger.warn({ err, topics }, 'acked messages whose ordering keys could not be handed on; the expiry reaper hands them on'),
    });
    const perTopic = new Map<string, number>();
    // Topic "": acked by an attempt whose answer was lost, topic unknown (src/store/messages/settle.ts); not counted.
    for (const a of acked) if (a.topic) perTopic.set(a.topic, (perTopic.get(a.topic) ?? 0) + 1);
    for (const [topic, n] of perTopic) this.deps.metrics.message('acked', topic, n);
    this.wakeNextHeads(acked);
    return acked;
  }

  /** A group's acks, straight to the store (group commit is for the plain hot path). */
  private async ackGroup(ids: string[], group: string): Promise<Set<string>> {
    const { acked } = await this.fanOut.ack(ids, group, this.now());
    const perTopic = new Map<string, number>();
    for (const a of acked) if (a.topic) perTopic.set(a.topic, (perTopic.get(a.topic) ?? 0) + 1);
    for (const [topic, n] of perTopic) this.deps.metrics.message('acked', topic, n);
    this.wakeNextHeads(acked);
    return new Set(acked.map((a) => a.id));
  }


  /** An ack of a message with an ordering key made the next one of its key claimable: its topic's consumers look again. */
  private wakeNextHeads(acked: ReadonlyArray<{ topic: string; orderingKey?: string | null }>): void {
    for (const topic of new Set(acked.filter((a) => a.orderingKey != null && a.topic).map((a) => a.topic))) this.deps.signals.signal(topic);
  }

  private async releaseExpiredUnlessQuiet(key: string, now: number, release: () => Promise<AttemptResult[]>): Promise<void> {
    const quietAt = this.quietProbes.get(key);
    if (quietAt !== undefined && now >= quietAt && now - quietAt < EXPIRY_PROBE_INTERVAL_MS) return;
    const results = await release();
    if (results.length === 0) this.quietProbes.set(key, now);
    else this.quietProbes.delete(key);
    for (const result of results) announceRedelivery(result, this.deps.metrics, this.deps.signals, this.deps.attemptsObserver);
  }


  private policy() {
    return {
      dlqThreshold: this.deps.queue.dlq_threshold,
      topicMaxRetries: (topic: string) => this.deps.catalog.config(topic)?.max_retries,
      backoffOf: (topic: string) => backoffOf(this.deps.catalog.config(topic), this.deps.queue),
    };
  }

  private maxRetriesOf(topic: string): number {
    return this.deps.catalog.config(topic)?.max_retries ?? this.deps.queue.max_retries;
  }

  /** The topic's message_ttl_seconds when set (0 = never), else queue.message_ttl (0 = never). */
  private expiresAtOf(topic: string, now: number): number | null {
    const ttlSeconds = this.deps.catalog.config(topic)?.message_ttl_seconds ?? this.deps.queue.message_ttl;
    return ttlSeconds > 0 ? now + Math.round(ttlSeconds * 1000) : null;
  }

  private isRegistered(topic: string): boolean {
    return !this.deps.queue.require_topic_registration || this.deps.catalog.config(topic) !== undefined;
  }

  private assertRegistered(topic: string): void {
    if (!this.isRegistered(topic)) throw notRegistered(topic);
  }

  private rejectInvalid(topic: unknown, check: () => string): string {
    try {
      return check();
    } catch (err) {
      this.reject(isValidTopicName(topic) ? topic : '', 'invalid', err as Error);
    }
  }

  private reject(topic: string, reason: 'invalid' | 'registration' | 'schema', err: Error): never {
    this.deps.metrics.rejected(topic, reason);
    throw err;
  }
}

const isClaimed = (outcome: InsertOutcome | undefined) => outcome?.outcome === 'inserted' && outcome.claimed === true;

function isValidVisibility(seconds: number): boolean {
  return Number.isInteger(seconds) && seconds >= 1 && seconds <= MAX_VISIBILITY_SECONDS;
}

const notRegistered = (topic: string) => new DomainError('topic_not_registered', `topic "${topic}" is not registered (queue.require_topic_registration is on)`);
const notDeadLetter = () => new DomainError('not_found', 'message not found or not a dead-letter message');
