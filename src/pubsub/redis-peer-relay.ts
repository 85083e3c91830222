import { randomUUID } from 'node:crypto';
import type { RedisClientType } from 'redis';
import type { Logger } from '../log/logger.js';
import { RepeatedFailure } from '../log/repeated.js';
import { INTEREST_HEARTBEAT_MS, PEER_EXPIRY_MS, PeerInterest } from './peer-interest.js';
import { closeRedisClient, loadRedis, REDIS_ANSWER_MS, withinMs } from './redis-clients.js';
import type { SignalRelay, TopicSignals } from '../queue/topic-signals.js';

const CONNECT_TIMEOUT_MS = 3000;
/** How often a refused SUBSCRIBE is tried again. */
const RESUBSCRIBE_MS = 5000;
/** Publishes waiting for Redis's answer beyond which new ones are dropped (about 2 KB each while they wait). */
const MAX_UNANSWERED_PUBLISHES = 1000;
/**
 * The others keep this instance's announced topics for PEER_EXPIRY_MS after its last announcement: when none
 * has gone out for longer than this, its waiters stop counting on their wake-ups and re-check themselves.
 */
const ANNOUNCED_WITHIN_MS = PEER_EXPIRY_MS - INTEREST_HEARTBEAT_MS;

type Client = RedisClientType;

/** In-memory copies an instance keeps of what another instance may change: re-read them when told. */
export type PeerCache = 'catalog' | 'principals';
const PEER_CACHES: readonly PeerCache[] = ['catalog', 'principals'];

interface PeerMessage {
  origin: string;
  /** Topics that have new pending messages. */
  topics: string[];
  /** Subscribe deliveries settled here whose stream may live on another instance (see src/grpc/subscribe.ts). */
  settled: string[];
  /** Caches this instance changed the source of: topic configurations, schemas and groups; users and grants. */
  changed: PeerCache[];
  /** Every topic the sender waits on (src/pubsub/peer-interest.ts), in its announcements; absent otherwise. */
  interest?: string[];
}

/**
 * What instances tell each other over one Redis pub/sub channel: topic wake-ups, settled Subscribe
 * deliveries so a stream on one instance frees its slot when the Ack arrives at another, changes of cached
 * data (a topic configuration, a grant), which the others then re-read at once instead of at their next poll
 * or cache expiry, and the topics each one waits on, so that a wake-up no other instance waits for is not
 * published (PeerInterest). Messages are coalesced to one per event-loop turn, and an instance ignores its
 * own but for its announcements' echo. Redis being down only slows other instances down to their fallback
 * poll and visibility timeouts; it never fails a call.
 */
export class RedisPeerRelay implements SignalRelay {
  private readonly origin = randomUUID();
  private readonly pendingTopics = new Set<string>();
  private readonly pendingSettled = new Set<string>();
  private readonly pendingChanged = new Set<PeerCache>();
  private pendingAnnouncement = false;
  private readonly interest = new PeerInterest();
  /** When an announcement of this instance's topics was last answered by Redis. */
  private announcedAt?: number;
  private heartbeat?: NodeJS.Timeout;
  private readonly settledListeners: Array<(keys: string[]) => void> = [];
  private readonly changeListeners: Array<(caches: PeerCache[]) => void> = [];
  private flushScheduled = false;
  /** Publishes sent and not yet answered. */
  private unanswered = 0;
  private readonly publishing: RepeatedFailure;
  private readonly subscribing: RepeatedFailure;
  private closing = false;
  private subscribed = false;

  private constructor(
    private readonly publisher: Client,
    private readonly subscriber: Client,
    private readonly logger: Logger,
    private readonly channel: string,
    private readonly signals: TopicSignals,
  ) {
    const consequence = 'other instances see wake-ups, settled deliveries and cache changes of this one only through their polls';
    this.publishing = new RepeatedFailure(logger, { what: 'redis publish (peer relay)', level: 'warn', consequence });
    this.subscribing = new RepeatedFailure(logger, { what: 'redis subscribe (peer relay)', level: 'warn', consequence: 'this instance sees what others change only through its polls' });
  }

