import { status as Status, type ServerWritableStream } from '@grpc/grpc-js';
import type { UpDownCounter } from '@opentelemetry/api';
import type { Message } from '../queue/message.js';
import type { Subscriber, Subscription, SubscriptionHub } from '../queue/subscriptions.js';
import { isDlqTopic } from '../queue/topic-names.js';
import { grpcError, type GrpcError } from './errors.js';
import { subscribeResponse, type SubscribeRequest } from './messages.js';

/** A stream holds at most this many deliveries that were neither acked nor nacked... */
export const DEFAULT_MAX_IN_FLIGHT = 10;
/**
 * ...unless its request asks for another window (`max_in_flight`, an extension): with 10 a stream carries at
 * most 10 messages per round trip of an ack, so one stream of a distant or busy consumer cannot keep up with
 * a fast topic. The ceiling bounds what one stream holds in the instance's memory and in the database as
 * `processing`.
 */
export const MAX_IN_FLIGHT_CEILING = 1000;

/** The window a Subscribe request asks for, or an error text for one outside 1..1,000. */
export function maxInFlightOf(request: SubscribeRequest): number | string {
  const asked = request.max_in_flight;
  if (asked === undefined || asked === null) return DEFAULT_MAX_IN_FLIGHT;
  if (!Number.isInteger(asked) || asked < 1 || asked > MAX_IN_FLIGHT_CEILING) return `max_in_flight must be from 1 to ${MAX_IN_FLIGHT_CEILING}, got ${asked}`;
  return asked;
}

export interface SubscribeDeps {
  hub: SubscriptionHub;
  deliveries: DeliveryTracker;
  streams: UpDownCounter;
  toError(err: unknown): GrpcError;
  /** With tracing on: the messages one push wrote to the stream (their receive span). */
  delivered?: (topic: string, group: string | undefined, messages: Message[]) => void;
}

/** Carries settled deliveries between instances (src/pubsub/redis-peer-relay.ts). */
export interface SettledRelay {
  publishSettled(keys: string[]): void;
  onSettled(listener: (keys: string[]) => void): void;
}

/**
 * Which stream holds which delivery, so a unary Ack or Nack frees that stream's slot. On a fan-out topic one
 * message is a delivery per group, so a delivery is named by group and id. An Ack may reach another instance
 * than the stream (a gRPC-aware load balancer spreads calls), so deliveries settled here but held by no
 * stream here are passed to the peers, when there are any.
 */
export class DeliveryTracker {
  private readonly holders = new Map<string, { stream: SubscribeStream; id: string }>();

  constructor(private readonly peers?: SettledRelay) {
    peers?.onSettled((keys) => {
      for (const key of keys) this.releaseHeld(key);
    });
  }

  /** The topic of the stream holding the delivery here, undefined when no stream of this instance does. */
  topicOf(group: string | undefined, id: string): string | undefined {
    return this.holders.get(deliveryKey(group, id))?.stream.topic;
  }

  hold(group: string | undefined, id: string, stream: SubscribeStream): void {
    this.holders.set(deliveryKey(group, id), { stream, id });
  }

  /** The deliveries were acked or nacked. */
  release(group: string | undefined, ids: string[]): void {
    const elsewhere = ids.map((id) => deliveryKey(group, id)).filter((key) => !this.releaseHeld(key));
    if (elsewhere.length > 0) this.peers?.publishSettled(elsewhere);
  }

  forget(group: string | undefined, id: string, stream: SubscribeStream): void {
    const key = deliveryKey(group, id);
    if (this.holders.get(key)?.stream === stream) this.holders.delete(key);
  }

  /**
   * A dead letter is a plain delivery whatever group a stream or an ack names (the group only picks whose dead
   * letters: src/queue/fan-out.ts), so streams of a `.dlq` topic hold it by id alone, and an ack naming a
   * group finds it there too: a message is either a group's delivery or a plain one, never both.
   */
  private releaseHeld(key: string): boolean {
    const plain = key.slice(key.lastIndexOf('/'));
    const found = this.holders.has(key) ? key : this.holders.has(plain) ? plain : undefined;
    if (found === undefined) return false;
    const holder = this.holders.get(found)!;
    this.holders.delete(found);
    holder.stream.settled(holder.id);
    return true;
  }
}

const deliveryKey = (group: string | undefined, id: string) => `${group ?? ''}/${id.toLowerCase()}`;

