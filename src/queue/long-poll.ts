import { DomainError } from './errors.js';
import type { Message } from './message.js';
import type { Reservation } from './subscriptions.js';
import type { TopicSignals } from './topic-signals.js';

/** How a wait ended: with messages, at its end, by the server's shutdown, because its caller left, or failed. */
export type WaitEnd = 'message' | 'timeout' | 'shutdown' | 'gone' | 'error';

export interface LongPollMetrics {
  /** A call found nothing and began to wait. */
  started(topic: string): void;
  /** A wait that `started` ended. */
  ended(topic: string, how: WaitEnd): void;
}

export interface LongPollOptions {
  signals: TopicSignals;
  /** server.max_waiting_dequeues: calls waiting at once on this instance; one more is refused. */
  maxWaiting: number;
  /**
   * Whether enqueues of other instances may go unannounced here (MySQL without a working Redis relay): each
   * lane then re-checks with one claim every RECHECK_MS. Asked at every tick, so a relay that comes back
   * stops the re-checks. Absent: never (SQLite has no other instance).
   */
  needsRecheck?: () => boolean;
  metrics: LongPollMetrics;
  /** The service clock, which the store's moments (nextAt) are on. */
  now: () => number;
}

/** What a transport tells of a waiting call. */
export interface WaitingCaller {
  /** Aborted when the caller leaves (closed connection, cancelled call). */
  cancelled: AbortSignal;
  /** The call's access check, made again before a claim that follows a wait. */
  reauthorize?: () => Promise<void>;
}

export interface WaitRequest {
  topic: string;
  group?: string;
  /** What one claim asks for: a claim that took that many may have left more for the lane's next waiter. */
  count: number;
  waitMs: number;
  /** The caller left (closed connection, cancelled call): the wait ends, its slot is free. */
  cancelled: AbortSignal;
  /** One dequeue; one whose caller left by its end gives back what it took (MessageService.dequeueFor). */
  claim(): Promise<Message[]>;
  /**
   * The earliest moment (service clock) up to `until` at which a claim may find what it could not find now
   * (a delay or backoff ending, a visibility timeout running out); undefined when none is known.
   */
  nextAt(until: number): Promise<number | undefined>;
  /** Checked again before each claim that follows a wait, so a grant revoked meanwhile ends the call with its refusal. */
  reauthorize?: () => Promise<void>;
  /**
   * Present where new messages of the topic may be handed to this call as they are stored (a topic's own
   * dequeue; not a group's): LongPoll.reserve.
   */
  handOff?: HandOff;
}

/** How a waiting call takes messages stored already claimed for it. */
export interface HandOff {
  /** The call's visibility timeout: the handed messages are stored processing until now + this. */
  visibilityMs: number;
  /**
   * The handed messages as the call answers them: checked as a claim would be (its access again, its caller
   * still there), and what it does not answer given back. Rejects with the refusal of a revoked grant.
   */
  take(messages: Message[]): Promise<Message[]>;
}

/** Without a relay, another instance's enqueue is found at most this much later. */
const RECHECK_MS = 1000;
/**
 * A moment the store says has passed (a visibility timeout that the claim's expiry probe had just looked
 * at, a due message that a concurrent claim held) is looked at again after this, doubling up to a second
 * while it keeps coming back, so a row that stays that way costs one claim per second, not a busy loop.
 */
const PAST_RETRY_MIN_MS = 100;
const PAST_RETRY_MAX_MS = 1000;
/** After a failed read of the next moment (the database away), the lane claims again this much later. */
const READ_FAILED_RETRY_MS = 1000;

const tooManyWaiting = (max: number) =>
  new DomainError('rate_limited', `${max} dequeues are waiting on this instance already, the most allowed (server.max_waiting_dequeues); retry later`, {
    retryAfterSeconds: 1,
  });

