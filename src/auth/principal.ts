/** The grant actions (docs/auth.md, Grants). */
export const GRANT_ACTIONS = ['read', 'write', 'admin', 'consume'] as const;
export type GrantAction = (typeof GRANT_ACTIONS)[number];

/** What a per-topic check looks at: one grant of the user. */
export interface GrantRule {
  action: GrantAction;
  topicPattern: string;
  consumerGroup: string;
}

/** The user behind a valid token, as the database knows it now (not as the token claimed). */
export interface Principal {
  userId: string;
  username: string;
  isAdmin: boolean;
  grants: GrantRule[];
  /** The password's version: only tokens issued under it (claim `pwv`) are valid. */
  passwordVersion: number;
  /** A Kubernetes service account's principal (docs/auth.md): never an admin, and its token is not refreshed. */
  serviceAccount: boolean;
  /**
   * How this request authenticated when not with a token from a login: `access_key`. A login's token may be
   * refreshed; an access key's request may not turn into one (a token would outlive the key's revocation).
   */
  credential?: 'access_key';
}
