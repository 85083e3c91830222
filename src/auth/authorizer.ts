/**
 * The transport-neutral authentication and authorization core: HTTP middleware and gRPC interceptors both call
 * it, and it knows neither. `principal === null` means "auth is disabled": every check passes.
 *
 *   authenticate(header: string | undefined, addressOf?: (caller) => string, caller?): Promise<Principal | null>
 *       `header` is the raw Authorization value ("Bearer <token>"; gRPC: metadata `authorization`): a token from
 *       a login (HS256), a Kubernetes ServiceAccount token (RS256/ES256..., with auth.kubernetes_enabled) or an
 *       access key (`CVAK...` `.` secret); `addressOf(caller)` is the caller's address, which failed access
 *       keys count against (asked only for an access key: the transport's request and a function made once, so
 *       that authenticating a token allocates nothing more). Returns null when auth is off; throws DomainError('unauthenticated', 'missing authorization
 *       header' | 'invalid or expired token'), the same message whatever is wrong with a credential, or
 *       DomainError('rate_limited') for a client over the limit of failed access keys. The user is re-read
 *       from the database (cached at most 5 s), so a deleted user gets 401, a demoted admin loses admin rights,
 *       and a token issued under an earlier password (claim `pwv`) gets 401.
 *   requireAuthenticated(principal)                      any valid user (GET /metrics)
 *   requireAdmin(principal)                              else DomainError('forbidden', 'admin access required')
 *   requireTopic(principal, 'read'|'write'|'admin', topic)  else DomainError('forbidden', 'insufficient permissions')
 *   requireConsume(principal, topic, consumerGroup?)     dequeue, ack, nack: consume-group rules, else write
 *   allowsConsume(principal, topic, consumerGroup?)      the same as a yes or no
 *   requireRequeue(principal, deadLetterTopic)           write on the dead-letter topic or its original topic
 *   visibleTopics(principal, action, topics): string[]   filters lists for non-admins (all for admins / auth off)
 *   visibleScope(principal, action): TopicScope | null    the same as names and prefixes for a query (null: all)
 *   countLoginAttempt(clientAddress): Promise<LoginAttempt>  counts one attempt; else DomainError('rate_limited')
 *   login(attempt, username, password) / refresh(principal) / status(header, addressOf, caller)
 */
import { decodeProtectedHeader } from 'jose';
import { failedPrecondition, invalid, DomainError } from '../queue/errors.js';
import { baseTopicOf } from '../queue/topic-names.js';
import type { TopicScope } from '../store/messages/browse.js';
import { isAccessKeyToken } from './access-key-format.js';
import type { AccessKeyService } from './access-keys.js';
import type { FailedKeyAttempts } from './failed-key-attempts.js';
import { grantedScope, mayConsume, mayUseTopic } from './grants-policy.js';
import type { PasswordVerifier } from './passwords.js';
import { GRANT_ACTIONS, type GrantAction, type GrantRule, type Principal } from './principal.js';
import type { LoginRateLimiter } from './rate-limit.js';
import type { ServiceAccountTokens } from './service-account-tokens.js';
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
  /** Null without auth.kubernetes_enabled: only tokens from a login are JWTs the service accepts. */
  serviceAccounts: ServiceAccountTokens | null;
  accessKeys: AccessKeyService;
  keyFailures: FailedKeyAttempts;
  now: () => number;
}

/** A ServiceAccount token that verified: its principal's user id (made on first use) and name, and until when. */
interface ServiceAccountClaims {
  kind: 'service_account';
  uid: string;
  username: string;
  exp: number;
}

type VerifiedCredential = VerifiedToken | ServiceAccountClaims;

