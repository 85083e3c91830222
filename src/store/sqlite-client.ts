import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** How long a statement waits for SQLite's lock when db.lock_wait_timeout is 0: SQLite's customary busy timeout. */
export const DEFAULT_SQLITE_LOCK_WAIT_MS = 5_000;

/** The pauses of SQLite's own busy handler, then its last pause over and over. */
const PAUSES_MS = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];
/**
 * While the file stays locked, waiting statements meet SQLITE_BUSY every 100 ms at most and the retries of
 * the ones that gave up every 250 ms: a longer quiet spell means the lock-out ended without a write to say so.
 */
const LOCK_OUT_GAP_MS = 1_000;

/**
 * Another process (a second `serve`, `conveyor reap`, `conveyor migrate`) holding the file's write lock makes
 * a statement fail at once with SQLITE_BUSY (the connection's busy_timeout is 0), or SQLITE_BUSY_RECOVERY
 * while a crashed writer's WAL is recovered. Neither ran anything, so the same statement can be tried again.
 */
function isLockedOut(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_RECOVERY';
}

/**
 * Reads get through while another process holds the write lock (WAL): only a statement that took the lock
 * proves it free. Named by its first word; a statement of another shape (WITH ...) proves nothing.
 */
function tookTheLock(obj: unknown): boolean {
  const sql = (obj as { sql?: unknown } | null)?.sql;
  return typeof sql === 'string' && /^\s*(insert|update|delete|replace|begin|commit|create|alter|drop)\b/i.test(sql);
}

interface SqliteConnection {
  pragma(sql: string): unknown;
  close(): unknown;
}

interface SqliteStatement {
  reader: boolean;
  all(bindings: unknown[]): unknown[];
  run(bindings: unknown[]): { lastInsertRowid: number | bigint; changes: number };
}

interface PreparingConnection {
  prepare(sql: string): SqliteStatement;
}

interface KnexQuery {
  sql?: string;
  bindings?: unknown[];
  options?: unknown;
  response?: unknown;
  context?: unknown;
}

/**
 * Prepared statements kept per connection. Compiling a statement costs SQLite more than running it for the
 * short statements of a queue (a batch's lookup of 50 ordering lines: about 0.5 ms to compile, 0.1 ms to
 * run), and the same few hundred texts come back over and over: one per batch size of each statement.
 */
const STATEMENT_CACHE_SIZE = 500;

/**
 * The connection's page cache, in SQLite's unit for a size (negative: KiB): 2 MB, SQLite's own default, where
 * better-sqlite3 builds it with 16 MB. A rebalance of B-tree pages away from the end of a tree, which inserts
 * into and deletes from the middle of an index bring (an ordering key's line in `messages_ordering`), can
 * renumber its pages through a spare page number far past the file's end; the commit after it then walks the
 * whole cache for pages past the end. With 16 MB that walk was the largest single cost of an ordered enqueue
 * in SQLite (4 µs of about 100 per message, profiled); with 2 MB it is a sixth of that, and every phase of the
 * bench measured the same or faster (docs/performance.md). The OS keeps the file's pages cached besides.
 */
const PAGE_CACHE_SIZE = -2000;

/**
 * Temporary files in memory (SQLite's temp_store = MEMORY), above all statement journals: a statement inside a
 * transaction that may fail half-way (a multi-row INSERT under a unique index) keeps the pages it changes as
 * they were, so that it can be undone alone, and past 64 KiB SQLite writes them to a file of its own that it
 * creates, writes and deletes for that one statement. A group commit of ordered messages changes pages all over
 * `messages_ordering` and passed that mark at nearly every flush: five system calls and a file more per flush,
 * about 2 µs of every ordered enqueue's 27 in the store. The journal never outgrows the pages one statement
 * changes, and the service's larger deletes go in short transactions of their own (src/store/messages/remove.ts).
 */
const TEMP_STORE = 'MEMORY';

interface KnexTransaction {
  begin: (conn: unknown) => unknown;
  query: (conn: unknown, sql: string) => unknown;
}

interface KnexClient {
  _query(connection: unknown, obj: unknown): Promise<unknown>;
  _optSafeIntegers(options: unknown): boolean | undefined;
  _formatBindings(bindings: unknown[] | undefined): unknown[];
  transaction(...args: unknown[]): KnexTransaction;
}

// knex's own dialect, extended below; knex takes a client class in place of a dialect name.
const BetterSqlite3Client = createRequire(import.meta.url)('knex/lib/dialects/better-sqlite3/index.js') as new (config: object) => KnexClient;

