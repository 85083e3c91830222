import { randomUUID } from 'node:crypto';
import { createClient, type RedisClientType } from 'redis';
import type { Logger } from '../log/logger.js';
import type { SignalRelay, TopicSignals } from '../queue/topic-signals.js';

const CHANNEL = 'conveyor:topic-signals';
const CONNECT_TIMEOUT_MS = 3000;

type Client = RedisClientType;

/**
 * Topic wake-ups between instances over one Redis pub/sub channel. Publishes are coalesced to one per topic
 * per event-loop turn, so a burst of enqueues costs one message, and an instance ignores its own messages.
 * Redis being down only slows other instances' wake-ups to their fallback poll; it never fails an enqueue.
 */
export class RedisTopicRelay implements SignalRelay {
  private readonly origin = randomUUID();
  private readonly pending = new Set<string>();
  private flushScheduled = false;

  private constructor(
    private readonly publisher: Client,
    private readonly subscriber: Client,
    private readonly logger: Logger,
  ) {}

  static async start(url: string, signals: TopicSignals, logger: Logger): Promise<RedisTopicRelay> {
    const publisher: Client = createClient({ url });
    const subscriber: Client = publisher.duplicate();
    const relay = new RedisTopicRelay(publisher, subscriber, logger);
    let reported = false;
    for (const client of [publisher, subscriber]) {
      client.on('error', (err: Error) => {
        if (!reported) logger.warn({ err: err.message }, 'redis unavailable; cross-instance wake-ups fall back to polling');
        reported = true;
      });
      client.on('ready', () => (reported = false));
    }
    const connected = Promise.all([
      publisher.connect(),
      subscriber.connect().then(() =>
        subscriber.subscribe(CHANNEL, (message) => {
          const wakeUp = parseWakeUp(message);
          if (!wakeUp || wakeUp.origin === relay.origin) return;
          for (const topic of wakeUp.topics) signals.signalFromPeer(topic);
        }),
      ),
    ]);
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, CONNECT_TIMEOUT_MS).unref());
    // Start without Redis rather than refuse to serve; the clients keep reconnecting in the background.
    await Promise.race([connected.catch(() => undefined), timeout]);
    signals.attachRelay(relay);
    return relay;
  }

  publish(topic: string): void {
    this.pending.add(topic);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.subscriber, this.publisher].map(closeClient));
  }

  private flush(): void {
    this.flushScheduled = false;
    const topics = [...this.pending];
    this.pending.clear();
    if (!this.publisher.isReady) return;
    this.publisher.publish(CHANNEL, JSON.stringify({ origin: this.origin, topics })).catch((err: Error) => {
      this.logger.debug({ err: err.message }, 'redis publish failed');
    });
  }
}

/** A client that never connected is still retrying: stop it instead of waiting for a graceful QUIT. */
async function closeClient(client: Client): Promise<void> {
  if (client.isReady) return client.close();
  if (client.isOpen) client.destroy();
}

/** Anything else on the channel (another version, a stray PUBLISH) is ignored rather than trusted. */
function parseWakeUp(message: string): { origin: string; topics: string[] } | undefined {
  try {
    const value = JSON.parse(message) as { origin?: unknown; topics?: unknown };
    if (typeof value.origin !== 'string' || !Array.isArray(value.topics)) return undefined;
    return { origin: value.origin, topics: value.topics.filter((t): t is string => typeof t === 'string') };
  } catch {
    return undefined;
  }
}
