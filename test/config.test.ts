import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { startChildServer } from './helpers/server.js';
import { runCli as runCliIn, tempDirs } from './helpers/cli.js';

const tempDir = tempDirs('conveyor-config-');

/** The CLI with warnings and errors only in its log, in a fresh directory unless told otherwise. */
const runCli = (args: string[], env: Record<string, string>, cwd = tempDir()) => runCliIn(args, { CONVEYOR_LOG_LEVEL: 'warn', ...env }, cwd);

const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '');

describe('invalid configuration refuses to start with one line naming the key', () => {
  const sqliteUrl = () => `sqlite:${join(tempDir(), 'c.db')}`;
  const cases: Array<[string, () => { env: Record<string, string>; args?: string[] }, string, string?]> = [
    ['a non-numeric HTTP port', () => ({ env: { CONVEYOR_SERVER_HTTP_PORT: 'abc' } }), 'server.http_port', 'port number'],
    ['an out-of-range HTTP port', () => ({ env: { CONVEYOR_SERVER_HTTP_PORT: '70000' } }), 'server.http_port', 'port number'],
    ['a TTL that is not a duration', () => ({ env: { CONVEYOR_QUEUE_MESSAGE_TTL: 'forever' } }), 'queue.message_ttl', '"forever"'],
    ['a negative max_retries', () => ({ env: { CONVEYOR_QUEUE_MAX_RETRIES: '-1' } }), 'queue.max_retries'],
    ['a boolean that is not one', () => ({ env: { CONVEYOR_QUEUE_REQUIRE_TOPIC_REGISTRATION: 'maybe' } }), 'queue.require_topic_registration', 'true or false'],
    ['auth enabled with a short secret', () => ({ env: { CONVEYOR_AUTH_ENABLED: 'true', CONVEYOR_AUTH_JWT_SECRET: 'short' } }), 'auth.jwt_secret', '32 bytes'],
    ['auth enabled without a secret', () => ({ env: { CONVEYOR_AUTH_ENABLED: 'true' } }), 'auth.jwt_secret'],
    ['an unsupported db.url scheme', () => ({ env: { CONVEYOR_DB_URL: 'postgres://u:p@localhost:5432/q' } }), 'db.url', 'postgres'],
    [
      'a YAML file with a bad value',
      () => {
        const file = join(tempDir(), 'bad.yaml');
        writeFileSync(file, 'queue:\n  max_retries: lots\n');
        return { env: {}, args: ['--config', file] };
      },
      'queue.max_retries',
    ],
    [
      'a YAML file with a bad duration, named by CONVEYOR_CONFIG',
      () => {
        const file = join(tempDir(), 'bad.yaml');
        writeFileSync(file, 'queue:\n  visibility_timeout: soon\n');
        return { env: { CONVEYOR_CONFIG: file } };
      },
      'queue.visibility_timeout',
    ],
    [
      'a YAML file that is not YAML',
      () => {
        const file = join(tempDir(), 'broken.yaml');
        writeFileSync(file, 'queue: [unclosed\n');
        return { env: {}, args: ['--config', file] };
      },
      'broken.yaml',
    ],
    [
      'a YAML file with a misspelled key',
      () => {
        const file = join(tempDir(), 'typo.yaml');
        writeFileSync(file, 'queue:\n  visiblity_timeout: 45s\n');
        return { env: {}, args: ['--config', file] };
      },
      'queue',
      'visiblity_timeout',
    ],
    ['a config file that does not exist', () => ({ env: {}, args: ['--config', '/nonexistent/conveyor.yaml'] }), '/nonexistent/conveyor.yaml'],
  ];

  it.each(cases)('%s', async (_what, setup, key, says) => {
    const { env, args = [] } = setup();
    const run = await runCli(['serve', ...args], { CONVEYOR_DB_URL: sqliteUrl(), CONVEYOR_SERVER_HTTP_PORT: '0', ...env });
    expect(run.code).not.toBe(0);
    expect(run.code).not.toBeNull();
    const errorLines = lines(run.stderr);
    expect(errorLines, run.stderr).toHaveLength(1);
    expect(errorLines[0]).toContain(key);
    if (says) expect(errorLines[0]).toContain(says);
    // Never the secret or the password of a URL.
    expect(errorLines[0]).not.toMatch(/u:p@|short/);
    expect(errorLines[0]).toMatch(/^conveyor: /);
    expect(run.stderr).not.toMatch(/\n\s+at /);
    // It never got as far as listening.
    expect(run.stdout).not.toContain('conveyor listening');
  });
});

