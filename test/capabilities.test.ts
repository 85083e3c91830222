import type { Knex } from 'knex';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../src/log/logger.js';
import { capabilities, capabilitiesOf, recordGalera } from '../src/store/capabilities.js';
import { createDb } from '../src/store/db.js';
import { describeEachEngine, type TestDatabase } from './helpers/engines.js';

/** The capability table (src/store/capabilities.ts): one per pool, shared with its transactions, probed once. */
describeEachEngine('capabilities', (engine) => {
  let database: TestDatabase;
  let db: Knex;
  beforeAll(async () => {
    database = await engine.createDatabase();
    db = createDb({ url: database.url, poolSize: 2, logger: createLogger('silent') });
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('says what the engine can do, asks the server once, and is the same table inside a transaction', async () => {
    const mysql = engine.name === 'mysql';
    expect(capabilities(db)).toMatchObject({ dialect: engine.name, singleWriter: !mysql, rowLocks: mysql, skipLocked: mysql, inProcess: !mysql, galera: false });
    const probed = capabilitiesOf(db);
    expect(capabilitiesOf(db)).toBe(probed);
    const caps = await probed;
    const [rows] = mysql ? ((await db.raw('SELECT VERSION() AS version')) as [Array<{ version: string }>]) : [[]];
    const mariaDb = /mariadb/i.test(rows[0]?.version ?? '');
    expect(caps.deleteReturning).toBe(!mysql || mariaDb);
    expect(caps.tableValueConstructor).toBe(!mysql || mariaDb);
    await db.transaction(async (trx) => {
      expect(capabilities(trx)).toBe(capabilities(db));
      expect(await capabilitiesOf(trx)).toBe(caps);
    });
    recordGalera(db);
    await db.transaction(async (trx) => expect(capabilities(trx).galera).toBe(true));
  });
});
