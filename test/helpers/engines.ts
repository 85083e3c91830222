import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { describe, inject } from 'vitest';

export type EngineName = 'sqlite' | 'mysql';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

export interface Engine {
  name: EngineName;
  /** A fresh, empty database for one test or suite: its own file (SQLite) or its own schema (MySQL). */
  createDatabase(): Promise<TestDatabase>;
}

function mysqlServerUrl(): string {
  return inject('mysqlUrl');
}

const sqlite: Engine = {
  name: 'sqlite',
  async createDatabase() {
    const dir = mkdtempSync(join(tmpdir(), 'conveyor-test-'));
    return { url: `sqlite:${join(dir, 'conveyor.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  },
};

const mysqlEngine: Engine = {
  name: 'mysql',
  async createDatabase() {
    const server = new URL(mysqlServerUrl());
    const name = `conveyor_t_${randomBytes(6).toString('hex')}`;
    const admin = await mysql.createConnection({
      host: server.hostname,
      port: Number(server.port || 3306),
      user: decodeURIComponent(server.username),
      password: decodeURIComponent(server.password),
    });
    await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    await admin.end();
    const url = new URL(server.toString());
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      drop: async () => {
        const conn = await mysql.createConnection({
          host: server.hostname,
          port: Number(server.port || 3306),
          user: decodeURIComponent(server.username),
          password: decodeURIComponent(server.password),
        });
        await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
        await conn.end();
      },
    };
  },
};

export function availableEngines(): Engine[] {
  return mysqlServerUrl() ? [sqlite, mysqlEngine] : [sqlite];
}

/**
 * Runs the same suite against SQLite and MySQL (MySQL only when the global setup found one; SQLite not in
 * the galera project, which runs these suites again on a Galera node).
 */
export function describeEachEngine(title: string, suite: (engine: Engine) => void): void {
  for (const engine of [sqlite, mysqlEngine]) {
    // Not registered at all there: the SQLite variant ran in the default project already.
    if (engine === sqlite && inject('mysqlOnly') === true) continue;
    const run = engine === sqlite || mysqlServerUrl() !== '';
    (run ? describe : describe.skip)(`${title} [${engine.name}]`, () => suite(engine));
  }
}

export const engineByName = { sqlite, mysql: mysqlEngine };
