import { afterEach, expect, it } from 'vitest';
import { migrationSource } from '../migrations/index.js';
import { describeEachEngine, type TestDatabase } from './helpers/engines.js';
import { captureLogger } from './helpers/log-capture.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * A rollback: the release before starts on a database a newer release migrated. It must run (the runbook's
 * "roll back a bad release"), not crash-loop on knex's "the migration directory is corrupt".
 */
describeEachEngine('migrations applied by a newer release', (engine) => {
  let database: TestDatabase | undefined;
  const servers: TestServer[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
    await database?.drop();
    database = undefined;
  });

  const migrated = async () => {
    database = await engine.createDatabase();
    const first = await startTestServer(engine, { database });
    const db = first.db;
    const record = (name: string) => db('knex_migrations').insert({ name, batch: 99, migration_time: new Date() });
    return { first, record, names: async () => (await db('knex_migrations').pluck('name')).map(String).sort() };
  };

  it('starts on them without migrating, says so, serves, and leaves them applied', async () => {
    const { first, record, names } = await migrated();
    const newer = ['29990101000000_from_a_newer_release', '29990102000000_and_another'];
    for (const name of newer) await record(name);
    const { logger, lines } = captureLogger();
    const rolledBack = await startTestServer(engine, { database, logger });
    servers.push(first, rolledBack);

    const warning = lines.find((l) => /migrated by a newer release/.test(l.msg));
    expect(warning).toMatchObject({ level: 'warn', migrations: newer });
    expect((await rolledBack.api.get('/readyz')).status).toBe(200);
    expect((await rolledBack.api.enqueue('rollback', 'still served')).status).toBe(201);
    expect(await names()).toEqual([...(await migrationSource.getMigrations([])), ...newer].sort());
  });

  it('refuses migrations it does not know that are older than its newest: another build migrated the database', async () => {
    const { first, record } = await migrated();
    servers.push(first);
    await record('20261122030000_from_another_build');
    await expect(startTestServer(engine, { database })).rejects.toThrow(
      /the database holds migrations this release does not know and that are older than its newest \(20261122030000_from_another_build\)/,
    );
  });
});
