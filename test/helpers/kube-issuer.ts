import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';

/**
 * A Kubernetes service-account issuer for tests, shaped like a real cluster's API server: it serves its OIDC
 * discovery document at /.well-known/openid-configuration and its public keys (a JWKS) at /openid/v1/jwks, and
 * signs tokens with the claims kubelet requests for a projected ServiceAccount token volume.
 */

type Alg = 'RS256' | 'ES256';

interface SigningKey {
  kid: string;
  alg: Alg;
  privateKey: CryptoKey;
  jwk: JWK;
}

export interface ServiceAccountTokenOptions {
  namespace?: string;
  name?: string;
  audience?: string | string[];
  /** The token's `iss`; the issuer's own URL by default. */
  issuer?: string;
  /** Seconds since the epoch; the clock's now by default. */
  issuedAt?: number;
  expiresInSeconds?: number;
  /** Sign with this key (one made by `unpublishedKey` or an earlier one); the newest published key by default. */
  key?: SigningKey;
  /** Replace the `kubernetes.io` claims (null: leave them out). */
  kubernetesClaims?: Record<string, unknown> | null;
  /** A `sub` other than the account's. */
  subject?: string;
}

async function newKey(alg: Alg): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = randomUUID().replaceAll('-', '').slice(0, 20);
  return { kid, alg, privateKey: privateKey as CryptoKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

export class TestIssuer {
  /** The keys the JWKS publishes, oldest first. */
  private published: SigningKey[] = [];
  /** Requests for the JWKS so far. */
  jwksFetches = 0;
  discoveryFetches = 0;
  /** Answer discovery with 404 (a cluster whose discovery is not reachable: auth.kubernetes_jwks_url). */
  discovery = true;

  private constructor(
    private readonly server: Server,
    readonly url: string,
    private readonly now: () => number,
  ) {}

  static async start(options: { now?: () => number; alg?: Alg } = {}): Promise<TestIssuer> {
    let issuer: TestIssuer | undefined;
    const server = createServer((req, res) => {
      const path = req.url?.split('?')[0];
      const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (path === '/.well-known/openid-configuration' && issuer!.discovery) {
        issuer!.discoveryFetches++;
        return json(200, {
          issuer: issuer!.url,
          jwks_uri: `${issuer!.url}/openid/v1/jwks`,
          response_types_supported: ['id_token'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256', 'ES256'],
        });
      }
      if (path === '/openid/v1/jwks') {
        issuer!.jwksFetches++;
        return json(200, { keys: issuer!.published.map((k) => k.jwk) });
      }
      json(404, { kind: 'Status', code: 404 });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    issuer = new TestIssuer(server, url, options.now ?? Date.now);
    issuer.published.push(await newKey(options.alg ?? 'RS256'));
    return issuer;
  }

  /** The key tokens are signed with by default. */
  get currentKey(): SigningKey {
    return this.published[this.published.length - 1];
  }

  /**
   * A new signing key, as an API server restarted with a new --service-account-signing-key-file: published,
   * and (keepOld false) the old ones withdrawn.
   */
  async rotate(options: { keepOld?: boolean; alg?: Alg } = {}): Promise<SigningKey> {
    const key = await newKey(options.alg ?? this.currentKey.alg);
    this.published = options.keepOld ? [...this.published, key] : [key];
    return key;
  }

  /** A key whose public half is never published. */
  unpublishedKey(alg: Alg = 'RS256'): Promise<SigningKey> {
    return newKey(alg);
  }

  /** A token as kubelet writes it into a projected volume (audience "conveyor" unless told). */
  async token(options: ServiceAccountTokenOptions = {}): Promise<string> {
    const namespace = options.namespace ?? 'team-a';
    const name = options.name ?? 'worker';
    const key = options.key ?? this.currentKey;
    const iat = options.issuedAt ?? Math.floor(this.now() / 1000);
    const claims =
      options.kubernetesClaims === null
        ? {}
        : {
            'kubernetes.io': options.kubernetesClaims ?? {
              namespace,
              node: { name: 'node-1', uid: randomUUID() },
              pod: { name: `${name}-7d9c5b7f4-x2k8p`, uid: randomUUID() },
              serviceaccount: { name, uid: randomUUID() },
              warnafter: iat + 3607 - 600,
            },
          };
    return new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, kid: key.kid })
      .setIssuer(options.issuer ?? this.url)
      .setSubject(options.subject ?? `system:serviceaccount:${namespace}:${name}`)
      .setAudience(options.audience ?? 'conveyor')
      .setIssuedAt(iat)
      .setNotBefore(iat)
      .setExpirationTime(iat + (options.expiresInSeconds ?? 3607))
      .setJti(randomUUID())
      .sign(key.privateKey);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