/**
 * Long polling of dequeues: a call that finds nothing waits, holding no database connection and issuing no
 * statement while idle, until its topic may have something for it. Waiters of one topic and consumer group
 * form a lane, and what wakes them:
 *
 * - a signal of the topic (src/queue/topic-signals.ts): an enqueue here or, through the Redis relay, on another
 *   instance; a message given back, nacked for a retry or released. One waiter claims (Lane.wakeForSignal),
 *   and a claim that took all it asked for wakes the next; the claim combiner (claim-combiner.ts) merges
 *   concurrent claims of one lane into a few transactions;
 * - the lane's timer, for what no signal announces: a delay or retry backoff that ends, a visibility timeout
 *   that runs out. After claims that found nothing, the lane reads (once, whoever asked) the earliest moment
 *   something of the topic becomes claimable, up to its longest wait, and sets the timer for it;
 * - on MySQL without a relay, a re-check every RECHECK_MS: one claim for the lane, not one per waiter.
 *
 * A claim that wakes without a signal is made by the lane's oldest waiter; one that took all it asked for
 * wakes the next, so a burst found that way is spread over the lane. Shutdown answers every wait at once.
 */
export class LongPoll {
  private readonly lanes = new Map<string, Lane>();
  private waiting = 0;
  private closed = false;

  constructor(private readonly options: LongPollOptions) {}

  /** Calls waiting now (the bound counts these). */
  get size(): number {
    return this.waiting;
  }

  /**
   * Claims at once; with nothing found, waits up to `waitMs` for the lane and claims again at each wake-up,
   * and answers the first claim that finds something, or nothing when the wait ends. Refused (rate_limited)
   * when the first claim found nothing and server.max_waiting_dequeues calls wait already.
   */
  async wait(req: WaitRequest): Promise<Message[]> {
    const deadline = Date.now() + req.waitMs;
    const lane = this.laneOf(req);
    // In the lane before the first claim, so a signal that comes while it runs is not lost.
    const waiter = new Waiter(deadline, req.count);
    lane.add(waiter);
    const onCancel = () => waiter.end('gone');
    req.cancelled.addEventListener('abort', onCancel, { once: true });
    let counted = false;
    let how: WaitEnd = 'timeout';
    let timer: NodeJS.Timeout | undefined;
    try {
      for (let first = true; ; first = false) {
        await waiter.next();
        const handed = await waiter.takeHandOver(req);
        if (handed.length > 0) {
          how = 'message';
          waiter.end('message');
          return handed;
        }
        if (!waiter.ended) {
          waiter.due = false;
          waiter.claiming = true;
          let messages: Message[];
          try {
            if (!first) await req.reauthorize?.();
            messages = await req.claim();
          } finally {
            waiter.claiming = false;
          }
          if (messages.length > 0) {
            how = 'message';
            // Ended first, so that the wake-up for the next waiter does not come back to this one.
            waiter.end('message');
            lane.found(messages.length >= req.count);
            return messages;
          }
        }
        if (req.cancelled.aborted) waiter.end('gone');
        else if (this.closed) waiter.end('shutdown');
        else if (Date.now() >= deadline) waiter.end('timeout');
        if (waiter.ended) {
          how = waiter.ended;
          return [];
        }
        if (first) {
          if (this.waiting >= this.options.maxWaiting) throw tooManyWaiting(this.options.maxWaiting);
          this.waiting++;
          counted = true;
          waiter.handOff = req.handOff;
          this.options.metrics.started(req.topic);
          timer = setTimeout(() => waiter.end('timeout'), deadline - Date.now());
        }
        lane.claimedNothing(req.nextAt);
      }
    } catch (err) {
      how = 'error';
      throw err;
    } finally {
      clearTimeout(timer);
      req.cancelled.removeEventListener('abort', onCancel);
      lane.remove(waiter);
      if (counted) {
        this.waiting--;
        this.options.metrics.ended(req.topic, how);
      }
    }
  }

