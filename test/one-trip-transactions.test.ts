import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../src/log/logger.js';
import { createDb } from '../src/store/db.js';
import { runInOneTrip, runInTwoTrips } from '../src/store/statement.js';
import { engineByName, type TestDatabase } from './helpers/engines.js';

/**
 * A transaction sent as one text (src/store/statement.ts, runInOneTrip), as the ordering-key paths send
 * theirs on MySQL/MariaDB: all of it commits, or none of it does and the connection goes back to the pool
 * with no transaction open (one connection, so the next statements run on the same one).
 */
(inject('mysqlUrl') ? describe : describe.skip)('one-trip transactions [mysql]', () => {
  let database: TestDatabase;
  let db: Knex;
  beforeAll(async () => {
    database = await engineByName.mysql.createDatabase();
    db = createDb({ url: database.url, poolSize: 1, logger: createLogger('silent') });
    await db.raw('CREATE TABLE trips (id INT PRIMARY KEY, note VARCHAR(100) NOT NULL)');
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  const notes = async () => ((await db('trips').orderBy('id').select('id', 'note')) as Array<{ id: number; note: string }>).map((r) => `${r.id}:${r.note}`);

  it('commits every statement and answers each one', async () => {
    const [inserted, rows] = (await runInOneTrip(db, [
      { sql: 'INSERT INTO trips (id, note) VALUES (?, ?), (?, ?)', bindings: [1, 'a', 2, "b'; DROP TABLE trips; --"] },
      { sql: 'SELECT note FROM trips WHERE id = ?', bindings: [2] },
    ])) as [{ affectedRows: number }, Array<{ note: string }>];
    expect(inserted.affectedRows).toBe(2);
    // A value is a value: bound and escaped, never a statement of its own.
    expect(rows).toEqual([{ note: "b'; DROP TABLE trips; --" }]);
    expect(await notes()).toEqual(['1:a', "2:b'; DROP TABLE trips; --"]);
  });

  it('a failing statement rolls back the ones before it, and the connection has no transaction left open', async () => {
    await expect(
      runInOneTrip(db, [
        { sql: 'UPDATE trips SET note = ? WHERE id = ?', bindings: ['changed', 1] },
        { sql: 'INSERT INTO trips (id, note) VALUES (?, ?)', bindings: [1, 'duplicate'] },
        { sql: 'UPDATE trips SET note = ? WHERE id = ?', bindings: ['never', 2] },
      ]),
    ).rejects.toThrow(/Duplicate entry/);
    expect(await notes()).toEqual(['1:a', "2:b'; DROP TABLE trips; --"]);
    // The pool's one connection: an open transaction would hold this autocommit write back from other sessions.
    const [[state]] = (await db.raw('SELECT @@in_transaction AS open')) as [[{ open: number }]];
    expect(Number(state.open)).toBe(0);
    await db('trips').where({ id: 1 }).update({ note: 'after' });
    const other = createDb({ url: database.url, poolSize: 1, logger: createLogger('silent') });
    try {
      expect((await other('trips').where({ id: 1 }).first('note')).note).toBe('after');
    } finally {
      await other.destroy();
    }
  });

  it('two trips: the second part is made from the first one\'s answers, and all of it commits', async () => {
    const result = await runInTwoTrips(
      db,
      [
        { sql: 'INSERT INTO trips (id, note) VALUES (?, ?)', bindings: [3, 'c'] },
        { sql: 'SELECT COUNT(*) AS n FROM trips', bindings: [] },
      ],
      ([, rows]) => [{ sql: 'INSERT INTO trips (id, note) VALUES (?, ?)', bindings: [4, `after ${(rows as Array<{ n: number }>)[0].n}`] }],
    );
    expect((result.first[0] as { affectedRows: number }).affectedRows).toBe(1);
    expect((result.then[0] as { affectedRows: number }).affectedRows).toBe(1);
    expect(await notes()).toEqual(expect.arrayContaining(['3:c', '4:after 3']));
  });

  it('two trips: a failure in the second rolls back the first, and so does an error thrown between them', async () => {
    const failing = (second: () => Array<{ sql: string; bindings: unknown[] }>) =>
      runInTwoTrips(db, [{ sql: 'UPDATE trips SET note = ? WHERE id = ?', bindings: ['changed', 3] }], second);
    await expect(failing(() => [{ sql: 'INSERT INTO trips (id, note) VALUES (?, ?)', bindings: [3, 'duplicate'] }])).rejects.toThrow(/Duplicate entry/);
    await expect(
      failing(() => {
        throw new Error('no plan');
      }),
    ).rejects.toThrow(/no plan/);
    expect((await db('trips').where({ id: 3 }).first('note')).note).toBe('c');
    const [[state]] = (await db.raw('SELECT @@in_transaction AS open')) as [[{ open: number }]];
    expect(Number(state.open)).toBe(0);
  });
});
