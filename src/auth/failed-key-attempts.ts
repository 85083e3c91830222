import { DomainError } from '../queue/errors.js';
import type { LoginRateLimiter } from './rate-limit.js';

/** Clients kept blocked at most; beyond it those whose block has ended are swept. */
const BLOCKED_MAX = 10_000;

export const TOO_MANY_KEY_FAILURES = 'too many failed access key attempts';

/**
 * The access-key counterpart of the login rate limit (docs/auth.md, Access keys): failed authentications with
 * an access key count against the client's address in the same sliding window as logins (10 a minute,
 * shared through Redis when redis.url is set, under `access-key-failures:<ip>`). Successful ones do not count,
 * so a program using its key at any rate is never limited. The failure beyond the limit answers 429, and so
 * does every access-key request of that client until its window frees a slot, whether its key is right or
 * not: a guesser learns nothing from a key that would have worked. That block is kept here, in memory, so
 * a blocked client costs neither Redis nor the database, and an unblocked one is checked by a map lookup.
 */
export class FailedKeyAttempts {
  private readonly blockedUntil = new Map<string, number>();

  constructor(
    private readonly limiter: LoginRateLimiter,
    private readonly now: () => number,
  ) {}

  /** Throws DomainError('rate_limited') while `client` is blocked. */
  assertAllowed(client: string): void {
    const until = this.blockedUntil.get(client);
    if (until === undefined) return;
    const now = this.now();
    if (now >= until) {
      this.blockedUntil.delete(client);
      return;
    }
    throw limited(until - now);
  }

  /** Counts one failure of `client`; throws DomainError('rate_limited') when it is one too many. */
  async fail(client: string): Promise<void> {
    const decision = await this.limiter.hit(client);
    if (decision.allowed) return;
    const now = this.now();
    if (this.blockedUntil.size >= BLOCKED_MAX) for (const [c, until] of this.blockedUntil) if (until <= now) this.blockedUntil.delete(c);
    if (this.blockedUntil.size < BLOCKED_MAX) this.blockedUntil.set(client, now + decision.retryAfterSeconds * 1000);
    throw limited(decision.retryAfterSeconds * 1000);
  }
}

function limited(ms: number): DomainError {
  return new DomainError('rate_limited', TOO_MANY_KEY_FAILURES, { retryAfterSeconds: Math.max(1, Math.ceil(ms / 1000)) });
}
