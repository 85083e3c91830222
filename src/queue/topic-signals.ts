import { EventEmitter } from 'node:events';

/**
 * Per-topic wake-ups: an enqueue (or a message returning to pending) signals its topic, and waiters such as
 * gRPC Subscribe streams wake without polling the database.
 */
export class TopicSignals {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  signal(topic: string): void {
    this.emitter.emit(topic);
  }

  subscribe(topic: string, listener: () => void): () => void {
    this.emitter.on(topic, listener);
    return () => this.emitter.off(topic, listener);
  }
}
