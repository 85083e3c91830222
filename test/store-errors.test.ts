import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log/logger.js';
import { summarizeError } from '../src/log/repeated.js';
import { createDb } from '../src/store/db.js';
import { DatabaseBusy, DatabaseUnavailable, driverErrorOf, typedError } from '../src/store/errors.js';
import { ATTEMPTS, withDbRetry } from '../src/store/retry.js';

/**
 * The store's typed errors (src/store/errors.ts): what leaves the store is DatabaseBusy or DatabaseUnavailable
 * with the driver's error as its cause; the retry policy inside still classifies the driver's error.
 */
const deadlock = () => Object.assign(new Error('Deadlock found when trying to get lock'), { errno: 1213, code: 'ER_LOCK_DEADLOCK' });
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3306'), { code: 'ECONNREFUSED' });
const duplicate = () => Object.assign(new Error('Duplicate entry'), { errno: 1062, code: 'ER_DUP_ENTRY' });

describe('typedError', () => {
  it('types conflicts as busy and lost databases as unavailable, with the driver error as cause; leaves others alone', () => {
    const busy = typedError(deadlock());
    expect(busy).toBeInstanceOf(DatabaseBusy);
    expect(busy).toMatchObject({ kind: 'deadlock', attempts: 1, retryAfterSeconds: 1, message: 'database busy: deadlock', cause: { errno: 1213 } });
    const away = typedError(refused());
    expect(away).toBeInstanceOf(DatabaseUnavailable);
    expect(away).toMatchObject({ message: 'database unavailable', cause: { code: 'ECONNREFUSED' } });
    expect(typedError(Object.assign(new Error('Knex: Timeout acquiring a connection'), { name: 'KnexTimeoutError' }))).toBeInstanceOf(DatabaseUnavailable);
    const unique = duplicate();
    expect(typedError(unique)).toBe(unique);
    expect(typedError(away)).toBe(away);
    expect(driverErrorOf(away)).toBe((away as Error).cause);
    expect(driverErrorOf(unique)).toBe(unique);
  });

  it('a repeated-failure line names the driver error a typed error wraps', () => {
    expect(JSON.parse(JSON.stringify(summarizeError(typedError(refused()))))).toEqual({ message: 'database unavailable: connect ECONNREFUSED 127.0.0.1:3306', code: 'ECONNREFUSED' });
  });
});

describe('withDbRetry and typed errors', () => {
  let db: Knex;
  beforeAll(() => {
    db = createDb({ url: 'sqlite::memory:', logger: createLogger('silent') });
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('retries a typed statement error by the driver error it stands for', async () => {
    let runs = 0;
    const result = await withDbRetry(db, async () => {
      if (++runs < 3) throw typedError(deadlock());
      return 'done';
    });
    expect({ result, runs }).toEqual({ result: 'done', runs: 3 });
  });

  it('gives up with DatabaseBusy carrying the driver error; an outer retry does not run it again', async () => {
    let runs = 0;
    const err = await withDbRetry(db, () =>
      withDbRetry(db, async () => {
        runs++;
        throw typedError(deadlock());
      }),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseBusy);
    expect(err).toMatchObject({ kind: 'deadlock', attempts: ATTEMPTS, cause: { errno: 1213 } });
    expect(driverErrorOf(err)).toBe(err);
    expect(runs).toBe(ATTEMPTS);
  });

  it('types what it does not retry on the way out, and passes other errors through as they are', async () => {
    await expect(withDbRetry(db, () => Promise.reject(refused()))).rejects.toBeInstanceOf(DatabaseUnavailable);
    const unique = duplicate();
    await expect(withDbRetry(db, () => Promise.reject(unique))).rejects.toBe(unique);
  });
});

describe('a pool that cannot connect', () => {
  it('answers DatabaseUnavailable for a statement, with the driver error as cause', async () => {
    const db = createDb({ url: 'mysql://conveyor:pw@127.0.0.1:1/queue', poolSize: 1, logger: createLogger('silent') });
    try {
      const err = await db.raw('select 1').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DatabaseUnavailable);
      expect(driverErrorOf(err)).toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      await db.destroy();
    }
  });
});
