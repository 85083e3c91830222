import { createClient, type RedisClientType } from 'redis';
import type { Logger } from '../log/logger.js';
import { RepeatedFailure } from '../log/repeated.js';

/** Contract §8: 10 login attempts per client IP per 60 s, every attempt counting whatever its outcome. */
export const LOGIN_ATTEMPTS = 10;
export const LOGIN_WINDOW_MS = 60_000;

export interface RateDecision {
  allowed: boolean;
  /** Seconds until the window of this client ends (for Retry-After). */
  retryAfterSeconds: number;
}

export interface LoginRateLimiter {
  /** Counts one attempt of `client` and says whether it is within the limit. */
  hit(client: string): Promise<RateDecision>;
}

const decide = (count: number, remainingMs: number): RateDecision => ({
  allowed: count <= LOGIN_ATTEMPTS,
  retryAfterSeconds: Math.max(1, Math.ceil(remainingMs / 1000)),
});

/** Fixed windows per client, one instance only. Expired windows are swept as they are met, so memory stays bounded by the clients of the last minute. */
export class MemoryRateLimiter implements LoginRateLimiter {
  private readonly windows = new Map<string, { count: number; endsAt: number }>();
  private sweptAt = 0;

  constructor(private readonly now: () => number) {}

  async hit(client: string): Promise<RateDecision> {
    const now = this.now();
    // At most once a second: with more than 10,000 clients in the last minute, a sweep on every attempt would
    // make each login walk them all.
    if (this.windows.size > 10_000 && now - this.sweptAt >= 1000) {
      this.sweptAt = now;
      this.sweep(now);
    }
    let window = this.windows.get(client);
    if (!window || window.endsAt <= now) {
      window = { count: 0, endsAt: now + LOGIN_WINDOW_MS };
      this.windows.set(client, window);
    }
    window.count += 1;
    return decide(window.count, window.endsAt - now);
  }

  private sweep(now: number): void {
    for (const [client, window] of this.windows) if (window.endsAt <= now) this.windows.delete(client);
  }
}

/**
 * Fixed windows shared by every instance through Redis: SET NX PX opens the window with its expiry, INCR counts,
 * PTTL says how long it still runs; one MULTI, so a window never lives without an expiry. When Redis cannot be
 * reached the attempt is counted in memory instead: logins keep working, limited per instance.
 */
export class RedisRateLimiter implements LoginRateLimiter {
  private readonly fallback: MemoryRateLimiter;

  constructor(
    private readonly client: RedisClientType,
    private readonly keyPrefix: string,
    private readonly failures: RepeatedFailure,
    now: () => number,
  ) {
    this.fallback = new MemoryRateLimiter(now);
  }

  async hit(clientAddress: string): Promise<RateDecision> {
    const key = `${this.keyPrefix}login:${clientAddress}`;
    try {
      const [, count, ttl] = await this.client.multi().set(key, '0', { condition: 'NX', expiration: { type: 'PX', value: LOGIN_WINDOW_MS } }).incr(key).pTTL(key).exec();
      this.failures.ok();
      return decide(Number(count), Number(ttl) > 0 ? Number(ttl) : LOGIN_WINDOW_MS);
    } catch (err) {
      // Every login while Redis is away lands here: counted by the same tracker as the client's own errors.
      this.failures.fail(err);
      return this.fallback.hit(clientAddress);
    }
  }
}

const CONNECT_TIMEOUT_MS = 3000;

/** One Redis client per server for the limiter; start-up waits a little for it but never fails on it. */
export async function connectRedisRateLimiter(url: string, keyPrefix: string, logger: Logger, now: () => number): Promise<{ limiter: RedisRateLimiter; close(): Promise<void> }> {
  // Without the offline queue a login fails over to the in-memory count at once instead of waiting for a reconnect.
  const client = createClient({ url, disableOfflineQueue: true }) as RedisClientType;
  const failures = new RepeatedFailure(logger, { what: 'redis connection (login rate limit)', consequence: 'the login rate limit counts per instance until it is back' });
  client.on('error', (err: Error) => failures.fail(err));
  client.on('ready', () => failures.ok());
  const timeout = new Promise<void>((resolve) => setTimeout(resolve, CONNECT_TIMEOUT_MS).unref());
  await Promise.race([client.connect().catch(() => undefined), timeout]);
  return {
    limiter: new RedisRateLimiter(client, keyPrefix, failures, now),
    close: async () => {
      if (client.isReady) return client.close();
      if (client.isOpen) client.destroy();
    },
  };
}
