/** How often an instance announces the topics it waits on, and reads how many instances listen on the channel. */
export const INTEREST_HEARTBEAT_MS = 5000;
/**
 * How long an instance must have been receiving before it trusts what it knows of the others: past one
 * heartbeat of each (with room for a loaded peer's timer to run late), every live peer has announced itself.
 */
const TRUST_AFTER_MS = INTEREST_HEARTBEAT_MS + 2000;
/** A peer not heard from for this long is gone (three heartbeats missed). */
export const PEER_EXPIRY_MS = 3 * INTEREST_HEARTBEAT_MS + 1000;
/**
 * A topic stays announced this long after its last waiter here left: long polls come and go with every
 * dequeue, and a topic whose consumers poll keeps one announcement instead of one per call.
 */
const LINGER_MS = 30_000;

interface Peer {
  /** The topics it waits on; undefined for a peer that does not announce them (an older version). */
  topics?: Set<string>;
  seenAt: number;
}

/**
 * Which topics' wake-ups another instance may need: every instance announces the topics it waits on (long
 * polls, Subscribe streams), and a wake-up of a topic no other instance waits on is not published. What
 * makes that safe, each case falling back to publishing every wake-up:
 * - an instance trusts what it knows only after receiving for longer than a heartbeat (it has heard every
 *   live peer since), and while the channel has no listener it has not heard announce (Redis's count of the
 *   channel's subscribers: a peer of an older version, one just started, a tool listening);
 * - a new waiter's topic is announced at once, and the waiters re-check when their own announcement comes
 *   back over the channel: a wake-up decided by a peer before it heard of them is found by that claim;
 * - a peer that stops announcing (killed, cut off) is forgotten after three heartbeats; until then its
 *   topics' wake-ups are still published, which costs only the publish.
 */
export class PeerInterest {
  /** The topics announced for this instance, with the last moment a waiter here listened to each. */
  private readonly own = new Map<string, number>();
  /** Topics announced for the first time, whose waiters re-check when the announcement comes back. */
  private readonly awaitingEcho = new Set<string>();
  private readonly peers = new Map<string, Peer>();
  private receivingSince?: number;
  /** The channel's subscribers as Redis last counted them (this instance's own included). */
  private subscribers?: number;

  constructor(private readonly now: () => number = Date.now) {}

  /** A waiter here listens to `topic`: whether it is new to the announcement (which then goes out at once). */
  listening(topic: string): boolean {
    const fresh = !this.own.has(topic);
    this.own.set(topic, this.now());
    if (fresh) this.awaitingEcho.add(topic);
    return fresh;
  }

  /** What this instance announces now: topics waited on (`listened`) or within LINGER_MS. */
  announcement(listened: Iterable<string>): string[] {
    const now = this.now();
    for (const topic of listened) this.own.set(topic, now);
    for (const [topic, at] of this.own) {
      if (now - at <= LINGER_MS) continue;
      this.own.delete(topic);
      this.awaitingEcho.delete(topic);
    }
    return [...this.own.keys()];
  }

  /** A message of another instance: what it waits on (`interest`), if it said (an older version does not). */
  heardFrom(origin: string, interest: string[] | undefined): void {
    const known = this.peers.get(origin);
    if (interest) this.peers.set(origin, { topics: new Set(interest), seenAt: this.now() });
    else if (known) known.seenAt = this.now();
    else this.peers.set(origin, { seenAt: this.now() });
  }

  /** This instance's own announcement came back: the topics whose waiters re-check now. */
  heardOwn(interest: string[]): string[] {
    return interest.filter((topic) => this.awaitingEcho.delete(topic));
  }

  /** Receiving the channel since `moment`, or not receiving (undefined). Waiters re-announce after a gap. */
  receiving(moment: number | undefined): void {
    this.receivingSince = moment;
    if (moment === undefined) for (const topic of this.own.keys()) this.awaitingEcho.add(topic);
  }

  /** Redis's count of the channel's subscribers (undefined when it could not be read). */
  counted(subscribers: number | undefined): void {
    this.subscribers = subscribers;
    this.forgetSilent(this.now());
  }

  /** Whether a wake-up of `topic` may matter to another instance. */
  wanted(topic: string): boolean {
    if (!this.trusted()) return true;
    for (const peer of this.peers.values()) if (peer.topics!.has(topic)) return true;
    return false;
  }

  private trusted(): boolean {
    const now = this.now();
    if (this.receivingSince === undefined || now - this.receivingSince < TRUST_AFTER_MS || this.subscribers === undefined) return false;
    this.forgetSilent(now);
    for (const peer of this.peers.values()) if (!peer.topics) return false;
    return this.subscribers <= this.peers.size + 1;
  }

  private forgetSilent(now: number): void {
    for (const [origin, peer] of this.peers) if (now - peer.seenAt > PEER_EXPIRY_MS) this.peers.delete(origin);
  }
}