  /**
   * Room for `max` new messages of `topic` about to be stored, on its oldest call that waits idle (its last
   * claim found nothing, no wake-up since) and takes hand-offs: they are stored already claimed for it and
   * handed over after their commit, as to a waiting subscriber: no claim, no wake-up, one commit from enqueue
   * to answer. Undefined when no such call waits.
   */
  reserve(topic: string, max: number, now: number): Reservation | undefined {
    if (this.closed) return undefined;
    return this.lanes.get(`${topic}\u0000`)?.reserve(max, now);
  }

  /** Graceful shutdown: every wait ends now with an empty answer, and later calls do not wait. */
  close(): void {
    this.closed = true;
    for (const lane of this.lanes.values()) lane.endAll('shutdown');
  }

  private laneOf(req: WaitRequest): Lane {
    const key = `${req.topic}\u0000${req.group ?? ''}`;
    let lane = this.lanes.get(key);
    if (!lane) {
      const created = new Lane(req.topic, this.options, RECHECK_MS, () => {
        if (this.lanes.get(key) === created) this.lanes.delete(key);
      });
      this.lanes.set(key, created);
      lane = created;
    }
    return lane;
  }
}

/** One waiting call: due to claim (a wake-up came), or ended. */
class Waiter {
  /** A claim is due: set by wake-ups, also while a claim runs, which then claims once more. */
  due = true;
  claiming = false;
  ended?: WaitEnd;
  /** Set once the call waits (after its first claim) where it takes hand-offs. */
  handOff?: HandOff;
  /** Messages being stored claimed for this call: resolves after their commit (none when the store failed). */
  private handOver?: Promise<Message[]>;
  private wake?: () => void;

  constructor(
    readonly deadline: number,
    private readonly count: number,
  ) {}

  /** Its next claim starts after now, once woken (or at once when due): no claim running, no hand-over to answer first. */
  get free(): boolean {
    return this.handOver === undefined && this.ended === undefined && !this.claiming;
  }

  /** Whether new messages may be stored for this call now: it waits idle, no claim running or due. */
  get idle(): boolean {
    return this.handOff !== undefined && this.handOver === undefined && this.ended === undefined && !this.due && !this.claiming;
  }

  /** Takes up to `max` messages about to be stored: the call waits for their commit instead of claiming. */
  reserve(max: number, now: number): Reservation {
    const count = Math.min(max, this.count);
    let fulfil!: (messages: Message[]) => void;
    this.handOver = new Promise((resolve) => (fulfil = resolve));
    this.signal();
    return { count, visibleUntil: now + this.handOff!.visibilityMs, fulfil: (messages) => fulfil(messages.slice(0, count)) };
  }

  /** What was stored for this call, as it answers it (none without a hand-off). */
  async takeHandOver(req: WaitRequest): Promise<Message[]> {
    if (!this.handOver) return [];
    const handed = await this.handOver;
    this.handOver = undefined;
    return handed.length > 0 ? req.handOff!.take(handed) : [];
  }

  signal(): void {
    this.due = true;
    this.wake?.();
  }

  end(how: WaitEnd): void {
    this.ended ??= how;
    this.wake?.();
  }

  /** Resolves when a claim is due or the wait has ended. */
  next(): Promise<void> {
    if (this.due || this.ended) return Promise.resolve();
    return new Promise((resolve) => {
      this.wake = () => {
        this.wake = undefined;
        resolve();
      };
    });
  }
}

/** The waiters of one topic and consumer group, with their wake-ups. */
class Lane {
  /** Oldest first (a Set keeps insertion order). */
  private readonly waiters = new Set<Waiter>();
  private readonly unsubscribe: () => void;
  /** Something may have changed since the last read of the next moment: a signal, the timer, the lane's start. */
  private stale = true;
  private reading = false;
  private readAgain = false;
  private nextAt?: (until: number) => Promise<number | undefined>;
  private timer?: NodeJS.Timeout;
  private readonly recheck?: NodeJS.Timeout;
  private pastRetryMs = PAST_RETRY_MIN_MS;

