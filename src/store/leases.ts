import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Knex } from 'knex';
import { dbNow } from './database-clock.js';
import { withDbRetry } from './retry.js';

/**
 * Named leases in the `leases` table (migrations/20261123020000_leases.ts): mutual exclusion between
 * processes sharing a database, on both engines and on a Galera cluster alike. MySQL's GET_LOCK was local to
 * the node it ran on, so on a multi-primary cluster two instances on two nodes both "held" a reaper lock.
 *
 * A lease is a row taken and renewed in ordinary short transactions under the store's retry policy: two
 * nodes taking one lease at once write the same row, Galera certifies one and the other's re-run finds the
 * lease held. Every acquisition raises `token` (a fencing token): a holder that was paused past its expiry
 * and lost the lease can tell from a lower token that its turn ended.
 *
 * Clocks: expiry is decided in the database's clock (UTC_TIMESTAMP / julianday), never the instances', so
 * instances with skewed clocks still agree. On a Galera cluster each node compares with its own clock, so
 * the database nodes' clocks must agree to well under the lease length (NTP; Galera expects it anyway).
 * A holder counts its own lease as gone from the moment it sent the request that last extended it plus the
 * lease length, on its monotonic clock: never later than the database's expiry.
 */
export const LEASE_TTL_MS = 30_000;
export const LEASE_RENEW_MS = 10_000;
const POLL_MS = 150;

export interface LeaseOptions {
  /** How long the lease lasts without a renewal. */
  ttlMs?: number;
  /** How often the holder renews it while its work runs (well under ttlMs: a renewal or two may fail). */
  renewMs?: number;
  /** How long to wait for another holder to finish (0: give up at once). */
  waitMs?: number;
  /** Ends the wait early (the process is stopping): the wait rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface Lease {
  readonly name: string;
  readonly holder: string;
  /** Rises on every acquisition of this name, by anyone. */
  readonly token: number;
  /** Until released, or until renewals failed for a whole lease length or found the lease taken over. */
  readonly held: boolean;
  /** Aborted (with LeaseLost) the moment `held` turns false other than by release: long work stops on it. */
  readonly signal: AbortSignal;
}

/** Another holder kept the lease for the whole wait. */
export class LeaseBusy extends Error {
  constructor(readonly lease: string) {
    super(`lease "${lease}" is held by another process`);
    this.name = 'LeaseBusy';
  }
}

/** The lease ended while its work ran: it could not be renewed in time, or another process took it over. */
export class LeaseLost extends Error {
  constructor(
    readonly lease: string,
    reason: string,
  ) {
    super(`lease "${lease}" was lost: ${reason}`);
    this.name = 'LeaseLost';
  }
}

