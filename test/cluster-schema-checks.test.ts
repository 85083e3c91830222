import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import mysql from 'mysql2/promise';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../src/log/logger.js';
import { startServer, type RunningServer } from '../src/server.js';
import { checkClusterSchema, clusterSchemaProblems } from '../src/store/galera-checks.js';
import { engineByName, type TestDatabase } from './helpers/engines.js';
import { Api } from './helpers/http.js';
import { testConfig } from './helpers/server.js';

/**
 * The start-up checks and readiness for Galera (src/store/galera-checks.ts), on the machine's plain MariaDB:
 * detection says "not Galera" there, so the Galera branch is entered by telling the check so; a plain
 * server's wsrep_ready is OFF, which is what a node outside the primary component reports. The same
 * checks on a real cluster: test/galera-*.test.ts.
 */

const mysqlUrl = inject('mysqlUrl');
const ROOT = new URL('..', import.meta.url).pathname;

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line.trim()) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger('info', stream), lines };
}

function healthCheck(port: number): Promise<string> {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(healthProtoPath, { keepCase: true, enums: String, defaults: true })) as any;
  const client = new pkg.grpc.health.v1.Health(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) =>
    client.Check({ service: '' }, (err: Error | null, res: { status: string }) => {
      client.close();
      return err ? reject(err) : resolve(res.status);
    }),
  );
}

(mysqlUrl ? describe : describe.skip)('Galera start-up checks and readiness [mysql]', () => {
  let database: TestDatabase | undefined;
  let server: RunningServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
    await database?.drop();
    database = undefined;
  });

  async function start(): Promise<{ api: Api; lines: Array<Record<string, unknown>> }> {
    const { logger, lines } = capture();
    server = await startServer(testConfig(database!.url), { logger });
    return { api: new Api(`http://127.0.0.1:${server.httpPort}`), lines };
  }

  it("every table of Conveyor's own schema is InnoDB with a primary key, knex's bookkeeping included", async () => {
    database = await engineByName.mysql.createDatabase();
    const { api, lines } = await start();
    expect(await clusterSchemaProblems(server!.db)).toEqual([]);
    const [tables] = (await server!.db.raw('SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()')) as [Array<{ name: string }>];
    expect(tables.map((t) => t.name)).toEqual(expect.arrayContaining(['messages', 'leases', 'knex_migrations', 'knex_migrations_lock']));
    // A plain server: no Galera line, no warning, ready.
    expect(lines.filter((l) => /Galera/.test(String(l.msg)))).toEqual([]);
    expect((await api.get('/readyz')).status).toBe(200);
  });

  it('a table without a primary key or not InnoDB: a warning on a plain server, a refusal naming it on a Galera node', async () => {
    database = await engineByName.mysql.createDatabase();
    const conn = await mysql.createConnection(database.url);
    try {
      await conn.query('CREATE TABLE legacy_notes (note TEXT) ENGINE=MyISAM');
    } finally {
      await conn.end();
    }
    const { lines } = await start();
    const warning = lines.find((l) => l.msg === 'tables a Galera cluster would not replicate (only InnoDB tables with a primary key are)');
    expect(warning?.level).toBe('warn');
    expect(warning?.problems).toEqual(['table legacy_notes uses the MyISAM engine, not InnoDB', 'table legacy_notes has no primary key']);
    await expect(checkClusterSchema(server!.db, createLogger('silent'), { galera: true })).rejects.toThrow(
      /^refusing to start on a Galera cluster: table legacy_notes uses the MyISAM engine, not InnoDB; table legacy_notes has no primary key\. /,
    );
  });

  it('on a Galera node, /readyz and the gRPC health service follow wsrep_ready', async () => {
    database = await engineByName.mysql.createDatabase();
    const { api } = await start();
    expect((await api.get('/readyz')).status).toBe(200);
    expect(await healthCheck(server!.grpcPort)).toBe('SERVING');
    const { logger, lines } = capture();
    // As startServer does on a Galera node; a plain server then reports what a node outside the primary component does.
    await checkClusterSchema(server!.db, logger, { galera: true });
    expect(lines.find((l) => l.msg === 'database is a Galera cluster node')).toMatchObject({ level: 'info', galera: true, ready: 'OFF' });
    const res = await api.get('/readyz');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: 'database node not ready: wsrep_ready is OFF' });
    const deadline = Date.now() + 10_000;
    let status = await healthCheck(server!.grpcPort);
    while (status !== 'NOT_SERVING' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      status = await healthCheck(server!.grpcPort);
    }
    expect(status).toBe('NOT_SERVING');
  });
});

describe('statements a Galera cluster refuses', () => {
  function sources(dir: string): string[] {
    return readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
    });
  }

  it('no code uses GET_LOCK, LOCK TABLES or a non-InnoDB engine', () => {
    const offending: string[] = [];
    for (const file of [...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'migrations'))]) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          // Comments may name them (to say why they are gone); code may not.
          if (/^\s*(\*|\/\/)/.test(line)) return;
          if (/GET_LOCK\s*\(|RELEASE_LOCK\s*\(|LOCK\s+TABLES|ENGINE\s*=\s*(?!InnoDB)\w+/i.test(line)) offending.push(`${file}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(offending).toEqual([]);
  });
});
