import { createHash, timingSafeEqual } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from '../log/logger.js';
import { conflict, DomainError, invalid, notFound } from '../queue/errors.js';
import { deleteAccessKey, getAccessKey, insertAccessKey, listAccessKeys, touchAccessKey, type AccessKeyRow } from '../store/access-keys.js';
import { isAccessKeyId, newAccessKeyId, newAccessKeySecret, parseAccessKeyToken } from './access-key-format.js';
import type { CredentialsCipher } from './credentials-cipher.js';
import type { UserService } from './users.js';

/** Keys a user may hold at once: enough to rotate one without a gap, few enough to keep track of. */
export const MAX_ACCESS_KEYS_PER_USER = 10;
/** `last_used_at` is written at most this often per key: a key used by every request must not write each time. */
export const LAST_USED_EVERY_MS = 60_000;

export const ACCESS_KEYS_OFF = 'access keys are off: auth.credentials_key is not set';

/** A key as the API lists it: never its secret. */
export interface AccessKey {
  access_key_id: string;
  user_id: string;
  created_at: number;
  last_used_at: number | null;
}

/** The answer to a creation: the only time the secret leaves the service. */
export interface NewAccessKey {
  access_key_id: string;
  secret: string;
  created_at: number;
}

const keyNotFound = () => notFound('access key not found');
const listed = (row: AccessKeyRow): AccessKey => ({ access_key_id: row.id, user_id: row.user_id, created_at: row.created_at, last_used_at: row.last_used_at });
const digest = (text: string) => createHash('sha256').update(text).digest();

export interface AccessKeyDeps {
  db: Knex;
  users: UserService;
  /** Null without auth.credentials_key: access keys are off. */
  cipher: CredentialsCipher | null;
  now: () => number;
  logger: Logger;
}

/**
 * Access keys of users (docs/auth.md, Access keys): created, listed and revoked by an admin, used by programs
 * as `Bearer <access_key_id>.<secret>`. Nothing about a key is cached: each request that carries one reads
 * its row by primary key, so a revoked key is refused by every instance from the next request on.
 */
export class AccessKeyService {
  private readonly touching = new Set<string>();
  /** Credentials keys already warned about, so a missing one is one log line, not one per request. */
  private readonly warnedKeyIds = new Set<string>();

  constructor(private readonly deps: AccessKeyDeps) {}

  get enabled(): boolean {
    return this.deps.cipher !== null;
  }

  async create(userId: string): Promise<NewAccessKey> {
    const cipher = this.cipher();
    const user = await this.deps.users.find(userId);
    if (!user) throw notFound('user not found');
    if (user.service_account) throw invalid('a service account authenticates with its ServiceAccount token; access keys are for users');
    const id = newAccessKeyId();
    const secret = newAccessKeySecret();
    const sealed = cipher.seal(secret, id);
    const row: AccessKeyRow = { id, user_id: user.id, secret_ciphertext: sealed.ciphertext, key_id: sealed.keyId, created_at: this.deps.now(), last_used_at: null };
    const outcome = await insertAccessKey(this.deps.db, row, MAX_ACCESS_KEYS_PER_USER);
    if (outcome === 'no_user') throw notFound('user not found');
    if (outcome === 'limit') throw conflict(`a user holds at most ${MAX_ACCESS_KEYS_PER_USER} access keys; revoke one first`);
    return { access_key_id: id, secret, created_at: row.created_at };
  }

  async list(userId: string): Promise<AccessKey[]> {
    this.cipher();
    const user = await this.deps.users.find(userId);
    if (!user) throw notFound('user not found');
    return (await listAccessKeys(this.deps.db, user.id)).map(listed);
  }

  async revoke(userId: string, keyId: string): Promise<void> {
    this.cipher();
    const user = await this.deps.users.find(userId);
    if (!user) throw notFound('user not found');
    if (!isAccessKeyId(keyId) || !(await deleteAccessKey(this.deps.db, user.id, keyId))) throw keyNotFound();
  }

  /**
   * The id of the user whose key `token` is, or null: malformed, unknown, revoked, a wrong secret, or access
   * keys off. The secrets are compared as digests in constant time.
   */
  async userOf(token: string): Promise<string | null> {
    const cipher = this.deps.cipher;
    const parsed = parseAccessKeyToken(token);
    if (!cipher || !parsed) return null;
    const row = await getAccessKey(this.deps.db, parsed.id);
    if (!row) return null;
    const stored = cipher.open({ ciphertext: row.secret_ciphertext, keyId: row.key_id }, row.id);
    if (stored === null) {
      this.warnUnreadable(row);
      return null;
    }
    if (!timingSafeEqual(digest(stored), digest(parsed.secret))) return null;
    this.touch(row);
    return row.user_id;
  }

  /**
   * The id of the user whose key `accessKeyId` is, when `verify` accepts the key's secret, else null (unknown,
   * revoked, a signature made with another secret, access keys off). For requests signed with the secret
   * instead of carrying it (AWS Signature Version 4, src/sqs): the secret is handed to `verify` only, never
   * returned.
   */
  async userOfSigned(accessKeyId: string, verify: (secret: string) => boolean | Promise<boolean>): Promise<string | null> {
    const cipher = this.deps.cipher;
    if (!cipher || !isAccessKeyId(accessKeyId)) return null;
    const row = await getAccessKey(this.deps.db, accessKeyId);
    if (!row) return null;
    const stored = cipher.open({ ciphertext: row.secret_ciphertext, keyId: row.key_id }, row.id);
    if (stored === null) {
      this.warnUnreadable(row);
      return null;
    }
    if (!(await verify(stored))) return null;
    this.touch(row);
    return row.user_id;
  }

  private cipher(): CredentialsCipher {
    if (!this.deps.cipher) throw new DomainError('unavailable', ACCESS_KEYS_OFF);
    return this.deps.cipher;
  }

  /** In the background: the request does not wait for the write, and a failed one is only logged. */
  private touch(row: AccessKeyRow): void {
    const now = this.deps.now();
    if ((row.last_used_at !== null && now - row.last_used_at < LAST_USED_EVERY_MS) || this.touching.has(row.id)) return;
    this.touching.add(row.id);
    touchAccessKey(this.deps.db, row.id, now, LAST_USED_EVERY_MS)
      .catch((err: unknown) => this.deps.logger.warn({ err, access_key_id: row.id }, "could not record an access key's last use"))
      .finally(() => this.touching.delete(row.id));
  }

  private warnUnreadable(row: AccessKeyRow): void {
    if (this.deps.cipher?.reads(row.key_id) || this.warnedKeyIds.has(row.key_id)) return;
    this.warnedKeyIds.add(row.key_id);
    this.deps.logger.warn(
      { access_key_id: row.id, key_id: row.key_id },
      'an access key is encrypted under a credentials key this instance does not hold (neither auth.credentials_key nor auth.previous_credentials_key): its requests get 401',
    );
  }
}
