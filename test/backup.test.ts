import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempDirs } from './helpers/cli.js';
import { engineByName } from './helpers/engines.js';
import { startChildServer, startTestServer, type ChildServer, type TestServer } from './helpers/server.js';

// `conveyor backup`: a consistent copy of the embedded SQLite database, taken beside a running service.
const tempDir = tempDirs('conveyor-backup-');

describe('conveyor backup [sqlite]', () => {
  const stops: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  });

  it('copies the database while serve goes on writing: everything confirmed before is in the copy, and a server on the copy serves it', async () => {
    const dir = tempDir();
    const url = `sqlite:${join(dir, 'conveyor.db')}`;
    const live: ChildServer = await startChildServer({ CONVEYOR_DB_URL: url });
    stops.push(() => live.stop());
    const before: string[] = [];
    for (let i = 0; i < 40; i++) {
      const answers = await Promise.all(Array.from({ length: 5 }, (_, j) => live.api.enqueue('before', `message ${i * 5 + j}`)));
      for (const res of answers) {
        expect(res.status, res.text).toBe(201);
        before.push(res.body.id);
      }
    }
    // Writers keep going throughout the copy.
    let writing = true;
    const during = (async () => {
      let stored = 0;
      while (writing) if ((await live.api.enqueue('during', `written meanwhile ${stored}`)).status === 201) stored++;
      return stored;
    })();
    const copy = join(dir, 'copy.db');
    const run = await runCli(['backup', copy], { CONVEYOR_DB_URL: url }, dir);
    writing = false;
    const storedDuring = await during;
    expect(run.code, run.stderr).toBe(0);
    const line = JSON.parse(run.stdout) as { backup: string; bytes: number };
    expect(line.backup).toBe(copy);
    expect(line.bytes).toBeGreaterThan(0);
    expect(storedDuring).toBeGreaterThan(0);
    expect((await live.api.enqueue('before', 'after the copy')).status).toBe(201);

    const check = new Database(copy, { readonly: true });
    try {
      expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(check.pragma('journal_mode', { simple: true })).not.toBe('wal');
    } finally {
      check.close();
    }
    const restored: TestServer = await startTestServer(engineByName.sqlite, { database: { url: `sqlite:${copy}`, drop: async () => undefined } });
    stops.push(() => restored.close());
    const got = await restored.api.dequeue('before', { count: 1000 });
    expect(got.status, got.text).toBe(200);
    expect((got.body.messages as Array<{ id: string }>).map((m) => m.id).sort()).toEqual([...before].sort());
  });

  it('refuses a file that exists, a missing FILE, a db.url with no database and a MySQL database, touching nothing', async () => {
    const dir = tempDir();
    const url = `sqlite:${join(dir, 'conveyor.db')}`;
    new Database(join(dir, 'conveyor.db')).close();
    const existing = join(dir, 'taken.db');
    writeFileSync(existing, 'not to be overwritten');
    const taken = await runCli(['backup', existing], { CONVEYOR_DB_URL: url }, dir);
    expect(taken.code).toBe(1);
    expect(taken.stderr.trim()).toBe(`conveyor: ${existing} exists; a backup goes to a new file`);
    expect(readFileSync(existing, 'utf8')).toBe('not to be overwritten');

    const missing = await runCli(['backup'], { CONVEYOR_DB_URL: url }, dir);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^conveyor: backup needs the file to write the copy to\n\nusage: conveyor backup FILE/);

    // A db.url with no database behind it (the wrong working directory): refused, and no empty database made there.
    const nowhere = join(dir, 'elsewhere', 'conveyor.db');
    const absent = await runCli(['backup', join(dir, 'empty-copy.db')], { CONVEYOR_DB_URL: `sqlite:${nowhere}` }, dir);
    expect(absent.code).toBe(1);
    expect(absent.stderr.trim()).toBe(`conveyor: no database at ${nowhere} (db.url): nothing to back up`);
    expect(existsSync(nowhere)).toBe(false);
    expect(existsSync(join(dir, 'empty-copy.db'))).toBe(false);

    const mysql = await runCli(['backup', join(dir, 'x.db')], { CONVEYOR_DB_URL: 'mysql://conveyor:secret-pw@127.0.0.1:1/conveyor' }, dir);
    expect(mysql.code).toBe(1);
    expect(mysql.stderr).toMatch(/^conveyor: conveyor backup copies the embedded SQLite database; back MySQL\/MariaDB up with its own tools \(mysqldump --single-transaction, mariabackup\)\n$/);
    expect(mysql.stderr).not.toContain('secret-pw');
  });
});
