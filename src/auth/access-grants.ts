import type { Knex } from 'knex';
import { v4 as uuidv4 } from 'uuid';
import { conflict, invalid } from '../queue/errors.js';
import { assertManagedByOrFree, decodeManager, encodeManager, type DeletionPolicy, type ManagedBy } from '../queue/managed-by.js';
import { listGrants, type GrantRow } from '../store/grants.js';
import { deleteManagedGrant, insertManagedGrant, setGrantManager } from '../store/managed-grants.js';
import { findUserByName } from '../store/users.js';
import type { GrantSpec, UserService } from './users.js';

/** The identity of a grant: the grants table's unique key without the user. */
const identity = (g: { action: string; topic_pattern: string; consumer_group: string }) => `${g.action}\u0000${g.topic_pattern}\u0000${g.consumer_group}`;
const describeGrant = (g: GrantSpec | GrantRow) => (g.action === 'consume' ? `consume as "${g.consumer_group}" on ${g.topic_pattern}` : `${g.action} on ${g.topic_pattern}`);

/** A write races the HTTP API for the same grant at most this often before it gives up (the reconcile is retried). */
const MAX_ROUNDS = 5;

export interface AppliedGrants {
  changed: boolean;
  userId: string;
  added: string[];
  removed: string[];
  adopted: string[];
}

/**
 * The grants a Kubernetes resource (a ConveyorAccess) holds for a service account's principal (docs/auth.md,
 * "Access granted in Git"): the resource's set replaces the grants it manages; grants made through the HTTP API
 * stay, except one identical to a spec grant, which the resource adopts.
 */
export class AccessGrantService {
  constructor(
    private readonly db: Knex,
    private readonly users: UserService,
    private readonly now: () => number = Date.now,
  ) {}

  /** Who manages the principal's grants now (any of them), and whether a spec grant already exists unmanaged. */
  async holder(username: string, desired: GrantSpec[]): Promise<{ exists: boolean; manager: ManagedBy | null }> {
    const user = await findUserByName(this.db, username);
    if (!user) return { exists: false, manager: null };
    const rows = await listGrants(this.db, user.id);
    const wanted = new Set(desired.map(identity));
    const managed = rows.find((r) => r.managed_by !== '');
    return { exists: rows.some((r) => r.managed_by === '' && wanted.has(identity(r))), manager: managed ? decodeManager(managed.managed_by) : null };
  }

  /** Makes `manager`'s grants of `username` exactly `desired`, creating the principal when needed. */
  async apply(username: string, desired: GrantSpec[], manager: ManagedBy): Promise<AppliedGrants> {
    const userId = await this.users.ensureServiceAccount(username);
    if (!userId) throw invalid(`"${username}" is the name of a user with a password, not a service account's principal`);
    const owner = encodeManager(manager);
    const result: AppliedGrants = { changed: false, userId, added: [], removed: [], adopted: [] };
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const rows = await listGrants(this.db, userId);
      const byIdentity = new Map(rows.map((r) => [identity(r), r]));
      const wanted = new Set(desired.map(identity));
      let raced = false;
      for (const grant of desired) {
        const row = byIdentity.get(identity(grant));
        if (row?.managed_by === owner) continue;
        if (row) {
          assertManagedByOrFree(row.managed_by, owner, `the grant "${describeGrant(grant)}" of ${username}`);
          if (await setGrantManager(this.db, row.id, row.managed_by, owner)) result.adopted.push(describeGrant(grant));
          else raced = true;
          continue;
        }
        const inserted = await insertManagedGrant(this.db, { id: uuidv4(), user_id: userId, ...grant, created_at: this.now(), managed_by: owner });
        if (inserted) result.added.push(describeGrant(grant));
        else raced = true; // the HTTP API made it meanwhile: adopt it next round
      }
      for (const row of rows) {
        if (row.managed_by !== owner || wanted.has(identity(row))) continue;
        await deleteManagedGrant(this.db, row.id, owner);
        result.removed.push(describeGrant(row));
      }
      if (!raced) {
        result.changed = result.added.length + result.removed.length + result.adopted.length > 0;
        return result;
      }
    }
    throw conflict(`the grants of ${username} kept changing through the HTTP API while they were applied; retrying`);
  }

  /** The resource is gone: Delete removes the grants it managed, Retain leaves them to the HTTP API. */
  async release(username: string, manager: ManagedBy, policy: DeletionPolicy): Promise<void> {
    const user = await findUserByName(this.db, username);
    if (!user) return;
    const owner = encodeManager(manager);
    for (const row of await listGrants(this.db, user.id)) {
      if (row.managed_by !== owner) continue;
      if (policy === 'Delete') await deleteManagedGrant(this.db, row.id, owner);
      else await setGrantManager(this.db, row.id, owner, '');
    }
  }
}
