/** Carries wake-ups to other instances (Redis pub/sub); see src/pubsub/redis-peer-relay.ts. */
export interface SignalRelay {
  publish(topic: string): void;
  /** A waiter here began to listen to `topic` (its first): other instances then publish its wake-ups. */
  listening(topic: string): void;
}

/**
 * Per-topic wake-ups: an enqueue (or a message returning to pending) signals its topic, and waiters such as
 * gRPC Subscribe streams wake without polling the database. With a relay, other instances wake too.
 */
export class TopicSignals {
  /**
   * Listeners by topic in a plain map, not an EventEmitter: a topic is a user's name, and names such as
   * `error` (which an EventEmitter throws for when nobody listens) or `newListener` mean something to one.
   */
  private readonly listeners = new Map<string, Set<() => void>>();
  private relay?: SignalRelay;

  attachRelay(relay: SignalRelay | undefined): void {
    this.relay = relay;
  }

  signal(topic: string): void {
    this.wake(topic);
    this.relay?.publish(topic);
  }

  /** A wake-up published by another instance: delivered here only, never published again. */
  signalFromPeer(topic: string): void {
    this.wake(topic);
  }

  subscribe(topic: string, listener: () => void): () => void {
    let set = this.listeners.get(topic);
    if (!set) {
      this.listeners.set(topic, (set = new Set()));
      this.relay?.listening(topic);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(topic) === set) this.listeners.delete(topic);
    };
  }

  /** The topics something here listens to now. */
  topics(): Iterable<string> {
    return this.listeners.keys();
  }

  private wake(topic: string): void {
    const set = this.listeners.get(topic);
    if (set) for (const listener of [...set]) listener();
  }
}
