import { randomBytes } from 'node:crypto';

/**
 * What an access key looks like (docs/auth.md, Access keys): `Authorization: Bearer <access_key_id>.<secret>`.
 * The id starts with CVAK, which no JWT can (they start with `eyJ`, a JSON header in base64url), so the
 * authorizer tells the two apart by the first four characters; the id holds no dot, the secret follows the first.
 */
export const ACCESS_KEY_PREFIX = 'CVAK';
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const ID = /^CVAK[A-Z2-7]{16}$/;
const TOKEN = /^(CVAK[A-Z2-7]{16})\.([A-Za-z0-9_-]{40})$/;

/** Whether a bearer token is meant as an access key (well-formed or not): cheap, for the hot path. */
export const isAccessKeyToken = (token: string) => token.startsWith(ACCESS_KEY_PREFIX);

export const isAccessKeyId = (value: unknown): value is string => typeof value === 'string' && ID.test(value);

/** The id and secret of a well-formed access key token, else null. */
export function parseAccessKeyToken(token: string): { id: string; secret: string } | null {
  const match = TOKEN.exec(token);
  return match ? { id: match[1], secret: match[2] } : null;
}

/** CVAK and 16 base32 characters: 80 random bits, an id nobody guesses, 20 characters like AWS's. */
export function newAccessKeyId(): string {
  const bytes = randomBytes(10);
  let bits = 0;
  let value = 0;
  let id = ACCESS_KEY_PREFIX;
  for (const byte of bytes) {
    value = ((value << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      id += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return id;
}

/** 240 random bits in base64url: 40 characters, no dot. */
export const newAccessKeySecret = () => randomBytes(30).toString('base64url');
