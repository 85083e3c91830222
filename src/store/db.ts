import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { migrationSource } from '../../migrations/index.js';
import { createLeasesTable } from '../../migrations/20261123020000_leases.js';
import { createLogger, type Logger } from '../log/logger.js';
import { statementShape } from '../log/redact.js';
import { RepeatedFailure, type ErrorSummary } from '../log/repeated.js';
import { capabilities } from './capabilities.js';
import { typedErrors } from './errors.js';
import { LeaseBusy, withLease } from './leases.js';
import { withDbRetry } from './retry.js';
import { DEFAULT_SQLITE_LOCK_WAIT_MS, sqliteClient } from './sqlite-client.js';

export type Db = Knex;

export interface DbOptions {
  url: string;
  poolSize?: number;
  /**
   * How long a statement waits for a lock, in seconds (db.lock_wait_timeout). MySQL/MariaDB: the pool sessions'
   * innodb_lock_wait_timeout; 0 or absent keeps the server's (50 s by default). SQLite: how long a statement
   * waits for another process's write lock; 0 or absent is 5 s. A wait that times out is retried (src/store/retry.ts).
   */
  lockWaitTimeoutSeconds?: number;
  /** Where knex's own warnings and connection failures go (as JSON lines); default: info on stdout. */
  logger?: Logger;
  /**
   * The tracker of connection failures, when one outlives the pool: the controller opens a new pool on every
   * reconnect attempt, and each would otherwise log its first failure again.
   */
  connectionFailures?: RepeatedFailure;
}

/** What the start-up line and `config check` say about a db.url: the engine and where, never credentials. */
export interface DbDescription {
  kind: 'sqlite' | 'mysql';
  /** sqlite: the file's absolute path; mysql: host:port/database. */
  location: string;
}

/** Names the scheme only: whatever follows it may be credentials (`user:secret@host` has no scheme at all). */
function unsupportedScheme(url: string): Error {
  const scheme = /^[a-z][a-z0-9+.-]{0,19}(?=:)/i.exec(url)?.[0];
  const what = scheme ? `unsupported scheme "${scheme}"` : 'no scheme';
  return new Error(`db.url: ${what}; use sqlite:<path> or mysql://user:pass@host:3306/db`);
}

/** Throws the same error createDb would for a db.url it cannot open. */
export function describeDb(url: string): DbDescription {
  if (url.startsWith('sqlite:')) {
    const filename = sqliteFilename(url);
    return { kind: 'sqlite', location: filename === ':memory:' ? filename : resolve(filename) };
  }
  if (url.startsWith('mysql://') || url.startsWith('mysql2://')) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new Error('db.url: not a valid URL; expected mysql://user:pass@host:3306/db');
    }
    return { kind: 'mysql', location: `${parsed.hostname}:${parsed.port || 3306}/${decodeURIComponent(parsed.pathname.replace(/^\//, ''))}` };
  }
  throw unsupportedScheme(url);
}

/** "Error: connect ECONNREFUSED 127.0.0.1:3306\n    at ..." -> its first line without the class name, and a code. */
function errorOfText(text: string): ErrorSummary {
  const message = text.split('\n')[0].replace(/^\w*Error: /, '').trim();
  const code = /\b(E[A-Z]{3,}|ER_[A-Z_]+|PROTOCOL_[A-Z_]+)\b/.exec(message)?.[1] ?? (/^Connection lost\b/.test(message) ? 'PROTOCOL_CONNECTION_LOST' : undefined);
  return code ? { message, code } : { message };
}

/**
 * knex prints through `console.log` unless given `log` functions: plain-text lines such as
 * "Acquire connection error: <stack>" on every failed query while the database is away. Here every knex
 * message becomes a JSON line of the service's logger: connection failures go to one RepeatedFailure (one
 * line, then a count every 30 s, then "recovered" when a new connection opens), anything else is logged once
 * per call without stack lines. Query tracing carries a statement's shape only, never its text or values.
 */
