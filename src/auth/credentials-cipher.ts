import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets the service must be able to read back (access keys' secrets: request signing needs them), encrypted
 * with AES-256-GCM under auth.credentials_key (docs/auth.md, Access keys). Each ciphertext is stored with the
 * fingerprint of the key that made it, so that during a rotation rows under auth.previous_credentials_key
 * are still read, and `conveyor rotate-credentials-key` knows which rows to re-encrypt.
 */

export const CREDENTIALS_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** What is wrong with a configured credentials key (32 bytes in base64), or undefined. Never quotes the value. */
export function credentialsKeyProblem(text: string): string | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || Buffer.from(text, 'base64').length !== CREDENTIALS_KEY_BYTES) {
    return `must be ${CREDENTIALS_KEY_BYTES} bytes in base64 (openssl rand -base64 32)`;
  }
  return undefined;
}

/** The fingerprint stored beside each ciphertext: names the key without revealing it. */
export function keyFingerprint(key: Buffer): string {
  return createHash('sha256').update('conveyor credentials key\0').update(key).digest('hex').slice(0, 16);
}

export interface Sealed {
  ciphertext: string;
  keyId: string;
}

export class CredentialsCipher {
  private readonly current: { key: Buffer; id: string };
  private readonly readable = new Map<string, Buffer>();

  /** `current` and `previous` in base64, checked by the configuration's validation. */
  constructor(current: string, previous?: string) {
    const key = Buffer.from(current, 'base64');
    this.current = { key, id: keyFingerprint(key) };
    this.readable.set(this.current.id, key);
    if (previous) {
      const old = Buffer.from(previous, 'base64');
      this.readable.set(keyFingerprint(old), old);
    }
  }

  get currentKeyId(): string {
    return this.current.id;
  }

  /** `context` (the row's id) is authenticated with it: a ciphertext moved to another row does not decrypt. */
  seal(plaintext: string, context: string): Sealed {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { ciphertext: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64'), keyId: this.current.id };
  }

  /** The plaintext, or null: a key this instance does not hold, or a ciphertext that fails authentication. */
  open(sealed: Sealed, context: string): string | null {
    const key = this.readable.get(sealed.keyId);
    if (!key) return null;
    const data = Buffer.from(sealed.ciphertext, 'base64');
    if (data.length < IV_BYTES + TAG_BYTES) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(data.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(data.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      return null;
    }
  }

  /** Whether `keyId` is one of the keys this cipher reads. */
  reads(keyId: string): boolean {
    return this.readable.has(keyId);
  }
}
