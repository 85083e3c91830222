/**
 * The transport-neutral authentication and authorization core: HTTP middleware and gRPC interceptors both call
 * it, and it knows neither. `principal === null` means "auth is disabled": every check passes.
 *
 *   authenticate(header: string | undefined): Promise<Principal | null>
 *       `header` is the raw Authorization value ("Bearer <token>"; gRPC: metadata `authorization`). Returns
 *       null when auth is off; throws DomainError('unauthenticated', 'missing authorization header' |
 *       'invalid or expired token'). The user is re-read from the database (cached at most 5 s), so a deleted
 *       user gets 401, a demoted admin loses admin rights, and a token issued under an earlier password
 *       (claim `pwv`) gets 401.
 *   requireAuthenticated(principal)                      any valid user (GET /metrics)
 *   requireAdmin(principal)                              else DomainError('forbidden', 'admin access required')
 *   requireTopic(principal, 'read'|'write'|'admin', topic)  else DomainError('forbidden', 'insufficient permissions')
 *   requireConsume(principal, topic, consumerGroup?)     dequeue, ack, nack: consume-group rules, else write
 *   allowsConsume(principal, topic, consumerGroup?)      the same as a yes or no
 *   requireRequeue(principal, deadLetterTopic)           write on the dead-letter topic or its original topic
 *   visibleTopics(principal, action, topics): string[]   filters lists for non-admins (all for admins / auth off)
 *   visibleScope(principal, action): TopicScope | null    the same as names and prefixes for a query (null: all)
 *   countLoginAttempt(clientAddress): Promise<LoginAttempt>  counts one attempt; else DomainError('rate_limited')
 *   login(attempt, username, password) / refresh(principal) / status(header)
 */
import { failedPrecondition, invalid, DomainError } from '../queue/errors.js';
import { baseTopicOf } from '../queue/topic-names.js';
import type { TopicScope } from '../store/messages/browse.js';
import { grantedScope, mayConsume, mayUseTopic } from './grants-policy.js';
import type { PasswordVerifier } from './passwords.js';
import { GRANT_ACTIONS, type GrantAction, type GrantRule, type Principal } from './principal.js';
import type { LoginRateLimiter } from './rate-limit.js';
import type { TokenIssuer, VerifiedToken } from './tokens.js';
import type { UserService } from './users.js';

export type { Principal } from './principal.js';
export type TopicAction = Exclude<GrantAction, 'consume'>;

/** How long a principal may be served from cache before the database is asked again (docs/auth.md, Tokens). */
export const PRINCIPAL_CACHE_MS = 5000;

/** Verified tokens kept (one per signed-in client, roughly); beyond it the oldest is dropped first. */
const VERIFIED_TOKENS_MAX = 10_000;

export const MISSING_HEADER = 'missing authorization header';
export const INVALID_TOKEN = 'invalid or expired token';
const unauthenticated = (message: string) => new DomainError('unauthenticated', message);
const insufficient = () => new DomainError('forbidden', 'insufficient permissions');

export interface AuthorizerDeps {
  enabled: boolean;
  users: UserService;
  /** Null when no secret is configured (auth disabled). */
  tokens: TokenIssuer | null;
  passwords: PasswordVerifier;
  limiter: LoginRateLimiter;
  now: () => number;
}

/**
 * One login attempt, counted against its client's limit by countLoginAttempt. login() takes it, once: a login
 * cannot skip the count, and one request is never counted twice (the HTTP route counts it before its body is
 * read, so that a body the pipeline refuses counts too, and logs in with the same attempt afterwards).
 */
export interface LoginAttempt {
  readonly clientAddress: string;
}

export interface AuthStatus {
  auth_required: boolean;
  user?: { id: string; username: string; is_admin: boolean };
}

export class Authorizer {
  readonly enabled: boolean;
  private readonly cache = new Map<string, { principal: Principal | null; loadedAt: number }>();
  /**
   * Tokens whose signature verified, until their `exp`. An HS256 signature is checked once per token, not once
   * per request: the verdict cannot change before the token expires (the secret is fixed for the process's
   * life), and what can change, the user and its grants, is the principal cache's business (5 s). Only
   * tokens that verified are kept, so garbage sent by anyone cannot fill it.
   */
  private readonly verifiedTokens = new Map<string, VerifiedToken>();
  /** Principals being loaded: the requests that miss the cache together share one load of the user. */
  private readonly loading = new Map<string, Promise<Principal | null>>();
  /** Moves on with every change of users or grants, so that a load begun before one is not cached after it. */
  private generation = 0;
  /** Attempts counted and not yet used by login(). */
  private readonly countedAttempts = new WeakSet<LoginAttempt>();