function knexLog(logger: Logger, connection: RepeatedFailure): Knex.Config['log'] {
  const firstLine = (message: unknown) => String(message).split('\n')[0];
  return {
    warn(message: unknown) {
      const text = String(message);
      const failure = /^(?:Acquire connection error|Connection Error): ([\s\S]*)$/.exec(text);
      if (failure) return connection.fail(errorOfText(failure[1]));
      logger.warn({ source: 'knex' }, firstLine(text));
    },
    error(message: unknown) {
      logger.error({ source: 'knex' }, firstLine(message));
    },
    deprecate(message: unknown) {
      logger.warn({ source: 'knex', deprecation: true }, firstLine(message));
    },
    // With log.level trace (knex's `debug`), one line per query: its shape and how many values it binds,
    // never the SQL text (a raw statement may inline a literal) or a value.
    debug(message: unknown) {
      if (!logger.isLevelEnabled('trace')) return;
      for (const query of Array.isArray(message) ? message : [message]) {
        const sql = typeof query === 'string' ? query : (query as { sql?: unknown } | null)?.sql;
        const bindings = (query as { bindings?: unknown } | null)?.bindings;
        logger.trace({ source: 'knex', statement: typeof sql === 'string' ? statementShape(sql) : undefined, bindings: Array.isArray(bindings) ? bindings.length : 0 }, 'query');
      }
    },
  };
}

/** One connection tracker per pool: a newly opened connection means the database is back. */
function trackConnections(db: Knex, connection: RepeatedFailure): Knex {
  const client = db.client as { acquireRawConnection: () => Promise<unknown> };
  const acquireRaw = client.acquireRawConnection.bind(client);
  client.acquireRawConnection = async () => {
    const raw = await acquireRaw();
    connection.ok();
    return raw;
  };
  return db;
}

function sqliteFilename(url: string): string {
  const filename = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  if (!filename) throw new Error('db.url: sqlite: needs a file path, e.g. sqlite:./data/conveyor.db');
  return filename;
}

/** Shared by both engines: logging through pino, and error messages with SQL text but never bound values. */
function commonConfig(logger: Logger, connection: RepeatedFailure): Pick<Knex.Config, 'log' | 'compileSqlOnError' | 'debug'> {
  // knex prefixes a failed query's error message with the query; by default with the values interpolated
  // (payloads, keys), which would then reach the logs of whoever logs the error.
  return { log: knexLog(logger, connection), compileSqlOnError: false, debug: logger.isLevelEnabled('trace') };
}

function createSqlite(url: string, common: Pick<Knex.Config, 'log' | 'compileSqlOnError' | 'debug'>, lockWaitTimeoutSeconds = 0): Knex {
  const filename = sqliteFilename(url);
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true });
  const sqlite = sqliteClient(lockWaitTimeoutSeconds > 0 ? lockWaitTimeoutSeconds * 1000 : DEFAULT_SQLITE_LOCK_WAIT_MS);
  return knexFactory({
    ...common,
    client: sqlite.Client as unknown as Knex.Config['client'],
    connection: { filename },
    useNullAsDefault: true,
    // better-sqlite3 is synchronous and SQLite has one writer: a single connection serialises
    // this process's work without SQLITE_BUSY, and WAL lets other processes (conveyor reap) read meanwhile.
    pool: { min: 1, max: 1, afterCreate: sqlite.afterCreate },
  });
}

