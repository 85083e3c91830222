import { randomUUID } from 'node:crypto';
import type { RedisClientType } from 'redis';
import type { Logger } from '../log/logger.js';
import { RepeatedFailure } from '../log/repeated.js';
import { closeRedisClient, loadRedis, REDIS_ANSWER_MS, withinMs } from '../pubsub/redis-clients.js';

/** 10 login attempts per client IP per 60 s, every attempt counting whatever its outcome. */
export const LOGIN_ATTEMPTS = 10;
export const LOGIN_WINDOW_MS = 60_000;

export interface RateDecision {
  allowed: boolean;
  /** Seconds until this client may try again (for Retry-After): when its oldest counted attempt is a minute old. */
  retryAfterSeconds: number;
}

export interface LoginRateLimiter {
  /** Counts one attempt of `client` and says whether it is within the limit. */
  hit(client: string): Promise<RateDecision>;
}

const decide = (allowed: boolean, retryInMs: number): RateDecision => ({ allowed, retryAfterSeconds: Math.max(1, Math.ceil(retryInMs / 1000)) });

/**
 * A sliding window per client, one instance only: the times of its attempts of the last minute that were let
 * through, at most 10. An attempt is let through while fewer than 10 are, so no 60 s span ever holds more
 * than 10 checked attempts (fixed windows let 10 at the end of one and 10 at the start of the next through
 * within seconds). Refused attempts are not recorded: they were never checked, and a client that keeps
 * trying is let in again a minute after its oldest attempt, not never. Clients whose last attempt is over a
 * minute old are swept as they are met, so memory stays bounded by the clients of the last minute.
 */
export class MemoryRateLimiter implements LoginRateLimiter {
  private readonly attempts = new Map<string, number[]>();
  private sweptAt = 0;

  constructor(private readonly now: () => number) {}

  async hit(client: string): Promise<RateDecision> {
    const now = this.now();
    // At most once a second: with more than 10,000 clients in the last minute, a sweep on every attempt would
    // make each login walk them all.
    if (this.attempts.size > 10_000 && now - this.sweptAt >= 1000) {
      this.sweptAt = now;
      this.sweep(now);
    }
    const times = this.attempts.get(client) ?? [];
    while (times.length > 0 && times[0]! <= now - LOGIN_WINDOW_MS) times.shift();
    const allowed = times.length < LOGIN_ATTEMPTS;
    if (allowed) times.push(now);
    this.attempts.set(client, times);
    return decide(allowed, times[0]! + LOGIN_WINDOW_MS - now);
  }

  private sweep(now: number): void {
    for (const [client, times] of this.attempts) if (times.at(-1)! <= now - LOGIN_WINDOW_MS) this.attempts.delete(client);
  }
}

/**
 * The same sliding window in a sorted set per client (score: the attempt's time), decided by one script so
 * instances never both let the tenth attempt through; the set expires a minute after its last attempt. The
 * time is the instance's. When Redis cannot be reached the attempt is counted in memory instead: logins keep
 * working, limited per instance.
 */
const SLIDING_WINDOW_SCRIPT = `
local key, now, window, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local allowed = 0
if redis.call('ZCARD', key) < limit then
  redis.call('ZADD', key, now, ARGV[4])
  redis.call('PEXPIRE', key, window)
  allowed = 1
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return {allowed, tonumber(oldest[2]) + window - now}
`;

/** How long logins are counted in memory without asking Redis after it left a command unanswered. */
const UNANSWERED_QUIET_MS = 5000;

export class RedisRateLimiter implements LoginRateLimiter {
  private readonly fallback: MemoryRateLimiter;
  private quietUntil = 0;

  constructor(
    private readonly client: RedisClientType,
    private readonly keyPrefix: string,
    private readonly failures: RepeatedFailure,
    private readonly now: () => number,
    /** What is counted: `login-attempts`, or `access-key-failures` (failed access-key authentications). */
    private readonly bucket = 'login-attempts',
  ) {
    this.fallback = new MemoryRateLimiter(now);
  }

  async hit(clientAddress: string): Promise<RateDecision> {
    // A new key: the fixed-window counter under the old name was a string, which the script cannot read.
    const key = `${this.keyPrefix}${this.bucket}:${clientAddress}`;
    const now = this.now();
    // After an unanswered command Redis is left alone for a while: each command sent to a hung connection
    // waits in the client's queue until the connection ends.
    if (Date.now() < this.quietUntil) return this.fallback.hit(clientAddress);
    try {
      const answer = (await withinMs(
        this.client.eval(SLIDING_WINDOW_SCRIPT, {
          keys: [key],
          arguments: [String(now), String(LOGIN_WINDOW_MS), String(LOGIN_ATTEMPTS), `${now}:${randomUUID()}`],
        }),
        REDIS_ANSWER_MS,
      )) as [number, number] | undefined;
      if (answer === undefined) {
        this.quietUntil = Date.now() + UNANSWERED_QUIET_MS;
        throw new Error(`redis did not answer within ${REDIS_ANSWER_MS} ms`);
      }
      this.failures.ok();
      return decide(answer[0] === 1, answer[1]);
    } catch (err) {
      // Every login while Redis is away lands here: counted by the same tracker as the client's own errors.
      this.failures.fail(err);
      return this.fallback.hit(clientAddress);
    }
  }
}

const CONNECT_TIMEOUT_MS = 3000;

/** One Redis client per server for the limiter; start-up waits a little for it but never fails on it. */
export async function connectRedisRateLimiter(
  url: string,
  keyPrefix: string,
  logger: Logger,
  now: () => number,
): Promise<{ limiter: RedisRateLimiter; limiterOf(bucket: string): RedisRateLimiter; close(): Promise<void> }> {
  const { createClient } = await loadRedis();
  // Without the offline queue a login fails over to the in-memory count at once instead of waiting for a reconnect.
  const client = createClient({ url, disableOfflineQueue: true }) as RedisClientType;
  const failures = new RepeatedFailure(logger, { what: 'redis connection (login rate limit)', consequence: 'the login rate limit counts per instance until it is back' });
  client.on('error', (err: Error) => failures.fail(err));
  client.on('ready', () => failures.ok());
  const timeout = new Promise<void>((resolve) => setTimeout(resolve, CONNECT_TIMEOUT_MS).unref());
  await Promise.race([client.connect().catch(() => undefined), timeout]);
  return {
    limiter: new RedisRateLimiter(client, keyPrefix, failures, now),
    limiterOf: (bucket) => new RedisRateLimiter(client, keyPrefix, failures, now, bucket),
    close: () => closeRedisClient(client),
  };
}
