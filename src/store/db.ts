import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { migrationSource } from '../../migrations/index.js';

export type Db = Knex;

export interface DbOptions {
  url: string;
  poolSize?: number;
}

function sqliteFilename(url: string): string {
  const filename = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  if (!filename) throw new Error('db.url: sqlite: needs a file path, e.g. sqlite:./data/conveyor.db');
  return filename;
}

function createSqlite(url: string): Knex {
  const filename = sqliteFilename(url);
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true });
  const db = knexFactory({
    client: 'better-sqlite3',
    connection: { filename },
    useNullAsDefault: true,
    // better-sqlite3 is synchronous and SQLite has one writer: a single connection serialises
    // this process's work without SQLITE_BUSY, and WAL lets other processes (conveyor reap) read meanwhile.
    pool: {
      min: 1,
      max: 1,
      afterCreate(conn: { pragma(sql: string): unknown }, done: (err: Error | null, conn: unknown) => void) {
        conn.pragma('journal_mode = WAL');
        conn.pragma('synchronous = FULL');
        conn.pragma('busy_timeout = 5000');
        done(null, conn);
      },
    },
  });
  // knex opens SQLite transactions with a deferred BEGIN; a deferred reader that later writes can fail
  // with SQLITE_BUSY when another process wrote meanwhile. Every transaction here writes, so take the
  // write lock up front (BEGIN IMMEDIATE) and let busy_timeout queue the processes instead.
  const client = db.client as { transaction: (...args: unknown[]) => { begin: unknown; query: (conn: unknown, sql: string) => unknown } };
  const openTransaction = client.transaction.bind(client);
  client.transaction = (...args: unknown[]) => {
    const trx = openTransaction(...args);
    trx.begin = (conn: unknown) => trx.query(conn, 'BEGIN IMMEDIATE;');
    return trx;
  };
  return db;
}

function createMysql(url: string, poolSize: number): Knex {
  const parsed = new URL(url);
  return knexFactory({
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
    },
    pool: {
      min: 0,
      max: poolSize,
      // Claims use SKIP LOCKED; under REPEATABLE READ two thirds of concurrent claims deadlocked (measured).
      afterCreate(conn: { query(sql: string, cb: (err: Error | null) => void): void }, done: (err: Error | null, conn: unknown) => void) {
        conn.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED', (err) => done(err, conn));
      },
    },
    acquireConnectionTimeout: 10_000,
  });
}

export function createDb({ url, poolSize = 16 }: DbOptions): Knex {
  if (url.startsWith('sqlite:')) return createSqlite(url);
  if (url.startsWith('mysql://') || url.startsWith('mysql2://')) return createMysql(url, poolSize);
  throw new Error(`db.url: unsupported scheme in "${url.split('://')[0]}"; use sqlite:<path> or mysql://user:pass@host:3306/db`);
}

/** Applies pending migrations under knex's migration lock, so many pods can start at once. */
export async function migrate(db: Knex): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({ migrationSource })) as [number, string[]];
  return applied;
}

export async function ping(db: Knex): Promise<void> {
  await db.raw('select 1');
}
