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
}
