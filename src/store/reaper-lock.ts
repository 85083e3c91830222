import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { engineOf } from './dialect.js';

const LEASE_MS = 10 * 60_000;
const POLL_MS = 100;

type Held = { release(): Promise<void> };

/**
 * MySQL/MariaDB: GET_LOCK on a connection held for the run. The lock is server-wide, so its name carries the
 * database name (two deployments, or two test databases, on one server never block each other), and it goes
 * away by itself when a crashed holder's connection closes.
 */
async function tryMysqlLock(db: Knex, name: string): Promise<Held | null> {
  const client = db.client as { acquireConnection(): Promise<unknown>; releaseConnection(conn: unknown): Promise<void> };
  const conn = await client.acquireConnection();
  try {
    const [[{ schema }]] = (await db.raw('SELECT DATABASE() AS `schema`').connection(conn)) as [[{ schema: string }]];
    const lockName = `conveyor:${schema}:${name}`.slice(0, 64);
    const [[{ got }]] = (await db.raw('SELECT GET_LOCK(?, 0) AS got', [lockName]).connection(conn)) as [[{ got: number }]];
    if (got === 1) {
      return {
        release: async () => {
          try {
            await db.raw('SELECT RELEASE_LOCK(?)', [lockName]).connection(conn);
          } finally {
            await client.releaseConnection(conn);
          }
        },
      };
    }
  } catch (err) {
    await client.releaseConnection(conn);
    throw err;
  }
  await client.releaseConnection(conn);
  return null;
}

/**
 * SQLite: a lease row in `settings`, taken and given back in BEGIN IMMEDIATE transactions, so processes
 * sharing the file (servers, `conveyor reap`) take turns. A crashed holder's lease lapses after LEASE_MS.
 */
async function trySqliteLease(db: Knex, name: string): Promise<Held | null> {
  const owner = randomUUID();
  const setting = `lease:${name}`;
  const taken = await db.transaction(async (trx) => {
    const row = await trx('settings').where({ name: setting }).first('value');
    const [holder, until] = String(row?.value ?? '').split('|');
    if (holder && Number(until) > Date.now()) return false;
    const value = `${owner}|${Date.now() + LEASE_MS}`;
    if (row) await trx('settings').where({ name: setting }).update({ value });
    else await trx('settings').insert({ name: setting, value, revision: 0 });
    return true;
  });
  if (!taken) return null;
  return {
    release: async () => {
      await db('settings').where({ name: setting }).andWhere('value', 'like', `${owner}|%`).update({ value: '' });
    },
  };
}

export class LockBusy extends Error {}

/**
 * Runs `work` while holding the named cross-instance lock. Waits up to `waitMs` for another holder to finish
 * (0: give up at once); throws LockBusy when it never got the lock.
 */
export async function withNamedLock<T>(db: Knex, name: string, waitMs: number, work: () => Promise<T>): Promise<T> {
  const tryLock = engineOf(db) === 'mysql' ? tryMysqlLock : trySqliteLease;
  const deadline = Date.now() + waitMs;
  let held = await tryLock(db, name);
  while (!held && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    held = await tryLock(db, name);
  }
  if (!held) throw new LockBusy(name);
  try {
    return await work();
  } finally {
    await held.release();
  }
}