/** Who holds a lease, for an operator reading the table: host, process, and a part unique to this acquisition. */
export function newHolder(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`.slice(-100);
}

/**
 * One attempt at the lease: taken when free, expired, or already this holder's (a re-run after a lost answer
 * finds its own row and takes it again, with a new token). Null while someone else holds it. Single
 * statements rather than one transaction: each is atomic by itself, and none holds SQLite's write lock
 * across the round trips of a transaction (processes sharing the file then queue on busy_timeout).
 */
export async function tryAcquireLease(db: Knex, name: string, ttlMs: number, holder: string): Promise<{ token: number } | null> {
  const now = dbNow(db);
  // First use of a name: an empty row to compete for; racing first uses all succeed (duplicates ignored).
  await withDbRetry(db, () => db('leases').insert({ name, holder: '', token: 0, expires_at: 0 }).onConflict('name').ignore());
  const taken = await withDbRetry(db, () =>
    db('leases')
      .where({ name })
      .andWhere((q) => q.where('expires_at', '<', db.raw(now)).orWhere({ holder }))
      .update({ holder, token: db.raw('token + 1'), expires_at: db.raw(`${now} + ?`, [ttlMs]) }),
  );
  if (taken === 0) return null;
  // The holder names this acquisition alone; the row is still ours unless it expired meanwhile (then: not taken).
  const row = await withDbRetry(db, () => db('leases').where({ name, holder }).first('token'));
  return row ? { token: Number(row.token) } : null;
}

/** Extends a lease this holder still has (same holder and token); false when it was taken over. */
export async function renewLease(db: Knex, name: string, holder: string, token: number, ttlMs: number): Promise<boolean> {
  const now = dbNow(db);
  return withDbRetry(db, async () => (await db('leases').where({ name, holder, token }).update({ expires_at: db.raw(`${now} + ?`, [ttlMs]) })) > 0);
}

/** Gives the lease back (only this holder's turn: holder and token must match); the token stays for the next. */
export async function releaseLease(db: Knex, name: string, holder: string, token: number): Promise<void> {
  await withDbRetry(db, () => db('leases').where({ name, holder, token }).update({ holder: '', expires_at: 0 }));
}

/**
 * Runs `work` while holding the named lease, renewing it every renewMs, and releases it afterwards (a
 * holder that crashed leaves it to lapse after ttlMs). Throws LeaseBusy when another holder kept it for all
 * of waitMs. Work that can stop half-way watches `lease.signal`; what cannot (a migration) runs to its end,
 * guarded by its own lock as well.
 */
/** Waits `ms`, or rejects with `signal`'s reason as soon as it is aborted. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  signal?.throwIfAborted();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export async function withLease<T>(db: Knex, name: string, options: LeaseOptions, work: (lease: Lease) => Promise<T>): Promise<T> {
  const ttlMs = options.ttlMs ?? LEASE_TTL_MS;
  const renewMs = options.renewMs ?? LEASE_RENEW_MS;
  const deadline = Date.now() + (options.waitMs ?? 0);
  const holder = newHolder();
  let sent = performance.now();
  let got = await tryAcquireLease(db, name, ttlMs, holder);
  while (!got && Date.now() < deadline) {
    await pause(POLL_MS / 2 + Math.random() * POLL_MS, options.signal);
    sent = performance.now();
    got = await tryAcquireLease(db, name, ttlMs, holder);
  }
  if (!got) throw new LeaseBusy(name);
  const token = got.token;
  const controller = new AbortController();
  let validUntil = sent + ttlMs;
  let released = false;
  let expiry: NodeJS.Timeout | undefined;
  const lose = (reason: string) => {
    if (!controller.signal.aborted) controller.abort(new LeaseLost(name, reason));
  };
  // Fires when the lease runs out on this holder's clock, even while a renewal hangs (a database that stopped
  // answering); each successful renewal moves it.
  const armExpiry = () => {
    clearTimeout(expiry);
    expiry = setTimeout(() => lose('not renewed within its lease time'), Math.max(0, validUntil - performance.now()));
    expiry.unref();
  };
  armExpiry();
  const lease: Lease = {
    name,
    holder,
    token,
    get held() {
      if (!released && performance.now() >= validUntil) lose('not renewed within its lease time');
      return !released && !controller.signal.aborted;
    },
    signal: controller.signal,
  };
  let renewing = false;
  const renew = async () => {
    if (renewing || released || controller.signal.aborted) return;
    renewing = true;
    const at = performance.now();
    try {
      if (await renewLease(db, name, holder, token, ttlMs)) {
        if (!controller.signal.aborted) {
          validUntil = at + ttlMs;
          armExpiry();
        }
      } else lose('taken over by another holder');
    } catch {
      // The database did not answer: the lease still holds until validUntil; the next tick tries again.
    } finally {
      renewing = false;
    }
  };
  const timer = setInterval(() => void renew(), renewMs);
  timer.unref();
  try {
    return await work(lease);
  } finally {
    clearInterval(timer);
    clearTimeout(expiry);
    released = true;
    // Only this turn's row is released (holder and token match), so releasing a lease lost meanwhile is
    // harmless. A release that fails (the database is away) costs nothing: the lease lapses after ttlMs.
    await releaseLease(db, name, holder, token).catch(() => {});
  }
}