  constructor(
    topic: string,
    private readonly options: LongPollOptions,
    recheckMs: number,
    private readonly onClosed: () => void,
  ) {
    this.unsubscribe = options.signals.subscribe(topic, () => {
      this.stale = true;
      this.wakeForSignal();
    });
    const needsRecheck = options.needsRecheck;
    if (needsRecheck) {
      this.recheck = setInterval(() => {
        if (needsRecheck()) this.wakeOne();
      }, recheckMs);
      this.recheck.unref();
    }
  }

  add(waiter: Waiter): void {
    this.waiters.add(waiter);
  }

  remove(waiter: Waiter): void {
    this.waiters.delete(waiter);
    if (this.waiters.size > 0) return;
    clearTimeout(this.timer);
    clearInterval(this.recheck);
    this.unsubscribe();
    this.onClosed();
  }

  endAll(how: WaitEnd): void {
    for (const waiter of this.waiters) waiter.end(how);
  }

  reserve(max: number, now: number): Reservation | undefined {
    for (const waiter of this.waiters) if (waiter.idle) return waiter.reserve(max, now);
    return undefined;
  }

  /** A claim of the lane took messages; `full`: all it asked for, so more may be there for the next waiter. */
  found(full: boolean): void {
    this.pastRetryMs = PAST_RETRY_MIN_MS;
    if (full) this.wakeOne();
  }

  /**
   * A claim found nothing: the next moment is read when something may have changed since the last read (the
   * timer set from that read stands otherwise). Reads asked for while one runs make one more read after it.
   */
  claimedNothing(nextAt: (until: number) => Promise<number | undefined>): void {
    this.nextAt = nextAt;
    if (!this.stale) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    void this.read();
  }

  private async read(): Promise<void> {
    this.stale = false;
    this.reading = true;
    const realNow = Date.now();
    let last = realNow;
    for (const waiter of this.waiters) last = Math.max(last, waiter.deadline);
    const serviceNow = this.options.now();
    let at: number | undefined;
    let failed = false;
    try {
      at = await this.nextAt!(serviceNow + (last - realNow));
    } catch {
      // The claims report a database that is away to their callers; here only the timer is lost.
      failed = true;
    } finally {
      this.reading = false;
    }
    if (this.waiters.size === 0) return;
    if (this.readAgain) {
      this.readAgain = false;
      return this.read();
    }
    if (failed) {
      this.stale = true;
      this.arm(READ_FAILED_RETRY_MS);
    } else if (at === undefined) this.disarm();
    else this.arm(this.delayUntil(at));
  }

  private delayUntil(at: number): number {
    const ms = at - this.options.now();
    if (ms > 0) {
      this.pastRetryMs = PAST_RETRY_MIN_MS;
      return ms;
    }
    const retry = this.pastRetryMs;
    this.pastRetryMs = Math.min(PAST_RETRY_MAX_MS, retry * 2);
    return retry;
  }

  private arm(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.stale = true;
      this.wakeOne();
    }, Math.max(1, Math.ceil(ms)));
    this.timer.unref();
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * A signal needs one claim that starts after it: a claim takes up to its count, and one that took all it
   * asked for wakes the next waiter (found), so a burst spreads over the lane. Waking every waiter instead made
   * each enqueue that found no idle waiter cost a claim per waiter, most of them empty, and kept the waiters
   * busy claiming, so the next enqueues found none idle to hand their messages to either (a waiter with a
   * hand-over coming answers it without claiming, so it does not count). Only when every waiter is claiming
   * now (those claims may have begun before the signal) does each claim once more.
   */
  private wakeForSignal(): void {
    for (const waiter of this.waiters) {
      if (!waiter.free) continue;
      waiter.signal();
      return;
    }
    for (const waiter of this.waiters) waiter.signal();
  }

  /** One claim for the lane: its oldest waiter's, unless one is due already. */
  private wakeOne(): void {
    let oldest: Waiter | undefined;
    for (const waiter of this.waiters) {
      if (waiter.ended) continue;
      if (waiter.due) return;
      oldest ??= waiter;
    }
    oldest?.signal();
  }
}
