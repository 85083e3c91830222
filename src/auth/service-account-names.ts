/**
 * The principal of a Kubernetes service account is the user named as its token's `sub`:
 * `system:serviceaccount:<namespace>:<name>` (docs/auth.md, Kubernetes service accounts). Names of that form
 * are reserved: no password user may take one, so a token can never act as a person's account.
 */
export const SERVICE_ACCOUNT_PREFIX = 'system:serviceaccount:';

/** Kubernetes' rules: a namespace is a DNS label, a service account's name a DNS subdomain. */
const NAMESPACE = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;
const NAME = /^[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?$/;
/** The users table's limit: the few names longer than it (a 253-character account) cannot be principals. */
const MAX_USERNAME = 255;

export const isReservedUsername = (username: string) => username.startsWith(SERVICE_ACCOUNT_PREFIX);

/** The namespace and name of a valid service-account username, else null. */
export function parseServiceAccountUsername(username: string): { namespace: string; name: string } | null {
  if (!isReservedUsername(username) || username.length > MAX_USERNAME) return null;
  const [namespace, name, ...rest] = username.slice(SERVICE_ACCOUNT_PREFIX.length).split(':');
  if (rest.length > 0 || namespace === undefined || name === undefined || !NAMESPACE.test(namespace) || !NAME.test(name)) return null;
  return { namespace, name };
}

/** The username of the service account `name` in `namespace`, or null when either is not a valid name. */
export function serviceAccountUsername(namespace: string, name: string): string | null {
  const username = `${SERVICE_ACCOUNT_PREFIX}${namespace}:${name}`;
  return parseServiceAccountUsername(username) ? username : null;
}