/** The service's own tokens are HS256; a header that does not decode is left to their verification to refuse. */
function isOwnToken(token: string): boolean {
  try {
    return decodeProtectedHeader(token).alg === 'HS256';
  } catch {
    return true;
  }
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
   * tokens that verified are kept, so garbage sent by anyone cannot fill it. ServiceAccount tokens too (until
   * `exp` and the leeway): kubelet rotates them hourly, so each is verified once. Never access keys, which
   * are checked against their row on every request so that a revocation holds at once everywhere.
   */
  private readonly verifiedTokens = new Map<string, VerifiedCredential>();
  /** Principals being loaded: the requests that miss the cache together share one load of the user. */
  private readonly loading = new Map<string, Promise<Principal | null>>();
  /** Moves on with every change of users or grants, so that a load begun before one is not cached after it. */
  private generation = 0;
  /** Attempts counted and not yet used by login(). */
  private readonly countedAttempts = new WeakSet<LoginAttempt>();

  constructor(private readonly deps: AuthorizerDeps) {
    this.enabled = deps.enabled;
  }

  async authenticate<C>(header: string | undefined, addressOf?: (caller: C) => string, caller?: C): Promise<Principal | null> {
    if (!this.enabled) return null;
    if (!header) throw unauthenticated(MISSING_HEADER);
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw unauthenticated(INVALID_TOKEN);
    const token = match[1];
    const principal = isAccessKeyToken(token) ? await this.principalOfAccessKey(token, addressOf && addressOf(caller as C)) : await this.principalOfToken(token);
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
    const name = loginField('username', username);
    const secret = loginField('password', password);
    const tokens = this.tokenIssuer();
    const found = await this.deps.users.findByName(name);
    // A service account has no password: it costs the same verification as an unknown name, and fails alike.
    const user = found?.service_account ? null : found;
    const valid = await this.deps.passwords.verify(user?.password_hash ?? null, secret);
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
    // A token made from an access key would outlive the key's revocation, and one made from a ServiceAccount
    // token the pod's; neither expires like a login's token, so neither needs one.
    if (principal.serviceAccount || principal.credential === 'access_key') {
      throw failedPrecondition('only a token from a login is refreshed: send the access key or the ServiceAccount token itself');
    }
    return tokens.issue({ uid: principal.userId, sub: principal.username, adm: principal.isAdmin, pwv: principal.passwordVersion });
  }

  /**
   * `user` only for a valid token; an invalid one is not an error here, nor is a client over the limit of
   * failed access keys (it learns nothing either way: the limit refuses its right keys too).
   */
  async status<C>(header: string | undefined, addressOf?: (caller: C) => string, caller?: C): Promise<AuthStatus> {
    if (!this.enabled) return { auth_required: false };
    const principal = await this.authenticate(header, addressOf, caller).catch((err: unknown) => {
      if (err instanceof DomainError && (err.code === 'unauthenticated' || err.code === 'rate_limited')) return null;
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

  private async claimsOf(token: string, now: number): Promise<VerifiedCredential | null> {
    const known = this.verifiedTokens.get(token);
    // As jose decides: valid while the current second is before `exp`.
    if (known) return Math.floor(now / 1000) < known.exp ? known : (this.verifiedTokens.delete(token), null);
    const claims = await this.verify(token);
    if (!claims) return null;
    if (this.verifiedTokens.size >= VERIFIED_TOKENS_MAX) this.verifiedTokens.delete(this.verifiedTokens.keys().next().value!);
    this.verifiedTokens.set(token, claims);
    return claims;
  }

  /** A token from a login, else (auth.kubernetes_enabled) a ServiceAccount token, by the header's algorithm. */
  private async verify(token: string): Promise<VerifiedCredential | null> {
    const accounts = this.deps.serviceAccounts;
    if (!accounts || isOwnToken(token)) return this.deps.tokens!.verify(token);
    const identity = await accounts.verify(token);
    if (!identity) return null;
    const uid = await this.deps.users.ensureServiceAccount(identity.username);
    return uid ? { kind: 'service_account', uid, username: identity.username, exp: identity.validUntil } : null;
  }

  private async principalOfToken(token: string): Promise<Principal | null> {
    const now = this.deps.now();
    const claims = await this.claimsOf(token, now);
    if (!claims) return null;
    if ('kind' in claims) return this.principalOfServiceAccount(claims, now);
    const cached = this.cache.get(claims.uid);
    const principal = cached && now - cached.loadedAt < PRINCIPAL_CACHE_MS && now >= cached.loadedAt ? cached.principal : await this.load(claims.uid, now);
    // A token issued under an earlier password is over, as if it had expired. None is ever a service account's
    // (it has no password to log in with, and its tokens are not refreshed).
    return principal && claims.pwv === principal.passwordVersion && !principal.serviceAccount ? principal : null;
  }

  /** The account's principal; made again (without the grants it had) when an admin deleted it. */
  private async principalOfServiceAccount(claims: ServiceAccountClaims, now: number): Promise<Principal | null> {
    let principal = await this.principalOf(claims.uid, now);
    if (!principal) {
      const uid = await this.deps.users.ensureServiceAccount(claims.username);
      if (!uid) return null;
      claims.uid = uid;
      principal = await this.principalOf(uid, now);
    }
    return principal?.serviceAccount ? principal : null;
  }

  /**
   * The user of an access key, checked against its row on every request (AccessKeyService.userOf). A failure
   * counts against the client; a client over that limit is refused before its key is looked at.
   */
  private async principalOfAccessKey(token: string, address: string | undefined): Promise<Principal | null> {
    if (address !== undefined) this.deps.keyFailures.assertAllowed(address);
    const userId = await this.deps.accessKeys.userOf(token);
    const principal = userId === null ? null : await this.principalOf(userId, this.deps.now());
    if (!principal || principal.serviceAccount) {
      if (address !== undefined) await this.deps.keyFailures.fail(address);
      return null;
    }
    return { ...principal, credential: 'access_key' };
  }

  /**
   * The principal of a request signed with an access key's secret (AWS Signature Version 4, src/sqs): `verify`
   * recomputes the signature with the stored secret. Null with authentication off. A failure (unknown key, a
   * signature that does not match) counts against the client as a failed access key does, and is refused as
   * 401 (`unauthenticated`); the transport says which of the two it was from `verify`'s verdict.
   */
  async authenticateSigned(accessKeyId: string, verify: (secret: string) => boolean | Promise<boolean>, address: string): Promise<Principal | null> {
    if (!this.enabled) return null;
    this.deps.keyFailures.assertAllowed(address);
    const userId = await this.deps.accessKeys.userOfSigned(accessKeyId, verify);
    const principal = userId === null ? null : await this.principalOf(userId, this.deps.now());
    if (!principal || principal.serviceAccount) {
      await this.deps.keyFailures.fail(address);
      throw unauthenticated(INVALID_TOKEN);
    }
    return { ...principal, credential: 'access_key' };
  }

  private principalOf(userId: string, now: number): Principal | null | Promise<Principal | null> {
    const cached = this.cache.get(userId);
    return cached && now - cached.loadedAt < PRINCIPAL_CACHE_MS && now >= cached.loadedAt ? cached.principal : this.load(userId, now);
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
    // A service account is never an admin, whatever its row says.
    const isAdmin = user.is_admin && !user.service_account;
    return { userId: user.id, username: user.username, isAdmin, grants, passwordVersion: user.password_version, serviceAccount: user.service_account };
  }
}

/**
 * A login field as the client sent it: absent, null or empty is "required"; any other JSON type (a number, an
 * object, an array) "must be a string", so a client that sent the wrong type is told so. The login route and
 * its OpenAPI text (src/http/validation.ts, loginBody) say the same.
 */
function loginField(name: 'username' | 'password', value: unknown): string {
  if (value === undefined || value === null || value === '') throw invalid(`${name} is required`);
  if (typeof value !== 'string') throw invalid(`${name} must be a string`);
  return value;
}