describeEachEngine('configuration file and environment', (engine) => {
  it('conveyor.yaml values apply and CONVEYOR_* variables override them', async () => {
    const database = await engine.createDatabase();
    const dir = tempDir();
    const file = join(dir, 'conveyor.yaml');
    writeFileSync(file, ['queue:', '  max_retries: 5', '  message_ttl: 1h', `db:`, `  url: "${database.url}"`, 'log:', '  level: info', ''].join('\n'));
    try {
      const fromFile = await startChildServer({ CONVEYOR_CONFIG: file });
      try {
        const { body } = await fromFile.api.enqueue('cfg', 'x');
        const [m] = (await fromFile.api.get('/api/messages?topic=cfg')).body.items;
        expect(m.id).toBe(body.id);
        expect(m.max_retries).toBe(5);
        expect(Date.parse(m.expires_at) - Date.parse(m.created_at)).toBe(3_600_000);
      } finally {
        expect(await fromFile.stop()).toBe(0);
      }

      const overridden = await startChildServer({ CONVEYOR_QUEUE_MAX_RETRIES: '7' }, ['serve', '--config', file]);
      try {
        const { body } = await overridden.api.enqueue('cfg2', 'x');
        const [m] = (await overridden.api.get('/api/messages?topic=cfg2')).body.items;
        expect(m.id).toBe(body.id);
        expect(m.max_retries).toBe(7);
        // The key the environment did not override still comes from the file.
        expect(Date.parse(m.expires_at) - Date.parse(m.created_at)).toBe(3_600_000);
      } finally {
        expect(await overridden.stop()).toBe(0);
      }
    } finally {
      await database.drop();
    }
  }, 120_000);

  it('`conveyor migrate` applies the migrations once and prints JSON', async () => {
    const database = await engine.createDatabase();
    try {
      const first = await runCli(['migrate'], { CONVEYOR_DB_URL: database.url });
      expect(first.code, first.stderr).toBe(0);
      const applied = JSON.parse(lines(first.stdout).pop()!);
      expect(Object.keys(applied)).toEqual(['applied']);
      expect(applied.applied).toContain('20261122000000_initial');
      expect(applied.applied).toEqual([...applied.applied].sort());

      const second = await runCli(['migrate'], { CONVEYOR_DB_URL: database.url });
      expect(second.code, second.stderr).toBe(0);
      expect(JSON.parse(lines(second.stdout).pop()!)).toEqual({ applied: [] });

      // The migrated database serves without migrating again.
      const server = await startChildServer({ CONVEYOR_DB_URL: database.url });
      expect((await server.api.enqueue('migrated', 'x')).status).toBe(201);
      expect(server.output()).not.toContain('applied database migrations');
      expect(await server.stop()).toBe(0);
    } finally {
      await database.drop();
    }
  }, 120_000);
});

describe('configuration discovery', () => {
  it('reads ./conveyor.yaml from the working directory when no path is given', async () => {
    const dir = tempDir();
    const dbFile = join(dir, 'data', 'found.db');
    writeFileSync(join(dir, 'conveyor.yaml'), `db:\n  url: "sqlite:${dbFile}"\n`);
    const run = await runCli(['migrate'], {}, dir);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(lines(run.stdout).pop()!).applied.length).toBeGreaterThan(0);
    expect(existsSync(dbFile)).toBe(true);
  });

  it('an unknown command is a usage error', async () => {
    const run = await runCli(['frobnicate'], {});
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('unknown command "frobnicate"');
  });
});