export interface SqliteClient {
  /** The knex client class (knex builds each transaction's client from its prototype, so no per-object patches). */
  Client: new (config: object) => KnexClient;
  /** The pool's afterCreate: WAL, full fsync, a 2 MB page cache, temporary files in memory, and busy_timeout 0 (waits happen in the client instead). */
  afterCreate(conn: SqliteConnection, done: (err: Error | null, conn: unknown) => void): void;
}

/**
 * The knex client for one SQLite file, waiting for other processes' locks for at most lockWaitMs.
 *
 * The wait happens on a timer between attempts, not in SQLite: better-sqlite3 is synchronous, and SQLite's busy
 * handler would sleep on the event loop's thread, stalling every request, health check and gRPC stream of the
 * process for as long as another process holds the lock.
 *
 * The bound is the process's, not each statement's: all of a process's statements take turns on its one
 * connection, so if each waited lockWaitMs afresh, every attempt of every queued operation would wait in turn
 * and a request could hang for as long as the lock is held. Instead, once writes have found the file locked for
 * lockWaitMs without one getting through, each statement tries once and fails: operations run out of their
 * retries within a second and answer "database busy, retry". The first write that gets through ends that, and
 * so does a second in which no statement met the lock (all had given up: the next request waits afresh).
 */
export function sqliteClient(lockWaitMs: number): SqliteClient {
  /** Since when (performance.now(): a wall-clock step changes no wait) this process's writes find the file locked. */
  let lockedOutSince: number | undefined;
  let lastLockedOut = 0;

  async function waitForLock(attempt: number): Promise<boolean> {
    const now = performance.now();
    if (lockedOutSince === undefined || now - lastLockedOut > LOCK_OUT_GAP_MS) lockedOutSince = now;
    lastLockedOut = now;
    const left = lockedOutSince + lockWaitMs - now;
    if (left <= 0) return false;
    await sleep(Math.min(left, PAUSES_MS[Math.min(attempt, PAUSES_MS.length - 1)]));
    return true;
  }

  /** Per connection, most recently used last; a connection that is gone takes its statements with it. */
  const statements = new WeakMap<object, Map<string, SqliteStatement>>();

  function prepared(connection: PreparingConnection, sql: string): SqliteStatement {
    let cache = statements.get(connection);
    if (!cache) statements.set(connection, (cache = new Map()));
    let statement = cache.get(sql);
    if (statement) {
      cache.delete(sql);
    } else {
      statement = connection.prepare(sql);
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
    }
    cache.set(sql, statement);
    return statement;
  }

  class Client extends BetterSqlite3Client {
    /** knex's own, with each text compiled once per connection (a schema change recompiles inside SQLite). */
    private run(connection: PreparingConnection, obj: KnexQuery): KnexQuery {
      if (!obj.sql) throw new Error('The query is empty');
      if (this._optSafeIntegers(obj.options) !== undefined) throw new Error('per-query safeIntegers is not supported');
      const statement = prepared(connection, obj.sql);
      const bindings = this._formatBindings(obj.bindings);
      if (statement.reader) {
        obj.response = statement.all(bindings);
        return obj;
      }
      const response = statement.run(bindings);
      obj.response = response;
      obj.context = { lastID: response.lastInsertRowid, changes: response.changes };
      return obj;
    }

    override async _query(connection: unknown, obj: unknown): Promise<unknown> {
      if (!connection) throw new Error('No connection provided');
      for (let attempt = 0; ; attempt++) {
        try {
          const result = this.run(connection as PreparingConnection, obj as KnexQuery);
          if (tookTheLock(obj)) lockedOutSince = undefined;
          return result;
        } catch (err) {
          if (!isLockedOut(err) || !(await waitForLock(attempt))) throw err;
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
  }

  function afterCreate(conn: SqliteConnection, done: (err: Error | null, conn: unknown) => void): void {
    const started = performance.now();
    const setUp = (attempt: number): void => {
      try {
        // First, so that no statement of this connection ever waits inside SQLite (better-sqlite3 opens with 5 s).
        conn.pragma('busy_timeout = 0');
        // Switching a file to WAL (a new one, or one another tool made) needs it unlocked: waited for here.
        conn.pragma('journal_mode = WAL');
        conn.pragma('synchronous = FULL');
        conn.pragma(`cache_size = ${PAGE_CACHE_SIZE}`);
        conn.pragma(`temp_store = ${TEMP_STORE}`);
      } catch (err) {
        if (isLockedOut(err) && performance.now() - started < lockWaitMs) {
          setTimeout(() => setUp(attempt + 1), PAUSES_MS[Math.min(attempt, PAUSES_MS.length - 1)]);
          return;
        }
        // knex does not close a connection whose set-up failed.
        conn.close();
        done(err as Error, conn);
        return;
      }
      done(null, conn);
    };
    setUp(0);
  }

  return { Client, afterCreate };
}