/**
 * One Subscribe call, a subscriber of the instance's SubscriptionHub (src/queue/subscriptions.ts): the hub
 * runs one claim for all streams of the same topic, group and visibility timeout and deals the messages out;
 * this class writes them, counts the stream's in-flight deliveries (at most maxInFlight, freed by an Ack,
 * a Nack or the visibility timeout) and reports no room while the client is not taking what was written.
 * Messages written to a stream that dies stay `processing` and come back through the visibility timeout.
 */
export class SubscribeStream implements Subscriber {
  /** Delivery id -> when its visibility timeout passes (ms, wall clock), which frees its slot. */
  private readonly inFlight = new Map<string, number>();
  /** A write returned false: no room until the transport drains. */
  private backedUp = false;
  private done = false;
  private ended: () => void = () => {};
  private subscription?: Subscription;
  readonly topic: string;
  private readonly group?: string;
  /** The group its deliveries are held under in the DeliveryTracker: none for dead letters (see releaseHeld). */
  private readonly heldAs?: string;
  private readonly visibleMs: number;

  constructor(
    private readonly call: ServerWritableStream<SubscribeRequest, unknown>,
    private readonly visibilitySeconds: number | undefined,
    /** What a dequeue of the topic without its own visibility gets (the topic's, else the server's). */
    defaultVisibilitySeconds: number,
    group: string | undefined,
    private readonly maxInFlight: number,
    private readonly deps: SubscribeDeps,
  ) {
    this.topic = call.request.topic;
    this.group = group;
    this.heldAs = isDlqTopic(this.topic) ? undefined : group;
    this.visibleMs = (visibilitySeconds ?? defaultVisibilitySeconds) * 1000;
  }

  /** Resolves when the stream has ended, whoever ended it. */
  async run(): Promise<void> {
    const ended = new Promise<void>((resolve) => (this.ended = resolve));
    const onCancel = () => this.finish();
    const onDrain = () => {
      if (!this.backedUp) return;
      this.backedUp = false;
      this.subscription?.slotFreed();
    };
    this.call.on('cancelled', onCancel);
    this.call.on('drain', onDrain);
    // The client may have gone while the call was being authorised, or the server begun to shut down.
    if (this.call.cancelled || this.done) this.finish();
    this.deps.streams.add(1, { topic: this.topic });
    try {
      if (!this.done) this.subscription = this.deps.hub.join({ topic: this.topic, group: this.group, visibilitySeconds: this.visibilitySeconds }, this);
      await ended;
    } finally {
      this.subscription?.leave();
      this.call.off('cancelled', onCancel);
      this.call.off('drain', onDrain);
      this.deps.streams.add(-1, { topic: this.topic });
      for (const id of this.inFlight.keys()) this.deps.deliveries.forget(this.heldAs, id, this);
      this.inFlight.clear();
    }
  }

  free(): number {
    return this.done || this.backedUp ? 0 : Math.max(0, this.maxInFlight - this.inFlight.size);
  }

  deliver(messages: Message[]): void {
    let written = 0;
    for (const message of messages) {
      // Ended meanwhile: the message stays `processing` and returns through the visibility timeout.
      if (this.done) break;
      this.inFlight.set(message.id, Date.now() + this.visibleMs);
      this.deps.deliveries.hold(this.heldAs, message.id, this);
      // grpc-js buffers what it cannot send yet; the hub holds back until 'drain'.
      if (!this.call.write(subscribeResponse(message))) this.backedUp = true;
      written++;
    }
    if (this.deps.delivered && written > 0) this.deps.delivered(this.topic, this.group, written === messages.length ? messages : messages.slice(0, written));
  }

  nextDeadline(): number | undefined {
    let earliest: number | undefined;
    for (const deadline of this.inFlight.values()) if (earliest === undefined || deadline < earliest) earliest = deadline;
    return earliest;
  }

  releaseOverdue(now: number): void {
    for (const [id, deadline] of this.inFlight) {
      if (deadline > now) continue;
      this.inFlight.delete(id);
      this.deps.deliveries.forget(this.heldAs, id, this);
    }
  }

  fail(err: unknown): void {
    this.end(this.deps.toError(err));
  }

  settled(id: string): void {
    if (this.inFlight.delete(id)) this.subscription?.slotFreed();
  }

  /** Graceful shutdown: UNAVAILABLE tells clients to reconnect (to another instance). */
  shutdown(): void {
    this.end(grpcError(Status.UNAVAILABLE, 'server shutting down'));
  }

  private finish(): void {
    this.done = true;
    this.ended();
  }

  private end(error: GrpcError): void {
    if (this.done) return;
    this.finish();
    this.call.emit('error', error);
  }
}
