import { MAX_DEQUEUE_COUNT } from './bounds.js';
import type { DequeueInput, Message } from './message.js';
import type { TopicSignals } from './topic-signals.js';

/** One push consumer (a gRPC Subscribe stream): the hub hands it claimed messages, never more than it has room for. */
export interface Subscriber {
  /** In-flight slots free now; 0 while its transport is backed up or it has ended. */
  free(): number;
  /** Takes claimed messages, never more than free() said just before. */
  deliver(messages: Message[]): void;
  /** Earliest wall-clock ms at which one of its in-flight deliveries' visibility timeout passes. */
  nextDeadline(): number | undefined;
  /** Forgets the in-flight deliveries whose visibility timeout passed by `now`, freeing their slots. */
  releaseOverdue(now: number): void;
  /** The claim failed (unregistered topic, unknown group, database down): the subscriber ends. */
  fail(err: unknown): void;
}

export interface SubscriptionSpec {
  topic: string;
  group?: string;
  visibilitySeconds?: number;
}

export interface Subscription {
  /** An ack or nack (or a drained transport) freed a slot. */
  slotFreed(): void;
  leave(): void;
}

/**
 * Room on a waiting feed, taken for messages about to be stored: they are stored already claimed (processing
 * until `visibleUntil`) and handed over after their commit, without a claim.
 */
export interface Reservation {
  count: number;
  visibleUntil: number;
  /** The stored messages (at most `count`; none when the store failed), dealt to the feed's subscribers. */
  fulfil(messages: Message[]): void;
}

export interface SubscriptionHubDeps {
  dequeue(input: DequeueInput): Promise<Message[]>;
  /** Claimed messages no subscriber had room for: back to pending, no attempt counted, the topic woken. */
  giveBack(spec: SubscriptionSpec, messages: Message[]): Promise<void>;
  signals: TopicSignals;
  /**
   * A poll finds what no signal announces: other instances' enqueues without Redis (found within 1 s),
   * deliveries whose visibility timeout passed, and tokens refilled on a throughput-limited topic.
   */
  pollMs?: number;
  /** The visibility of a feed whose subscribers did not ask for one: the topic's, else queue.visibility_timeout. */
  visibilitySecondsOf: (topic: string) => number;
}

const DEFAULT_POLL_MS = 1000;

/**
 * Push delivery for every subscriber of this instance. Subscribers of the same topic, consumer group and
 * visibility timeout share one feed, and a feed runs at most one claim at a time, for all its subscribers'
 * free slots together, then deals the messages out round-robin. A claim per subscriber per wake-up cost one
 * mostly empty database transaction per stream for every enqueue flush.
 *
 * Messages claimed (or handed over) when no subscriber has room any more (its transport backed up since, or it
 * left while the claim ran) are given back at once: pending for any consumer, with no attempt counted, since
 * nobody saw them. Held for room to appear, they kept consumers of other instances waiting, and when the
 * feed closed they came back through the visibility timeout counted as a failed attempt.
 */
export class SubscriptionHub {
  private readonly feeds = new Map<string, Feed>();
  private readonly pollMs: number;

  constructor(private readonly deps: SubscriptionHubDeps) {
    this.pollMs = deps.pollMs ?? DEFAULT_POLL_MS;
  }

  /** Whether any subscriber is connected at all (the enqueue path skips its reservation work otherwise). */
  waiting(): boolean {
    return this.feeds.size > 0;
  }

  /**
   * Room for up to `max` new messages of `topic` on a feed without a consumer group that has free slots and
   * nothing left to claim (its last claim came back short and no wake-up came since), so handing new
   * messages straight over does not overtake older pending ones. Undefined when there is none.
   */
  reserve(topic: string, max: number, now: number): Reservation | undefined {
    for (const feed of this.feeds.values()) {
      const reservation = feed.reserve(topic, max, now);
      if (reservation) return reservation;
    }
    return undefined;
  }

  join(spec: SubscriptionSpec, subscriber: Subscriber): Subscription {
    const key = `${spec.topic}\u0000${spec.group ?? ''}\u0000${spec.visibilitySeconds ?? ''}`;
    let feed = this.feeds.get(key);
    if (!feed) {
      const created = new Feed(spec, this.deps, this.pollMs, () => {
        if (this.feeds.get(key) === created) this.feeds.delete(key);
      });
      this.feeds.set(key, created);
      feed = created;
    }
    const joined = feed;
    joined.add(subscriber);
    let left = false;
    return {
      slotFreed: () => {
        if (!left) joined.pump();
      },
      leave: () => {
        if (left) return;
        left = true;
        joined.remove(subscriber);
      },
    };
  }
}