  constructor(private readonly deps: AuthorizerDeps) {
    this.enabled = deps.enabled;
  }

  async authenticate(header: string | undefined): Promise<Principal | null> {
    if (!this.enabled) return null;
    if (!header) throw unauthenticated(MISSING_HEADER);
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw unauthenticated(INVALID_TOKEN);
    const principal = await this.principalOfToken(match[1]);
    if (!principal) throw unauthenticated(INVALID_TOKEN);
    return principal;
  }

  requireAuthenticated(principal: Principal | null): void {
    if (this.enabled && !principal) throw unauthenticated(MISSING_HEADER);
  }

  requireAdmin(principal: Principal | null): void {
    if (!this.enabled) return;
    if (!principal) throw unauthenticated(MISSING_HEADER);
    if (!principal.isAdmin) throw new DomainError('forbidden', 'admin access required');
  }

  requireTopic(principal: Principal | null, action: TopicAction, topic: string): void {
    if (!this.enabled) return;
    if (!principal) throw unauthenticated(MISSING_HEADER);
    if (!mayUseTopic(principal, action, topic)) throw insufficient();
  }

  requireConsume(principal: Principal | null, topic: string, consumerGroup?: string): void {
    if (!this.enabled) return;
    if (!principal) throw unauthenticated(MISSING_HEADER);
    if (!mayConsume(principal, topic, consumerGroup || undefined)) throw insufficient();
  }

  /** Whether requireConsume would pass, for a caller that has another way to go when it would not. */
  allowsConsume(principal: Principal | null, topic: string, consumerGroup?: string): boolean {
    return !this.enabled || (principal !== null && mayConsume(principal, topic, consumerGroup || undefined));
  }

  /** A requeue moves a dead letter back to its original topic, so write on either side of the move suffices. */
  requireRequeue(principal: Principal | null, deadLetterTopic: string): void {
    if (!this.enabled) return;
    if (!principal) throw unauthenticated(MISSING_HEADER);
    const allowed = [deadLetterTopic, baseTopicOf(deadLetterTopic)].some((topic) => mayUseTopic(principal, 'write', topic));
    if (!allowed) throw insufficient();
  }

  /** With auth on, a missing principal sees nothing: a route reached without authentication must not leak. */
  visibleTopics(principal: Principal | null, action: TopicAction, topics: string[]): string[] {
    if (!this.enabled) return topics;
    if (!principal) return [];
    if (principal.isAdmin) return topics;
    return topics.filter((topic) => mayUseTopic(principal, action, topic));
  }

  /**
   * The topics a list may show the caller, for the database to select (a list of every topic it knows, filtered
   * here, would grow with the database instead of the caller's grants); null: every topic.
   */
  visibleScope(principal: Principal | null, action: TopicAction): TopicScope | null {
    if (!this.enabled) return null;
    if (!principal) return { names: [], prefixes: [] };
    return principal.isAdmin ? null : grantedScope(principal, action);
  }

  /**
   * Counts one login attempt of `clientAddress`, before anything else about it is looked at: every attempt
   * counts, whatever its outcome (docs/auth.md, Login rate limit). Beyond the limit: DomainError('rate_limited') with the
   * seconds until the client's window ends.
   */
  async countLoginAttempt(clientAddress: string): Promise<LoginAttempt> {
    const decision = await this.deps.limiter.hit(clientAddress);
    if (!decision.allowed) throw new DomainError('rate_limited', 'too many login attempts', { retryAfterSeconds: decision.retryAfterSeconds });
    const attempt: LoginAttempt = Object.freeze({ clientAddress });
    this.countedAttempts.add(attempt);
    return attempt;
  }

  /**
   * Logs in with an attempt countLoginAttempt counted (each attempt once). An unknown user still costs one
   * argon2 verification, and both failures read the same.
   */
  async login(attempt: LoginAttempt, username: unknown, password: unknown): Promise<string> {
    // A programming error, not the client's: a login that was not counted, or an attempt used twice.
    if (!this.countedAttempts.delete(attempt)) throw new Error('login attempt not counted by countLoginAttempt, or already used');
    if (typeof username !== 'string' || username === '') throw invalid('username is required');
    if (typeof password !== 'string' || password === '') throw invalid('password is required');
    const tokens = this.tokenIssuer();
    const user = await this.deps.users.findByName(username);
    const valid = await this.deps.passwords.verify(user?.password_hash ?? null, password);
    if (!user || !valid) throw unauthenticated('invalid username or password');
    return tokens.issue({ uid: user.id, sub: user.username, adm: user.is_admin, pwv: user.password_version });
  }

