import { conflict } from './errors.js';

/**
 * The Kubernetes custom resource that owns a catalog row. Kubernetes wins: while a row is managed, the HTTP
 * API refuses to change it and the controller puts it back to the resource's spec.
 */
export interface ManagedBy {
  kind: string;
  namespace: string;
  name: string;
}

/** Stored in the rows' `managed_by` column as `Kind/namespace/name` ("" = not managed). */
export const encodeManager = (m: ManagedBy): string => `${m.kind}/${m.namespace}/${m.name}`;

export function decodeManager(stored: string): ManagedBy | null {
  const [kind, namespace, ...rest] = stored.split('/');
  if (!kind || namespace === undefined || rest.length === 0) return null;
  return { kind, namespace, name: rest.join('/') };
}

/** How people read a manager: `TopicConfig team-a/orders`, as kubectl names a resource. */
export function describeManager(stored: string): string {
  const m = decodeManager(stored);
  return m ? `${m.kind} ${m.namespace}/${m.name}` : stored;
}

/** Guard for every change that does not come from the managing resource itself. */
export function assertNotManaged(managedBy: string | undefined, what: string): void {
  if (managedBy) throw conflict(`${what} is managed by ${describeManager(managedBy)}; change that Kubernetes resource instead`);
}

/**
 * Guard for the controller's own removals: the row may have moved to another resource (the oldest of two
 * resources for one topic wins) since this one last looked, and then it is not this resource's to remove.
 */
export function assertManagedByOrFree(managedBy: string | undefined, owner: string, what: string): void {
  if (managedBy && managedBy !== owner) assertNotManaged(managedBy, what);
}

/** What happens to a resource's rows when the resource is deleted (`spec.deletionPolicy`). */
export type DeletionPolicy = 'Delete' | 'Retain';