/** The subscribers of one (topic, group, visibility timeout), and the one claim that serves them. */
class Feed {
  private readonly subscribers: Subscriber[] = [];
  /**
   * Whether a claim may find anything: set by a topic signal, the timer, a joining subscriber and a claim that
   * returned all it asked for. A slot freed by an ack alone does not set it, as the last claim left nothing
   * to take (a nack that retries signals the topic); without this every ack cost an empty claim.
   */
  private claimDue = true;
  private running = false;
  private closed = false;
  /** Slots promised to reservations not yet fulfilled; claims leave them alone. */
  private reserved = 0;
  /** Where the next deal starts, so no subscriber is always served first. */
  private next = 0;
  private timer?: NodeJS.Timeout;
  private timerAt = Infinity;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly spec: SubscriptionSpec,
    private readonly deps: SubscriptionHubDeps,
    private readonly pollMs: number,
    private readonly onClosed: () => void,
  ) {
    this.unsubscribe = deps.signals.subscribe(spec.topic, () => this.due());
  }

  add(subscriber: Subscriber): void {
    this.subscribers.push(subscriber);
    // A newcomer takes what is waiting; this first claim also surfaces a bad topic or group to it.
    this.due();
  }

  remove(subscriber: Subscriber): void {
    const at = this.subscribers.indexOf(subscriber);
    if (at >= 0) this.subscribers.splice(at, 1);
    if (this.subscribers.length > 0 || this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    this.unsubscribe();
    this.onClosed();
  }

  reserve(topic: string, max: number, now: number): Reservation | undefined {
    if (topic !== this.spec.topic || this.spec.group !== undefined || this.running || this.claimDue || this.closed) return undefined;
    const count = Math.min(max, this.room());
    if (count <= 0) return undefined;
    this.reserved += count;
    const visibleUntil = now + Math.round((this.spec.visibilitySeconds ?? this.deps.visibilitySecondsOf(this.spec.topic)) * 1000);
    let fulfilled = false;
    return {
      count,
      visibleUntil,
      fulfil: (messages) => {
        if (fulfilled) return;
        fulfilled = true;
        this.reserved -= count;
        this.deal(messages.slice(0, count));
        this.arm();
      },
    };
  }

  private room(): number {
    return this.subscribers.reduce((sum, s) => sum + s.free(), 0) - this.reserved;
  }

  /** Claims while a claim is due and someone has room; one claim in flight at a time. */
  pump(): void {
    if (this.closed) return;
    if (this.running) return;
    this.running = true;
    void this.claimWhileDue();
  }

  private async claimWhileDue(): Promise<void> {
    try {
      while (this.claimDue && !this.closed) {
        const free = this.room();
        if (free <= 0) break;
        this.claimDue = false;
        const count = Math.min(free, MAX_DEQUEUE_COUNT);
        const messages = await this.deps.dequeue({
          topic: this.spec.topic,
          count,
          visibilityTimeoutSeconds: this.spec.visibilitySeconds,
          consumerGroup: this.spec.group,
        });
        this.deal(messages);
        // A full claim may have left more behind.
        if (messages.length === count) this.claimDue = true;
      }
    } catch (err) {
      for (const subscriber of [...this.subscribers]) subscriber.fail(err);
    } finally {
      this.running = false;
      this.arm();
    }
  }

  /** One message at a time to the next subscriber with room, so a burst is spread over the streams. */
  private deal(messages: Message[]): void {
    if (messages.length === 0) return;
    const subscribers = [...this.subscribers];
    const n = subscribers.length;
    const room = subscribers.map((s) => s.free());
    const dealt: Message[][] = subscribers.map(() => []);
    const unplaced: Message[] = [];
    let at = n === 0 ? 0 : this.next % n;
    for (const message of messages) {
      let tried = 0;
      while (room[at] === 0 && tried < n) {
        at = (at + 1) % n;
        tried++;
      }
      if (n === 0 || room[at] === 0) {
        unplaced.push(message);
        continue;
      }
      dealt[at].push(message);
      room[at]--;
      at = (at + 1) % n;
    }
    this.next = at;
    subscribers.forEach((s, i) => {
      if (dealt[i].length === 0) return;
      // One subscriber's broken transport ends that subscriber, not the feed.
      try {
        s.deliver(dealt[i]);
      } catch (err) {
        s.fail(err);
      }
    });
    if (unplaced.length > 0) this.giveBack(unplaced);
  }

  private giveBack(messages: Message[]): void {
    // A claim may find them again once someone has room (the give-back signals the topic too).
    this.claimDue = true;
    // Not given back (the database is down): they come back through their visibility timeout, as before.
    this.deps.giveBack(this.spec, messages).catch(() => {});
  }

  private due(): void {
    this.claimDue = true;
    this.pump();
  }

  /**
   * One timer per feed: the fallback poll, or sooner when a delivery's visibility timeout passes. A timer due
   * earlier is kept, so a steady flow of acks (each pumps) never pushes the poll back.
   */
  private arm(): void {
    if (this.closed) return;
    const now = Date.now();
    let at = now + this.pollMs;
    for (const subscriber of this.subscribers) {
      const deadline = subscriber.nextDeadline();
      if (deadline !== undefined) at = Math.min(at, deadline);
    }
    if (this.timer && this.timerAt <= at) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.tick(), Math.max(1, at - now));
    this.timer.unref();
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = Date.now();
    for (const subscriber of this.subscribers) subscriber.releaseOverdue(now);
    this.claimDue = true;
    this.pump();
  }
}
