import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import mysql from 'mysql2/promise';

export type Engine = 'sqlite' | 'mysql';

/** A throwaway database for one bench run: its URL for the service, its server version, and a way to drop it. */
export interface BenchDatabase {
  engine: Engine;
  url: string;
  version: string;
  drop(): Promise<void>;
}

interface SqliteProbe {
  prepare(sql: string): { get(): unknown };
  close(): void;
}

export function sqliteDatabase(): BenchDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'conveyor-bench-'));
  // better-sqlite3 ships no types and knex is the only other user; the bench needs one call.
  const Database = createRequire(import.meta.url)('better-sqlite3') as new (file: string) => SqliteProbe;
  const probe = new Database(':memory:');
  const version = `SQLite ${(probe.prepare('select sqlite_version() as v').get() as { v: string }).v}`;
  probe.close();
  return {
    engine: 'sqlite',
    url: `sqlite:${join(dir, 'bench.db')}`,
    version,
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Creates a fresh database on the MySQL/MariaDB server of `serverUrl` (any database path in it is ignored). */
export async function mysqlDatabase(serverUrl: string): Promise<BenchDatabase> {
  const server = new URL(serverUrl);
  server.pathname = '/';
  const name = `conveyor_bench_${process.pid}_${Date.now()}`;
  const admin = await mysql.createConnection({
    host: server.hostname,
    port: Number(server.port || 3306),
    user: decodeURIComponent(server.username),
    password: decodeURIComponent(server.password),
  });
  let version: string;
  try {
    const [rows] = (await admin.query('SELECT VERSION() AS v')) as unknown as [Array<{ v: string }>];
    version = rows[0].v;
    version = /mariadb/i.test(version) ? `MariaDB ${version}` : `MySQL ${version}`;
    await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4`);
  } finally {
    await admin.end();
  }
  const url = new URL(server.href);
  url.pathname = `/${name}`;
  return {
    engine: 'mysql',
    url: url.href,
    version,
    drop: async () => {
      const conn = await mysql.createConnection({
        host: server.hostname,
        port: Number(server.port || 3306),
        user: decodeURIComponent(server.username),
        password: decodeURIComponent(server.password),
      });
      try {
        await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
      } finally {
        await conn.end();
      }
    },
  };
}
