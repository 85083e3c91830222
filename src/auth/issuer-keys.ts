import { createLocalJWKSet, errors, type FlattenedJWSInput, type JSONWebKeySet, type JWSHeaderParameters } from 'jose';
import type { Logger } from '../log/logger.js';
import { RepeatedFailure } from '../log/repeated.js';
import { isClusterApiServer, type FetchJson } from './issuer-fetch.js';

/** Keys are read again after this, so a key the issuer withdrew stops verifying within it. */
export const KEYS_MAX_AGE_MS = 5 * 60_000;
/**
 * The least time between two reads of the keys: a token naming an unknown `kid` makes the issuer be asked
 * again (a rotation), but a stream of made-up kids must not make it be asked on every request.
 */
export const KEYS_REFRESH_COOLDOWN_MS = 10_000;

export interface IssuerKeysOptions {
  /** auth.kubernetes_issuer: its discovery document names the keys' URL. */
  issuer: string;
  /** auth.kubernetes_jwks_url: the keys' URL, without discovery; "" = from discovery. */
  jwksUrl: string;
  fetchJson: FetchJson;
  now: () => number;
  logger: Logger;
}

type KeySet = ReturnType<typeof createLocalJWKSet>;

/**
 * The service-account issuer's public keys (a JWKS), fetched on first use and kept: read again after
 * KEYS_MAX_AGE_MS, and when a token names a key not in the set (the issuer rotated its signing key), at most
 * once per KEYS_REFRESH_COOLDOWN_MS. A failed read keeps the keys it had; it is logged once while it lasts.
 */
export class IssuerKeys {
  private keys: KeySet | undefined;
  private loadedAt = -Infinity;
  /** When the last read began, whatever its outcome: the cooldown counts from it. */
  private triedAt = -Infinity;
  private refreshing: Promise<void> | undefined;
  private readonly failures: RepeatedFailure;

  constructor(private readonly options: IssuerKeysOptions) {
    this.failures = new RepeatedFailure(options.logger, {
      what: 'reading the service-account issuer keys (auth.kubernetes_issuer)',
      consequence: 'ServiceAccount tokens signed by keys not read yet get 401',
    });
  }

  /** jose's key resolver: the key for a token's header, reading the set first or again as above. */
  readonly resolve = async (header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey> => {
    const now = this.options.now();
    if (!this.keys || now - this.loadedAt >= KEYS_MAX_AGE_MS) await this.refresh(now);
    if (!this.keys) throw new errors.JWKSNoMatchingKey();
    try {
      return (await this.keys(header, token)) as CryptoKey;
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey) || !(await this.refresh(now))) throw err;
      return (await this.keys(header, token)) as CryptoKey;
    }
  };

  /** Reads the keys unless a read is under way (then waits for it) or one began within the cooldown (false). */
  private async refresh(now: number): Promise<boolean> {
    if (!this.refreshing) {
      if (now - this.triedAt < KEYS_REFRESH_COOLDOWN_MS) return false;
      this.triedAt = now;
      this.refreshing = this.load().then(
        (keys) => {
          this.keys = keys;
          this.loadedAt = now;
          this.failures.ok();
        },
        (err: unknown) => this.failures.fail(err),
      );
      void this.refreshing.finally(() => (this.refreshing = undefined));
    }
    await this.refreshing;
    return true;
  }

  private async load(): Promise<KeySet> {
    const { issuer, fetchJson } = this.options;
    let url = this.options.jwksUrl;
    let bearer = url !== '' && isClusterApiServer(new URL(url));
    if (url === '') {
      const discovery = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
      const fromApiServer = isClusterApiServer(new URL(discovery));
      const document = (await fetchJson(discovery, { bearer: fromApiServer })) as { issuer?: unknown; jwks_uri?: unknown } | null;
      if (document?.issuer !== issuer) throw new Error(`${discovery} names the issuer ${JSON.stringify(document?.issuer)}, not ${issuer}`);
      if (typeof document.jwks_uri !== 'string' || !/^https?:\/\//.test(document.jwks_uri)) throw new Error(`${discovery} names no jwks_uri`);
      url = document.jwks_uri;
      // The API server names its own keys' address (its advertised one, often not the Service's name).
      bearer = fromApiServer || isClusterApiServer(new URL(url));
    }
    return createLocalJWKSet((await fetchJson(url, { bearer })) as JSONWebKeySet);
  }
}
