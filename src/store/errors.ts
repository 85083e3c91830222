import type { Knex } from 'knex';
import { conflictKind, isConnectionError, type ConflictKind } from './dialect.js';

/**
 * The two ways the database fails to serve, as the store hands them out: every consumer (HTTP, gRPC, the
 * controller, the reapers) maps these types, never a driver's codes. Made at the store's edge:
 * - a statement run outside a transaction, and taking a connection from the pool (knex's KnexTimeoutError
 *   included): typedErrors below, installed on every pool by createDb;
 * - a transaction or a retried statement: withDbRetry (src/store/retry.ts) on its way out. Inside it the
 *   retry policy still reads the driver's error (conflictKind of driverErrorOf), and a transaction's own
 *   statements keep the driver's errors, so code inside one can still tell a unique violation (isUniqueViolation).
 * Errors of other kinds (a unique violation, a domain refusal, a bug) leave the store as they are.
 * The message is fixed and safe to log; the driver's error is the `cause` (logged through safeError).
 */
export class DatabaseUnavailable extends Error {
  constructor(options: { cause: unknown }) {
    super('database unavailable', options);
    this.name = 'DatabaseUnavailable';
  }
}

/**
 * The database refused for now and a retry soon may get through: the store's retries ran out (conflicts, lock
 * waits, a Galera node not ready, lost connections), or a statement outside them met a conflict, a lock wait
 * or a node not ready. Clients are told to retry after `retryAfterSeconds`.
 */
export class DatabaseBusy extends Error {
  readonly retryAfterSeconds = 1;

  constructor(
    readonly kind: ConflictKind,
    /** How many times the store ran it: 1 for a statement outside the retry policy. */
    readonly attempts: number,
    options: { cause: unknown },
  ) {
    super(attempts > 1 ? `database busy: ${kind} on each of ${attempts} attempts` : `database busy: ${kind}`, options);
    this.name = 'DatabaseBusy';
  }
}

/** What the transports answer for DatabaseBusy (HTTP 503 with Retry-After, gRPC UNAVAILABLE). */
export const DATABASE_BUSY_MESSAGE = 'database busy, retry';
/** What the transports answer for DatabaseUnavailable (HTTP 503, gRPC UNAVAILABLE). */
export const DATABASE_UNAVAILABLE_MESSAGE = 'database unavailable';

/** Typed errors that stand for one driver error (not retries that ran out): see driverErrorOf. */
const standIns = new WeakSet<object>();

/**
 * A driver error as it leaves the store: DatabaseBusy for a conflict, a lock wait, a node not ready or a
 * statement stopped by the server; DatabaseUnavailable for a database that cannot serve (unreachable, out of
 * connections, a connection lost outside the retry policy, refusing writes, SQLite's file unusable); anything
 * else (typed already, a unique violation, a domain refusal) unchanged.
 */
export function typedError(err: unknown): unknown {
  if (err instanceof DatabaseBusy || err instanceof DatabaseUnavailable) return err;
  const kind = conflictKind(err);
  let typed: Error;
  if (kind !== undefined && kind !== 'connection_lost') typed = new DatabaseBusy(kind, 1, { cause: err });
  else if (isConnectionError(err)) typed = new DatabaseUnavailable({ cause: err });
  else return err;
  standIns.add(typed);
  return typed;
}

/**
 * The driver's error that a typed error made by typedError stands for (its cause); any other error itself,
 * including a DatabaseBusy of retries that ran out. For the retry policy, which classifies driver errors, and
 * for reports that quote the driver as they did before the store typed its errors (a CLI's one line).
 */
export function driverErrorOf(err: unknown): unknown {
  return typeof err === 'object' && err !== null && standIns.has(err) ? (err as Error).cause : err;
}

interface PoolClient {
  query(connection: unknown, obj: unknown): Promise<unknown>;
  acquireConnection(): Promise<unknown>;
}

/**
 * Makes a pool's statements outside a transaction, and its connection acquisitions, fail with typed errors.
 * On the pool's own client object only: knex builds each transaction's client from the class, so statements
 * inside a transaction keep the driver's errors until the transaction leaves withDbRetry.
 */
export function typedErrors(db: Knex): Knex {
  const client = db.client as PoolClient;
  const query = client.query.bind(client);
  const acquireConnection = client.acquireConnection.bind(client);
  client.query = (connection, obj) => query(connection, obj).catch((err: unknown) => Promise.reject(typedError(err)));
  client.acquireConnection = () => acquireConnection().catch((err: unknown) => Promise.reject(typedError(err)));
  return db;
}
