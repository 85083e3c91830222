import type { Knex } from 'knex';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import { AccessKeyService } from './access-keys.js';
import { Authorizer } from './authorizer.js';
import { CredentialsCipher } from './credentials-cipher.js';
import { FailedKeyAttempts } from './failed-key-attempts.js';
import { fetchJson } from './issuer-fetch.js';
import { IssuerKeys } from './issuer-keys.js';
import { MIN_PASSWORD_LENGTH, PasswordVerifier } from './passwords.js';
import { connectRedisRateLimiter, MemoryRateLimiter, type LoginRateLimiter } from './rate-limit.js';
import { ServiceAccountTokens } from './service-account-tokens.js';
import { TokenIssuer } from './tokens.js';
import { UserService } from './users.js';

export interface AuthRuntime {
  auth: Authorizer;
  users: UserService;
  accessKeys: AccessKeyService;
  close(): Promise<void>;
}

/** The verifier of projected ServiceAccount tokens, with auth.kubernetes_enabled (docs/auth.md). */
function serviceAccountTokens(settings: Config['auth'], now: () => number, logger: Logger): ServiceAccountTokens | null {
  if (!settings.enabled || !settings.kubernetes_enabled) return null;
  const keys = new IssuerKeys({ issuer: settings.kubernetes_issuer, jwksUrl: settings.kubernetes_jwks_url, fetchJson, now, logger });
  return new ServiceAccountTokens({ issuer: settings.kubernetes_issuer, audience: settings.kubernetes_audience, keys, now });
}

/**
 * Builds the auth core for one server: user service, token issuer, login limiter (Redis when redis.url is set)
 * and the bootstrap admin of auth.username / auth.password. The secret itself was checked by validateConfig.
 * `onUsersChanged`: users or grants changed here (other instances may be told).
 */
export async function startAuth(config: Config, db: Knex, logger: Logger, now: () => number, onUsersChanged?: () => void): Promise<AuthRuntime> {
  let auth: Authorizer | undefined;
  const users = new UserService(db, now, () => {
    auth?.invalidate();
    onUsersChanged?.();
  });

  let limiter: LoginRateLimiter = new MemoryRateLimiter(now);
  let keyLimiter: LoginRateLimiter = new MemoryRateLimiter(now);
  let closeLimiter = async () => {};
  if (config.redis.url) {
    const redis = await connectRedisRateLimiter(config.redis.url, config.redis.key_prefix, logger, now);
    limiter = redis.limiter;
    keyLimiter = redis.limiterOf('access-key-failures');
    closeLimiter = redis.close;
  }
  const { credentials_key: credentialsKey, previous_credentials_key: previousKey } = config.auth;
  const cipher = credentialsKey ? new CredentialsCipher(credentialsKey, previousKey || undefined) : null;
  const accessKeys = new AccessKeyService({ db, users, cipher, now, logger });

  const passwords = new PasswordVerifier();
  auth = new Authorizer({
    enabled: config.auth.enabled,
    users,
    tokens: config.auth.jwt_secret ? new TokenIssuer(config.auth.jwt_secret, now) : null,
    passwords,
    limiter,
    serviceAccounts: serviceAccountTokens(config.auth, now, logger),
    accessKeys,
    keyFailures: new FailedKeyAttempts(keyLimiter, now),
    now,
  });

  try {
    await bootstrapAdmin(config.auth, users, logger);
    if (config.auth.enabled) await passwords.warmUp();
  } catch (err) {
    await closeLimiter();
    throw err;
  }
  return { auth, users, accessKeys, close: closeLimiter };
}

async function bootstrapAdmin(settings: Config['auth'], users: UserService, logger: Logger): Promise<void> {
  const { username, password } = settings;
  if (!username || !password) {
    if (settings.enabled && (username || password)) logger.warn('auth.username and auth.password must both be set to create the bootstrap admin');
    return;
  }
  if (password.length < MIN_PASSWORD_LENGTH) {
    logger.warn(`the bootstrap admin password (auth.password) is shorter than ${MIN_PASSWORD_LENGTH} characters; change it`);
  }
  const created = await users.bootstrapAdmin(username, password);
  if (created) logger.info({ username }, 'created the bootstrap admin user');
}
