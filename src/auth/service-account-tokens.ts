import { jwtVerify, type JWTPayload } from 'jose';
import type { IssuerKeys } from './issuer-keys.js';
import { parseServiceAccountUsername } from './service-account-names.js';

/** The leeway of the API server's own check of these tokens: clocks of nodes and of this pod may differ a little. */
export const CLOCK_TOLERANCE_SECONDS = 60;

/**
 * The asymmetric algorithms a cluster signs with (RSA and ECDSA keys). Never HS256 (the service's own tokens,
 * which take the other path) and never `none`: the list is what refuses them.
 */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512'];

/** A verified ServiceAccount token: whose it is and until when (`exp`, seconds, plus the leeway). */
export interface ServiceAccountIdentity {
  username: string;
  namespace: string;
  name: string;
  validUntil: number;
}

export interface ServiceAccountTokenOptions {
  issuer: string;
  audience: string;
  keys: IssuerKeys;
  now: () => number;
}

/**
 * Projected ServiceAccount tokens (docs/auth.md, Kubernetes service accounts), verified here, without asking
 * the API server: the signature against the issuer's keys, `iss`, `aud` (auth.kubernetes_audience), `exp` and
 * `nbf`. The principal is the token's `sub`, `system:serviceaccount:<namespace>:<name>`; the claims kubelet
 * writes under `kubernetes.io` must name the same account.
 */
export class ServiceAccountTokens {
  constructor(private readonly options: ServiceAccountTokenOptions) {}

  /** The identity of a valid token, else null: whatever is wrong with it, and also when the keys cannot be read. */
  async verify(token: string): Promise<ServiceAccountIdentity | null> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.options.keys.resolve, {
        issuer: this.options.issuer,
        audience: this.options.audience,
        algorithms: ALGORITHMS,
        currentDate: new Date(this.options.now()),
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        requiredClaims: ['sub', 'exp'],
      }));
    } catch {
      // A bad token, or keys that could not be read (IssuerKeys logs that): a 401 either way, never a 500.
      return null;
    }
    return identityOf(payload);
  }
}

function identityOf(payload: JWTPayload): ServiceAccountIdentity | null {
  if (typeof payload.sub !== 'string' || typeof payload.exp !== 'number') return null;
  const account = parseServiceAccountUsername(payload.sub);
  if (!account) return null;
  const claims = payload['kubernetes.io'] as { namespace?: unknown; serviceaccount?: { name?: unknown } } | undefined;
  if (claims !== undefined) {
    if (claims === null || typeof claims !== 'object') return null;
    if (claims.namespace !== account.namespace || claims.serviceaccount?.name !== account.name) return null;
  }
  return { username: payload.sub, ...account, validUntil: payload.exp + CLOCK_TOLERANCE_SECONDS };
}
