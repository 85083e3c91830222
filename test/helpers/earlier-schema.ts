import type { Knex } from 'knex';
import { migrationSource } from '../../migrations/index.js';
import { createDb } from '../../src/store/db.js';
import { afterEach } from 'vitest';
import type { Engine, TestDatabase } from './engines.js';

/**
 * A connection to `database` migrated up to `last` and no further: the schema an earlier release left, for a
 * test to write that release's rows into before a server migrates it the rest of the way. The caller destroys it.
 */
export async function migratedUpTo(database: TestDatabase, last: string): Promise<Knex> {
  const db = createDb({ url: database.url, poolSize: 1 });
  for (const name of (await migrationSource.getMigrations([])).filter((n) => n <= last)) await db.migrate.up({ migrationSource, name });
  return db;
}

/** A message id that sorts by `n` (a UUIDv7 shape), for rows written straight into an earlier schema. */
export const orderedId = (n: number) => `0190a1b2-c3d4-7000-8000-${String(n).padStart(12, '0')}`;

/** A pending message of topic `upgraded` as an earlier release stored it, message `n`; `fields` say what differs. */
export function earlierRow(n: number, now: number, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: orderedId(n),
    topic: 'upgraded',
    msg_key: null,
    payload: Buffer.from(`m${n}`),
    metadata: '{}',
    status: 'pending',
    retry_count: 0,
    max_retries: 3,
    last_error: '',
    created_at: now - 10_000 + n,
    original_topic: '',
    ...fields,
  };
}

/** Inside a suite: a fresh database for each test that asks for one, dropped after the test. */
export function freshDatabases(engine: Engine): () => Promise<TestDatabase> {
  let current: TestDatabase | undefined;
  afterEach(async () => {
    await current?.drop();
    current = undefined;
  });
  return async () => (current = await engine.createDatabase());
}