  /** `keyPrefix` (redis.key_prefix) names the channel, so deployments sharing one Redis never wake each other. */
  static async start(url: string, keyPrefix: string, signals: TopicSignals, logger: Logger): Promise<RedisPeerRelay> {
    // The publisher arms no timer per command (timeout 0). The client's default, 5 s, sets an AbortSignal.timeout
    // on every command: a publish cost 29-57 µs of CPU with it and 7-27 without (Node 20, measured), and there is
    // a publish per event-loop turn that signals. It stops counting once a command is sent, so it never covered
    // a hung Redis: the cap on unanswered publishes does (MAX_UNANSWERED_PUBLISHES).
    const { createClient } = await loadRedis();
    const publisher: Client = createClient({ url, commandOptions: { timeout: 0 } });
    // The subscriber keeps the default: its few commands (SUBSCRIBE) are retried when they fail.
    const subscriber: Client = publisher.duplicate({ commandOptions: {} });
    const relay = new RedisPeerRelay(publisher, subscriber, logger, `${keyPrefix}peers`, signals);
    // The clients retry every few hundred milliseconds while Redis is away: one line, a count every 30 s, "recovered".
    const failures = new RepeatedFailure(logger, { what: 'redis connection (peer relay)', consequence: 'cross-instance wake-ups fall back to polling' });
    for (const client of [publisher, subscriber]) {
      client.on('error', (err: Error) => failures.fail(err));
      client.on('ready', () => {
        if (publisher.isReady && subscriber.isReady) failures.ok();
      });
    }
    // Whatever was published while the subscriber was away is lost: what it knew of the others is trusted again
    // only after a heartbeat of receiving, and this instance's topics are announced again.
    subscriber.on('error', () => relay.interest.receiving(undefined));
    subscriber.on('end', () => relay.interest.receiving(undefined));
    subscriber.on('ready', () => relay.resumeReceiving());
    const connected = Promise.all([publisher.connect(), subscriber.connect().then(() => relay.subscribe(signals))]);
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, CONNECT_TIMEOUT_MS).unref());
    // Start without Redis rather than refuse to serve; the clients keep reconnecting in the background.
    await Promise.race([connected.catch(() => undefined), timeout]);
    signals.attachRelay(relay);
    relay.heartbeat = setInterval(() => relay.beat(), INTEREST_HEARTBEAT_MS);
    relay.heartbeat.unref();
    return relay;
  }

  /**
   * Subscribes to the channel, and again every RESUBSCRIBE_MS while Redis refuses (an ACL without the channel:
   * Redis 7 gives new users none), logged as a failure until it works. Reconnections resubscribe by themselves.
   */
  private async subscribe(signals: TopicSignals): Promise<void> {
    try {
      await this.subscriber.subscribe(this.channel, (message) => this.receive(message, signals));
      this.subscribed = true;
      this.subscribing.ok();
      this.resumeReceiving();
    } catch (err) {
      this.subscribing.fail(err);
      if (this.closing) return;
      const retry = setTimeout(() => void this.subscribe(signals), RESUBSCRIBE_MS);
      retry.unref();
    }
  }

  /**
   * Whether other instances' wake-ups reach this one now: subscribed, over a connection that is up, and its
   * topics announced lately enough that the others still publish their wake-ups.
   */
  receiving(): boolean {
    return this.subscribed && this.subscriber.isReady && this.announcedAt !== undefined && Date.now() - this.announcedAt < ANNOUNCED_WITHIN_MS;
  }

  publish(topic: string): void {
    if (!this.interest.wanted(topic)) return;
    this.pendingTopics.add(topic);
    this.scheduleFlush();
  }

  listening(topic: string): void {
    if (this.interest.listening(topic)) this.announce();
  }

  publishSettled(keys: string[]): void {
    for (const key of keys) this.pendingSettled.add(key);
    this.scheduleFlush();
  }

  onSettled(listener: (keys: string[]) => void): void {
    this.settledListeners.push(listener);
  }

  /** What a cache of the other instances holds changed here (after the commit). */
  publishChanged(cache: PeerCache): void {
    this.pendingChanged.add(cache);
    this.scheduleFlush();
  }

  onChanged(listener: (caches: PeerCache[]) => void): void {
    this.changeListeners.push(listener);
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.heartbeat);
    await Promise.allSettled([this.subscriber, this.publisher].map(closeRedisClient));
  }

  /** Subscribed over a connection that is up (again): receiving from now on, and this instance's topics announced. */
  private resumeReceiving(): void {
    if (!this.subscribed || !this.subscriber.isReady) return;
    this.interest.receiving(Date.now());
    this.announce();
  }

  /** Every heartbeat: this instance's topics announced again, and Redis's count of the channel's listeners read. */
  private beat(): void {
    this.announce();
    if (!this.publisher.isReady) return this.interest.counted(undefined);
    void withinMs(this.publisher.pubSubNumSub(this.channel), REDIS_ANSWER_MS).then(
      (counts) => this.interest.counted(counts === undefined ? undefined : Number(counts[this.channel] ?? 0)),
      () => this.interest.counted(undefined),
    );
  }

  private announce(): void {
    this.pendingAnnouncement = true;
    this.scheduleFlush();
  }

  private receive(message: string, signals: TopicSignals): void {
    const peer = parsePeerMessage(message);
    if (!peer) return;
    if (peer.origin === this.origin) return this.echoed(peer, signals);
    this.interest.heardFrom(peer.origin, peer.interest);
    for (const topic of peer.topics) signals.signalFromPeer(topic);
    if (peer.settled.length > 0) for (const listener of this.settledListeners) listener(peer.settled);
    if (peer.changed.length > 0) for (const listener of this.changeListeners) listener(peer.changed);
  }

  /**
   * This instance's own message came back: Redis has written it to every instance's connection. The waiters
   * of topics it announced for the first time claim again: a peer that committed an enqueue of one before
   * that claim began, and had not read the announcement by then, may have left its wake-up unpublished. A
   * commit after the claim's read is answered to the peer after the announcement reached it, and the peer
   * reads its connections in the order they became ready.
   */
  private echoed(own: PeerMessage, signals: TopicSignals): void {
    if (!own.interest) return;
    for (const topic of this.interest.heardOwn(own.interest)) signals.signalFromPeer(topic);
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    const message: PeerMessage = { origin: this.origin, topics: [...this.pendingTopics], settled: [...this.pendingSettled], changed: [...this.pendingChanged] };
    const announcing = this.pendingAnnouncement;
    if (announcing) message.interest = this.interest.announcement(this.signals.topics());
    this.pendingTopics.clear();
    this.pendingSettled.clear();
    this.pendingChanged.clear();
    this.pendingAnnouncement = false;
    if (!this.publisher.isReady) return;
    // A hung Redis (connected, answering nothing) would keep every publish queued in the client: they are
    // hints the polls stand in for, so past the cap they are dropped instead of piling up in memory.
    if (this.unanswered >= MAX_UNANSWERED_PUBLISHES) return this.publishing.fail(new Error(`${MAX_UNANSWERED_PUBLISHES} publishes unanswered`));
    this.unanswered++;
    this.publisher
      .publish(this.channel, JSON.stringify(message))
      .then(
        () => {
          if (announcing) this.announcedAt = Date.now();
          this.publishing.ok();
        },
        (err: Error) => this.publishing.fail(err),
      )
      .finally(() => this.unanswered--);
  }
}

/** Anything else on the channel (another version, a stray PUBLISH) is ignored rather than trusted. */
function parsePeerMessage(message: string): PeerMessage | undefined {
  try {
    const value = JSON.parse(message) as Partial<Record<keyof PeerMessage, unknown>>;
    if (typeof value.origin !== 'string') return undefined;
    const strings = (list: unknown) => (Array.isArray(list) ? list.filter((s): s is string => typeof s === 'string') : []);
    const changed = strings(value.changed).filter((name): name is PeerCache => (PEER_CACHES as readonly string[]).includes(name));
    const peer: PeerMessage = { origin: value.origin, topics: strings(value.topics), settled: strings(value.settled), changed };
    if (Array.isArray(value.interest)) peer.interest = strings(value.interest);
    return peer;
  } catch {
    return undefined;
  }
}
