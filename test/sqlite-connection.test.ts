import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../src/log/logger.js';
import { createDb } from '../src/store/db.js';

/** The settings every SQLite connection of the service opens with (src/store/sqlite-client.ts, afterCreate). */
let dir: string;
let db: Knex;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'conveyor-sqlite-connection-'));
  db = createDb({ url: `sqlite:${join(dir, 'conveyor.db')}`, logger: createLogger('silent') });
});
afterAll(async () => {
  await db?.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const pragma = async (name: string) => Object.values(((await db.raw(`PRAGMA ${name}`)) as Array<Record<string, unknown>>)[0])[0];

it('writes ahead (WAL), syncs every commit, keeps a 2 MB page cache and temporary files in memory, and never waits inside SQLite', async () => {
  expect(await pragma('journal_mode')).toBe('wal');
  // 2 = FULL: a commit is on disk before an enqueue is answered.
  expect(await pragma('synchronous')).toBe(2);
  // KiB, negative: 2 MB, not the 16 MB better-sqlite3 is built with (a larger cache made every rebalancing commit slower).
  expect(await pragma('cache_size')).toBe(-2000);
  // 2 = MEMORY: a statement's journal stays in memory instead of a file made and deleted per statement.
  expect(await pragma('temp_store')).toBe(2);
  expect(await pragma('busy_timeout')).toBe(0);
});
