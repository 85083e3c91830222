import type { Knex } from 'knex';
import { capabilities } from './capabilities.js';
import { withDbRetry } from './retry.js';

/**
 * Galera replicates synchronously but applies asynchronously: a claim committed through node A is certified
 * cluster-wide, yet node B may apply it a few milliseconds later. A consumer whose dequeue went through one
 * pod (node A) and whose ack goes through another (node B) can then find nothing to ack. On a Galera pool this
 * waits until the node has applied every write set committed anywhere before now (a causal read,
 * wsrep_sync_wait for one statement only, so no pooled connection keeps it), and answers true so the caller
 * looks again. Elsewhere (plain MySQL/MariaDB, SQLite) every commit is visible at once: false, no query.
 * Only asked after a miss, so hits never pay the cluster round trip.
 */
export async function catchUpWithCluster(db: Knex): Promise<boolean> {
  if (!capabilities(db).galera) return false;
  await withDbRetry(db, () => db.raw('SET STATEMENT wsrep_sync_wait = 1 FOR SELECT 1 FROM leases LIMIT 1'));
  return true;
}
