import type { Knex } from 'knex';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../src/log/logger.js';
import { createDb } from '../src/store/db.js';
import { runStatement } from '../src/store/statement.js';
import { describeEachEngine, type TestDatabase } from './helpers/engines.js';

/**
 * runStatement, which the group commit's INSERT and the ack batch's DELETE use: on MySQL outside a transaction
 * it hands the statement to mysql2 on a pooled connection, inside one it must stay on the transaction's
 * connection (else a rollback would not undo it, and the transaction would not see its own write).
 */
describeEachEngine('runStatement', (engine) => {
  let database: TestDatabase;
  let db: Knex;
  const count = async (on: Knex) => ((await runStatement(on, 'SELECT id FROM probe WHERE id > ?', [0])) as unknown[]).length;

  beforeAll(async () => {
    database = await engine.createDatabase();
    db = createDb({ url: database.url, poolSize: 4, logger: createLogger('silent') });
    await db.schema.createTable('probe', (t) => t.integer('id').primary());
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('returns the rows of a SELECT and reports what other statements changed', async () => {
    const inserted = await runStatement(db, 'INSERT INTO probe (id) VALUES (?), (?)', [1, 2]);
    if (engine.name === 'mysql') expect((inserted as { affectedRows: number }).affectedRows).toBe(2);
    expect(await runStatement(db, 'SELECT id FROM probe WHERE id IN (?, ?) ORDER BY id', [1, 2])).toEqual([{ id: 1 }, { id: 2 }]);
    expect(await runStatement(db, 'DELETE FROM probe WHERE id = ? RETURNING id', [2])).toEqual([{ id: 2 }]);
    expect(await count(db)).toBe(1);
  });

  it('runs inside a transaction on its connection: the transaction sees the write, a rollback undoes it', async () => {
    await expect(
      db.transaction(async (trx) => {
        const inserted = await runStatement(trx, 'INSERT INTO probe (id) VALUES (?)', [10]);
        if (engine.name === 'mysql') expect((inserted as { affectedRows: number }).affectedRows).toBe(1);
        expect(await count(trx)).toBe(2);
        expect(await runStatement(trx, 'SELECT id FROM probe WHERE id = ?', [10])).toEqual([{ id: 10 }]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await count(db)).toBe(1);
    await db.transaction(async (trx) => void (await runStatement(trx, 'INSERT INTO probe (id) VALUES (?)', [11])));
    expect(await count(db)).toBe(2);
  });
});
