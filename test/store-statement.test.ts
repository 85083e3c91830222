import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../src/log/logger.js';
import { uuidv7 } from '../src/queue/message-ids.js';
import { createDb, migrate } from '../src/store/db.js';
import { newMessageRow, ungroupedInsertSql } from '../src/store/messages/insert.js';
import { runStatement } from '../src/store/statement.js';
import { describeEachEngine, engineByName, type TestDatabase } from './helpers/engines.js';

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

/**
 * The enqueue's one-statement INSERT (insertUngrouped) in both of its forms: MariaDB's table value constructor,
 * and the SELECT per row that MySQL 8 needs (it has no constructor without ROW(), none at all before 8.0.19).
 * Only MariaDB runs here; the portable form must store the same rows on it.
 */
(inject('mysqlUrl') ? describe : describe.skip)('the one-statement enqueue [mysql]', () => {
  const engine = engineByName.mysql;
  let database: TestDatabase;
  let db: Knex;
  beforeAll(async () => {
    database = await engine.createDatabase();
    db = createDb({ url: database.url, poolSize: 2, logger: createLogger('silent') });
    await migrate(db, createLogger('silent'));
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it.each([true, false])('stores every row, and none while a topic has a group (table value constructor: %s)', async (tableValueConstructor) => {
    const topic = `one-statement-${tableValueConstructor}`;
    const messages = Array.from({ length: 3 }, (_, i) => ({
      id: uuidv7(),
      topic,
      key: null,
      payload: Buffer.from(`m${i}`),
      metadata: '{}',
      maxRetries: 3,
      expiresAt: null,
      createdAt: 1_000 + i,
    }));
    const bindings = messages.flatMap((m) => Object.values(newMessageRow(m)) as Knex.RawBinding[]);
    const sql = ungroupedInsertSql(messages.length, 1, tableValueConstructor);
    expect(((await runStatement(db, sql, [...bindings, topic])) as { affectedRows: number }).affectedRows).toBe(3);
    const stored = await db('messages').where({ topic }).orderBy('created_at').select('id', 'payload', 'status');
    expect(stored.map((r) => [r.id, Buffer.from(r.payload).toString(), r.status])).toEqual(messages.map((m, i) => [m.id, `m${i}`, 'pending']));

    await db('consumer_groups').insert({ topic, consumer_group: 'g', created_at: 0 });
    const again = messages.map((m) => ({ ...m, id: uuidv7() }));
    const rebound = again.flatMap((m) => Object.values(newMessageRow(m)) as Knex.RawBinding[]);
    expect(((await runStatement(db, sql, [...rebound, topic])) as { affectedRows: number }).affectedRows).toBe(0);
  });
});
