import { errors, jwtVerify, SignJWT } from 'jose';

/**
 * Tokens (docs/auth.md, Tokens): HS256, 15 minutes, claims uid, sub, adm, iat, exp; and `pwv`, the user's password version when
 * the token was issued (an extension: a password change raises it and ends the older tokens).
 */
export const TOKEN_LIFETIME_SECONDS = 15 * 60;
const ALGORITHM = 'HS256';

export interface TokenClaims {
  uid: string;
  sub: string;
  adm: boolean;
  pwv: number;
}

/** Claims of a token that verified, with its expiry (`exp`, seconds since the epoch). */
export interface VerifiedToken extends TokenClaims {
  exp: number;
}

export class TokenIssuer {
  private readonly key: Uint8Array;

  constructor(
    secret: string,
    private readonly now: () => number,
  ) {
    this.key = new TextEncoder().encode(secret);
  }

  async issue(claims: TokenClaims): Promise<string> {
    const iat = Math.floor(this.now() / 1000);
    return new SignJWT({ uid: claims.uid, adm: claims.adm, pwv: claims.pwv })
      .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
      .setSubject(claims.sub)
      .setIssuedAt(iat)
      .setExpirationTime(iat + TOKEN_LIFETIME_SECONDS)
      .sign(this.key);
  }

  /**
   * The claims of a token signed by us with HS256 and not yet expired, else null. Pinning the algorithm list
   * is what rejects `alg: none` and every other algorithm, HS512 with the same secret included.
   */
  async verify(token: string): Promise<VerifiedToken | null> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: [ALGORITHM],
        currentDate: new Date(this.now()),
        requiredClaims: ['uid', 'sub', 'iat', 'exp'],
      });
      if (typeof payload.uid !== 'string' || typeof payload.sub !== 'string' || typeof payload.exp !== 'number') return null;
      // Tokens of the release before password versions carry none: version 0, which every user starts at.
      const pwv = payload.pwv === undefined ? 0 : payload.pwv;
      if (typeof pwv !== 'number' || !Number.isInteger(pwv)) return null;
      return { uid: payload.uid, sub: payload.sub, adm: payload.adm === true, pwv, exp: payload.exp };
    } catch (err) {
      if (err instanceof errors.JOSEError || err instanceof TypeError) return null;
      throw err;
    }
  }
}
