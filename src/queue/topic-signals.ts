import { EventEmitter } from 'node:events';

/** Carries wake-ups to other instances (Redis pub/sub); see src/pubsub/redis-peer-relay.ts. */
export interface SignalRelay {
  publish(topic: string): void;
}

/**
 * Per-topic wake-ups: an enqueue (or a message returning to pending) signals its topic, and waiters such as
 * gRPC Subscribe streams wake without polling the database. With a relay, other instances wake too.
 */
export class TopicSignals {
  private readonly emitter = new EventEmitter();
  private relay?: SignalRelay;

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  attachRelay(relay: SignalRelay | undefined): void {
    this.relay = relay;
  }

  signal(topic: string): void {
    this.emitter.emit(topic);
    this.relay?.publish(topic);
  }

  /** A wake-up published by another instance: delivered here only, never published again. */
  signalFromPeer(topic: string): void {
    this.emitter.emit(topic);
  }

  subscribe(topic: string, listener: () => void): () => void {
    this.emitter.on(topic, listener);
    return () => this.emitter.off(topic, listener);
  }
}
