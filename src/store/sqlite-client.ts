import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';

/** How long a statement waits for SQLite's lock when db.lock_wait_timeout is 0: SQLite's customary busy timeout. */
export const DEFAULT_SQLITE_LOCK_WAIT_MS = 5_000;

/** The pauses of SQLite's own busy handler, then its last pause over and over. */
const PAUSES_MS = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];

/**
 * Another process (a second `serve`, `conveyor reap`, `conveyor migrate`) holding the file's write lock makes
 * a statement fail at once with SQLITE_BUSY (the connection's busy_timeout is 0), or SQLITE_BUSY_RECOVERY
 * while a crashed writer's WAL is recovered. Neither ran anything, so the same statement can be tried again.
 */
function isLockedOut(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_RECOVERY';
}

interface KnexTransaction {
  begin: (conn: unknown) => unknown;
  query: (conn: unknown, sql: string) => unknown;
}

interface KnexClient {
  _query(connection: unknown, obj: unknown): Promise<unknown>;
  transaction(...args: unknown[]): KnexTransaction;
}

// knex's own dialect, extended below; knex takes a client class in place of a dialect name.
const BetterSqlite3Client = createRequire(import.meta.url)('knex/lib/dialects/better-sqlite3/index.js') as new (config: object) => KnexClient;

/**
 * The knex client for SQLite files. A class rather than patches on one client object: knex builds each
 * transaction's client from the class's prototype.
 */
export function sqliteClient(lockWaitMs: number): new (config: object) => KnexClient {
  return class SqliteClient extends BetterSqlite3Client {
    /**
     * Waits for SQLite's lock between attempts on a timer, not inside SQLite. better-sqlite3 is synchronous:
     * its busy handler sleeps on the event loop's thread, so a lock held elsewhere for seconds would stall
     * every request, health check and gRPC stream of the process for as long. Here only the statements that
     * need the database wait (they queue for the one connection). After lockWaitMs the last SQLITE_BUSY is
     * thrown, and the store's retry policy takes over, as after MySQL's lock wait timeout.
     */
    override async _query(connection: unknown, obj: unknown): Promise<unknown> {
      const deadline = Date.now() + lockWaitMs;
      for (let attempt = 0; ; attempt++) {
        try {
          return await super._query(connection, obj);
        } catch (err) {
          const left = deadline - Date.now();
          if (!isLockedOut(err) || left <= 0) throw err;
          await sleep(Math.min(left, PAUSES_MS[Math.min(attempt, PAUSES_MS.length - 1)]));
        }
      }
    }

    /**
     * knex opens SQLite transactions with a deferred BEGIN; a deferred reader that later writes fails with
     * SQLITE_BUSY_SNAPSHOT when another process wrote meanwhile, and no wait cures that. Every transaction
     * here writes, so it takes the write lock up front (BEGIN IMMEDIATE) and waits for it like any statement.
     * Nested transactions are savepoints and never call begin.
     */
    override transaction(...args: unknown[]): KnexTransaction {
      const trx = super.transaction(...args);
      trx.begin = (conn: unknown) => trx.query(conn, 'BEGIN IMMEDIATE;');
      return trx;
    }
  };
}