function createMysql(url: string, poolSize: number, common: Pick<Knex.Config, 'log' | 'compileSqlOnError' | 'debug'>, lockWaitTimeoutSeconds = 0): Knex {
  const session = [
    'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED',
    // Strict whatever the server's default: a value too long for its column is an error, never stored cut short
    // (a server run with sql_mode '' would otherwise truncate silently).
    "SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@SESSION.sql_mode, ''), 'STRICT_ALL_TABLES')",
  ];
  if (lockWaitTimeoutSeconds > 0) session.push(`SET SESSION innodb_lock_wait_timeout = ${Math.max(1, Math.ceil(lockWaitTimeoutSeconds))}`);
  // Waits for a table (metadata) lock, such as an operator's LOCK TABLES or ALTER TABLE, end as row lock
  // waits do, in a retry and then "database busy": the server's own bound for them is a day.
  // MariaDB (10.3.4 on) also turns an IN list of 1,000 values or more into a join with a table of them, which it
  // planned as a scan of the whole table (a batch of 1,000 ids: the largest ack batch, a reaper's or a purge's),
  // locking every row it read in a locking read, and in no fixed order. Our lists that long are of message ids:
  // as a list each is a range on the primary key, read in key order. MySQL skips the MariaDB-only comment.
  session.push('SET SESSION lock_wait_timeout = @@SESSION.innodb_lock_wait_timeout /*M!100304 , SESSION in_predicate_conversion_threshold = 0 */');
  const parsed = new URL(url);
  return knexFactory({
    ...common,
    client: 'mysql2',
    connection: {
      host: parsed.hostname,
      port: Number(parsed.port || 3306),
      user: decodeURIComponent(parsed.username),
      password: decodeURIComponent(parsed.password),
      database: decodeURIComponent(parsed.pathname.replace(/^\//, '')),
      charset: 'utf8mb4',
      // Timestamps are epoch milliseconds in BIGINT columns; they fit a JS number exactly.
      supportBigNumbers: false,
      // knex sends text queries only, never prepared statements, yet mysql2 preallocates its statement cache
      // (four arrays of this many slots) on every connection: 0.5 MB each at its default of 16,000, which
      // every full garbage collection then scans (docs/benchmark.md, ninth round).
      maxPreparedStatements: 16,
      // The ordering-key paths send a transaction's statements as one text in one round trip
      // (src/store/statement.ts, runInOneTrip). Every statement the service sends is its own text, values
      // bound through placeholders that mysql2 escapes, so no input can add a statement.
      multipleStatements: true,
    },
    pool: {
      min: 0,
      max: poolSize,
      // Claims use SKIP LOCKED; under REPEATABLE READ two thirds of concurrent claims deadlocked (measured).
      afterCreate(conn: { query(sql: string, cb: (err: Error | null) => void): void }, done: (err: Error | null, conn: unknown) => void) {
        const next = (i: number): void => {
          if (i === session.length) return done(null, conn);
          conn.query(session[i], (err) => (err ? done(err, conn) : next(i + 1)));
        };
        next(0);
      },
    },
    acquireConnectionTimeout: 10_000,
  });
}

export function createDb({ url, poolSize = 16, logger = createLogger('info'), connectionFailures, lockWaitTimeoutSeconds }: DbOptions): Knex {
  const { kind } = describeDb(url);
  const connection = connectionFailures ?? new RepeatedFailure(logger, { what: 'database connection', fields: { db: kind } });
  const common = commonConfig(logger, connection);
  return typedErrors(trackConnections(kind === 'sqlite' ? createSqlite(url, common, lockWaitTimeoutSeconds) : createMysql(url, poolSize, common, lockWaitTimeoutSeconds), connection));
}

const MIGRATION_LOCK_WAIT_MS = 60_000;

/**
 * Pods starting together on an empty database race knex's own bookkeeping: both create knex_migrations
 * (1050 table exists / 1062 lock row) or one finds the lock taken (knex throws MigrationLocked at once rather
 * than waiting). Those are "someone else is migrating": wait and try again; the loser then finds nothing to do.
 */
function isConcurrentMigration(err: unknown): boolean {
  const e = err as { name?: string; errno?: number; message?: string };
  const message = e?.message ?? '';
  // Only knex's own tables: a table of a migration that already exists is a migration applied half-way
  // (MySQL commits each DDL statement), whose own error is the one to report.
  const knexTable = /knex_migrations/i.test(message);
  return e?.name === 'MigrationLocked' || ((e?.errno === 1050 || e?.errno === 1062) && knexTable) || /knex_migrations\S*` already exists|table .?knex_migrations\S* already exists/i.test(message);
}

/**
 * One lease row (`migrations` in the leases table, src/store/leases.ts) around the whole migration, on both
 * engines. knex's own lock is not enough when pods start together on an empty database: both insert a row
 * into knex_migrations_lock (no unique key besides its auto-increment id), after which every
 * `UPDATE ... WHERE is_locked = 0` touches two rows and knex reports "already locked" forever. MySQL's
 * GET_LOCK served here before, but it is local to one node of a Galera cluster, so pods on two nodes both
 * migrated at once.
 * The leases table has to exist before the lease can be taken, and it is itself created by a migration: it is
 * created first with CREATE TABLE IF NOT EXISTS (pods racing here all succeed), and its migration only
 * records it. MySQL: the lease is taken on its own connection, outside the pool, so a pool of one still has a
 * connection to migrate and the renewals never queue behind a long ALTER. A migration cannot stop half-way,
 * so a lease lost meanwhile (renewals failing for 30 s) does not interrupt it; knex's own lock still guards.
 */
async function withMigrationLease<T>(db: Knex, run: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  await withDbRetry(db, () => createLeasesTable(db));
  const ownConnection = !capabilities(db).singleWriter;
  const leaseDb = ownConnection ? knexFactory({ ...db.client.config, pool: { min: 1, max: 1 } }) : db;
  try {
    return await withLease(leaseDb, 'migrations', { waitMs: MIGRATION_LOCK_WAIT_MS, signal }, () => run());
  } catch (err) {
    if (err instanceof LeaseBusy) throw new Error('timed out waiting for another process to finish database migrations (the "migrations" row of the leases table)');
    throw err;
  } finally {
    if (ownConnection) await leaseDb.destroy();
  }
}

/**
 * Applies pending migrations under the migrations lease and knex's migration lock, so many pods can start at
 * once. `signal` ends the wait for another pod's lease (the process is stopping); once the lease is held the
 * migrations run to the end, as one cannot stop half-way. A database a newer release migrated is used as it
 * is (see futureMigrations).
 */
export async function migrate(db: Knex, logger: Logger, signal?: AbortSignal): Promise<string[]> {
  return withMigrationLease(
    db,
    async () => {
      const future = await futureMigrations(db);
      if (future.length > 0) {
        logger.warn({ migrations: future }, 'the database was migrated by a newer release of conveyor (a rollback?): running on it without migrating');
        return [];
      }
      await freeAbandonedLock(db, logger);
      return migrateLatest(db);
    },
    signal,
  );
}

/**
 * Migrations applied to the database that this release does not know, all newer than its own: a rollback,
 * after a newer release migrated. Every migration only adds (tables, columns with defaults, indexes) and the
 * release before it runs on the result, so rolling back one release works: those migrations are left in
 * place, where the next upgrade finds them applied. (knex would refuse to start: "the migration directory is
 * corrupt".) Unknown migrations older than this release's newest are another history, which it refuses.
 */
async function futureMigrations(db: Knex): Promise<string[]> {
  if (!(await db.schema.hasTable('knex_migrations'))) return [];
  const known = await migrationSource.getMigrations([]);
  const unknown = (await db('knex_migrations').pluck('name')).map(String).filter((name) => !known.includes(name));
  const newest = known.at(-1) ?? '';
  const foreign = unknown.filter((name) => name <= newest);
  if (foreign.length > 0) {
    throw new Error(`the database holds migrations this release does not know and that are older than its newest (${foreign.join(', ')}): it was migrated by another build; refusing to run on it`);
  }
  return unknown.sort();
}

/**
 * knex takes its lock inside the migration's transaction, but MySQL commits at the first DDL statement, so a
 * process killed while migrating (an OOM kill, a probe's restart) leaves knex_migrations_lock taken for good,
 * and every later start would wait and fail. Whoever holds the migrations lease knows nobody else is
 * migrating (a holder that stopped renewing for 30 s has lost it), so a lock found taken here was abandoned.
 */
async function freeAbandonedLock(db: Knex, logger: Logger): Promise<void> {
  if (!(await db.schema.hasTable('knex_migrations_lock'))) return;
  const taken = await db('knex_migrations_lock').where({ is_locked: 1 }).first();
  if (!taken) return;
  logger.warn('knex_migrations_lock was left taken by a migration that stopped half-way; freeing it (the migrations lease shows nobody else is migrating)');
  await db.migrate.forceFreeMigrationsLock({ migrationSource });
}

async function migrateLatest(db: Knex): Promise<string[]> {
  const started = Date.now();
  for (;;) {
    try {
      const [, applied] = (await db.migrate.latest({ migrationSource })) as [number, string[]];
      return applied;
    } catch (err) {
      if (!isConcurrentMigration(err)) throw err;
      if (Date.now() - started > MIGRATION_LOCK_WAIT_MS) {
        throw new Error('database migrations are locked by another process for over 60s; if none is running, clear is_locked in knex_migrations_lock');
      }
      await new Promise((resolve) => setTimeout(resolve, 200 + Math.random() * 300));
    }
  }
}

export async function ping(db: Knex): Promise<void> {
  await db.raw('select 1');
}