  /**
   * A new 15-minute token from the user as it is now (the caller's token was valid to get here), under the
   * password version the caller's token has: a refresh served from a cache that had not yet seen a password
   * change gives a token that ends with the old one, once the cache catches up.
   */
  async refresh(principal: Principal | null): Promise<string> {
    const tokens = this.tokenIssuer();
    if (!principal) throw unauthenticated(MISSING_HEADER);
    return tokens.issue({ uid: principal.userId, sub: principal.username, adm: principal.isAdmin, pwv: principal.passwordVersion });
  }

  /** `user` only for a valid token; an invalid one is not an error here. */
  async status(header: string | undefined): Promise<AuthStatus> {
    if (!this.enabled) return { auth_required: false };
    const principal = await this.authenticate(header).catch((err: unknown) => {
      if (err instanceof DomainError && err.code === 'unauthenticated') return null;
      throw err;
    });
    if (!principal) return { auth_required: true };
    return { auth_required: true, user: { id: principal.userId, username: principal.username, is_admin: principal.isAdmin } };
  }

  /** Users or grants changed on this instance: forget every cached principal now (other instances within 5 s). */
  invalidate(): void {
    this.cache.clear();
    this.loading.clear();
    this.generation++;
  }

  private tokenIssuer(): TokenIssuer {
    if (!this.enabled || !this.deps.tokens) throw failedPrecondition('authentication is disabled on this server');
    return this.deps.tokens;
  }

  private async claimsOf(token: string, now: number): Promise<VerifiedToken | null> {
    const known = this.verifiedTokens.get(token);
    // As jose decides: valid while the current second is before `exp`.
    if (known) return Math.floor(now / 1000) < known.exp ? known : (this.verifiedTokens.delete(token), null);
    const claims = await this.deps.tokens!.verify(token);
    if (!claims) return null;
    if (this.verifiedTokens.size >= VERIFIED_TOKENS_MAX) this.verifiedTokens.delete(this.verifiedTokens.keys().next().value!);
    this.verifiedTokens.set(token, claims);
    return claims;
  }

  private async principalOfToken(token: string): Promise<Principal | null> {
    const now = this.deps.now();
    const claims = await this.claimsOf(token, now);
    if (!claims) return null;
    const cached = this.cache.get(claims.uid);
    const principal = cached && now - cached.loadedAt < PRINCIPAL_CACHE_MS && now >= cached.loadedAt ? cached.principal : await this.load(claims.uid, now);
    // A token issued under an earlier password is over, as if it had expired.
    return principal && claims.pwv === principal.passwordVersion ? principal : null;
  }

  /**
   * One load per user at a time: when the cached principal expires, every request in flight for that user
   * missed it at once, and each read the user and its grants again (73 loads in one bench run's HTTP phases).
   */
  private load(userId: string, now: number): Promise<Principal | null> {
    const inFlight = this.loading.get(userId);
    if (inFlight) return inFlight;
    const generation = this.generation;
    const loaded = this.loadPrincipal(userId)
      .then((principal) => {
        if (generation === this.generation) {
          if (this.cache.size > 10_000) this.cache.clear();
          this.cache.set(userId, { principal, loadedAt: now });
        }
        return principal;
      })
      .finally(() => {
        if (this.loading.get(userId) === loaded) this.loading.delete(userId);
      });
    this.loading.set(userId, loaded);
    return loaded;
  }

  private async loadPrincipal(userId: string): Promise<Principal | null> {
    const user = await this.deps.users.find(userId);
    if (!user) return null;
    const grants: GrantRule[] = (await this.deps.users.grantsOf(user))
      .filter((g) => (GRANT_ACTIONS as readonly string[]).includes(g.action))
      .map((g) => ({ action: g.action as GrantAction, topicPattern: g.topic_pattern, consumerGroup: g.consumer_group }));
    return { userId: user.id, username: user.username, isAdmin: user.is_admin, grants, passwordVersion: user.password_version };
  }
}
