import type { Knex } from 'knex';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import { Authorizer } from './authorizer.js';
import { MIN_PASSWORD_LENGTH, PasswordVerifier } from './passwords.js';
import { connectRedisRateLimiter, MemoryRateLimiter, type LoginRateLimiter } from './rate-limit.js';
import { TokenIssuer } from './tokens.js';
import { UserService } from './users.js';

export interface AuthRuntime {
  auth: Authorizer;
  users: UserService;
  close(): Promise<void>;
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
  let closeLimiter = async () => {};
  if (config.redis.url) {
    const redis = await connectRedisRateLimiter(config.redis.url, config.redis.key_prefix, logger, now);
    limiter = redis.limiter;
    closeLimiter = redis.close;
  }

  const passwords = new PasswordVerifier();
  auth = new Authorizer({
    enabled: config.auth.enabled,
    users,
    tokens: config.auth.jwt_secret ? new TokenIssuer(config.auth.jwt_secret, now) : null,
    passwords,
    limiter,
    now,
  });

  try {
    await bootstrapAdmin(config.auth, users, logger);
    if (config.auth.enabled) await passwords.warmUp();
  } catch (err) {
    await closeLimiter();
    throw err;
  }
  return { auth, users, close: closeLimiter };
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
