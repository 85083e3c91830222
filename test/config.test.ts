import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ConfigError, loadConfig } from '../src/config/load.js';
import { createLogger } from '../src/log/logger.js';
import { createDb, describeDb } from '../src/store/db.js';
import { describeEachEngine } from './helpers/engines.js';
import { startChildServer } from './helpers/server.js';
import { runCli as runCliIn, tempDirs } from './helpers/cli.js';

const tempDir = tempDirs('conveyor-config-');

/** The CLI with warnings and errors only in its log, in a fresh directory unless told otherwise. */
const runCli = (args: string[], env: Record<string, string>, cwd = tempDir()) => runCliIn(args, { CONVEYOR_LOG_LEVEL: 'warn', ...env }, cwd);

const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '');
/** `conveyor config check` over a database that is never opened, with `env` on top. */
const configCheck = (env: Record<string, string>) => runCli(['config', 'check'], { CONVEYOR_DB_URL: `sqlite:${join(tempDir(), 'never.db')}`, ...env });
/** Each environment is refused (exit 2) with exactly its one line. */
async function expectRefused(cases: Array<[Record<string, string>, string]>): Promise<void> {
  const runs = await Promise.all(cases.map(([env]) => configCheck(env)));
  runs.forEach((run, i) => {
    expect(run.code, run.stderr).toBe(2);
    expect(lines(run.stderr)).toEqual([`conveyor: invalid configuration: ${cases[i][1]}`]);
  });
}

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

      // A migration killed half-way leaves knex's lock taken (MySQL commits at the first DDL): the next run
      // frees it under the migrations lease instead of waiting for it and failing.
      const db = createDb({ url: database.url, logger: createLogger('silent') });
      try {
        expect(await db('knex_migrations_lock').update({ is_locked: 1 })).toBe(1);
      } finally {
        await db.destroy();
      }
      const started = Date.now();
      const third = await runCli(['migrate'], { CONVEYOR_DB_URL: database.url });
      expect(third.code, third.stderr).toBe(0);
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(third.stderr).toContain('knex_migrations_lock was left taken by a migration that stopped half-way');

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

describe('secrets from files (*_file keys)', () => {
  const SETTINGS = [
    { key: 'auth.jwt_secret', fileKey: 'auth.jwt_secret_file', env: 'CONVEYOR_AUTH_JWT_SECRET_FILE', value: 'jwt-from-file-0123456789-0123456789-abcdef' },
    { key: 'auth.password', fileKey: 'auth.password_file', env: 'CONVEYOR_AUTH_PASSWORD_FILE', value: 'password-from-file-42' },
    { key: 'db.url', fileKey: 'db.url_file', env: 'CONVEYOR_DB_URL_FILE', value: 'mysql://app:db-pass-from-file@db.example:3306/queue' },
    { key: 'redis.url', fileKey: 'redis.url_file', env: 'CONVEYOR_REDIS_URL_FILE', value: 'redis://:redis-pass-from-file@redis.example:6379/0' },
    { key: 'telemetry.traces_headers', fileKey: 'telemetry.traces_headers_file', env: 'CONVEYOR_TELEMETRY_TRACES_HEADERS_FILE', value: 'api-key=key-from-file-9876' },
  ];
  const valueOf = (config: unknown, key: string) => {
    const [section, name] = key.split('.');
    return (config as Record<string, Record<string, unknown>>)[section][name];
  };
  const secretFile = (content: string) => {
    const path = join(tempDir(), 'secret');
    writeFileSync(path, content);
    return path;
  };

  it.each(SETTINGS)('$fileKey is read from YAML and from $env, with one trailing newline taken off', ({ key, fileKey, env, value }) => {
    const [section, name] = fileKey.split('.');
    const cases: Array<[content: string, expected: string]> = [
      [`${value}\n`, value],
      [`${value}\r\n`, value],
      [value, value],
      // Only one: a value that ends in a newline of its own keeps it.
      [`${value}\n\n`, `${value}\n`],
    ];
    for (const [content, expected] of cases) {
      const path = secretFile(content);
      const yaml = join(tempDir(), 'conveyor.yaml');
      writeFileSync(yaml, `${section}:\n  ${name}: "${path}"\n`);
      const fromYaml = loadConfig({ configPath: yaml, env: {} });
      expect(valueOf(fromYaml, key)).toBe(expected);
      expect(valueOf(fromYaml, fileKey)).toBe(path);
      const fromEnv = loadConfig({ env: { [env]: path } });
      expect(valueOf(fromEnv, key)).toBe(expected);
    }
  });

  it('refuses a value and its file both set, and a file it cannot read, naming the key and path but never the content', () => {
    for (const { key, fileKey, env, value } of SETTINGS) {
      const path = secretFile(`${value}\n`);
      const valueEnv = `CONVEYOR_${key.replace('.', '_').toUpperCase()}`;
      const both = () => loadConfig({ env: { [valueEnv]: value, [env]: path } });
      expect(both).toThrow(ConfigError);
      expect(both).toThrow(`invalid configuration: ${key} and ${fileKey} are both set; set one of them`);
      for (const missing of [join(tempDir(), 'absent'), tempDir()]) {
        let message = '';
        try {
          loadConfig({ env: { [env]: missing } });
        } catch (err) {
          expect(err).toBeInstanceOf(ConfigError);
          message = (err as Error).message;
        }
        expect(message).toMatch(new RegExp(`^invalid configuration: ${fileKey.replace('.', '\\.')}: cannot read ${missing} \\((ENOENT|EISDIR)\\)$`));
      }
    }
    // A database URL without a scheme is refused without quoting it: what follows may be a password.
    expect(() => describeDb('app:no-scheme-secret@db:3306/q')).toThrow(/^db\.url: unsupported scheme "app"; use/);
    expect(() => describeDb('no-scheme-secret')).toThrow(/^db\.url: no scheme; use/);
  });

  it('conveyor serve runs with every secret from a file; config check shows the paths and redacts the values', async () => {
    const dir = tempDir();
    const write = (name: string, content: string) => {
      const path = join(dir, name);
      writeFileSync(path, content);
      return path;
    };
    const jwt = 'served-jwt-secret-0123456789-0123456789';
    const password = 'served-admin-password-7';
    const redisPassword = 'served-redis-password-9';
    const dbUrl = `sqlite:${join(dir, 'served.db')}`;
    const files = {
      CONVEYOR_AUTH_JWT_SECRET_FILE: write('jwt', `${jwt}\n`),
      CONVEYOR_AUTH_PASSWORD_FILE: write('password', `${password}\r\n`),
      CONVEYOR_DB_URL_FILE: write('db-url', `${dbUrl}\n`),
      // The test Redis has no password: the clients fail to authenticate and keep retrying, with this in their URL.
      CONVEYOR_REDIS_URL_FILE: write('redis-url', `redis://default:${redisPassword}@127.0.0.1:6379\n`),
    };
    const env = { CONVEYOR_AUTH_ENABLED: 'true', CONVEYOR_AUTH_USERNAME: 'admin', ...files };

    const yaml = write('conveyor.yaml', `auth:\n  enabled: true\n  jwt_secret_file: "${files.CONVEYOR_AUTH_JWT_SECRET_FILE}"\n  password_file: "${files.CONVEYOR_AUTH_PASSWORD_FILE}"\ndb:\n  url_file: "${files.CONVEYOR_DB_URL_FILE}"\nredis:\n  url_file: "${files.CONVEYOR_REDIS_URL_FILE}"\n`);
    const [check, checkFromEnv] = await Promise.all([runCli(['config', 'check', '--format', 'json', '--config', yaml], {}), runCli(['config', 'check'], env)]);
    for (const run of [check, checkFromEnv]) {
      expect(run.code, run.stderr).toBe(0);
      for (const secret of [jwt, password, redisPassword]) expect(run.stdout + run.stderr).not.toContain(secret);
    }
    const printed = JSON.parse(check.stdout);
    // A value read from a file is shown as its path alone, so the output is itself a valid configuration.
    expect(printed.auth).toMatchObject({ jwt_secret: '', jwt_secret_file: files.CONVEYOR_AUTH_JWT_SECRET_FILE, password: '', password_file: files.CONVEYOR_AUTH_PASSWORD_FILE });
    expect(printed.db).toMatchObject({ url: '', url_file: files.CONVEYOR_DB_URL_FILE });
    expect(printed.redis).toMatchObject({ url: '', url_file: files.CONVEYOR_REDIS_URL_FILE });
    expect(checkFromEnv.stdout).toContain(`jwt_secret_file: ${files.CONVEYOR_AUTH_JWT_SECRET_FILE}`);
    const again = await runCli(['config', 'check', '--config', write('printed.yaml', checkFromEnv.stdout)], {});
    expect(again.code, again.stderr).toBe(0);
    expect(parseYaml(again.stdout)).toEqual(parseYaml(checkFromEnv.stdout));

    const server = await startChildServer(env);
    try {
      // The password as the file holds it, less its newline; the token signed with the secret from its file.
      expect((await server.api.post('/api/auth/login', { username: 'admin', password: `${password}\r\n` })).status).toBe(401);
      const login = await server.api.post('/api/auth/login', { username: 'admin', password });
      expect(login.status, login.text).toBe(200);
      expect((await server.api.withToken(login.body.token).get('/api/stats')).status).toBe(200);
      await expect(jwtVerify(login.body.token, new TextEncoder().encode(jwt))).resolves.toBeDefined();
      expect(server.output()).toContain(`"dbLocation":"${dbUrl.slice('sqlite:'.length)}"`);
    } finally {
      expect(await server.stop()).toBe(0);
    }
    for (const secret of [jwt, password, redisPassword]) expect(server.output()).not.toContain(secret);
  }, 120_000);

  it('refuses durations longer than a timer can wait or a message can be dated, counts beyond their column, and a delete schedule that is no cron', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ CONVEYOR_QUEUE_EXPIRY_REAPER_INTERVAL: '30d' }, 'queue.expiry_reaper_interval: expected a duration of at most 24d, got "30d"'],
      [{ CONVEYOR_SERVER_TLS_RELOAD_INTERVAL: '2592000' }, 'server.tls_reload_interval: expected a duration of at most 24d, got "2592000"'],
      [{ CONVEYOR_QUEUE_VISIBILITY_TIMEOUT: '13h' }, 'queue.visibility_timeout: expected a duration of at most 12h, got "13h"'],
      [{ CONVEYOR_QUEUE_MESSAGE_TTL: '36501d' }, 'queue.message_ttl: expected a duration of at most 36500d, got "36501d"'],
      [{ CONVEYOR_QUEUE_MAX_PAYLOAD_BYTES: '16777216' }, 'queue.max_payload_bytes: Too big: expected number to be <=16777215'],
      [
        { CONVEYOR_QUEUE_DELETE_REAPER_SCHEDULE: 'every day' },
        'queue.delete_reaper_schedule: schedule is not a valid cron expression: it needs 5 fields (minute hour day-of-month month day-of-week), or 6 with a leading seconds field; got 2',
      ],
    ];
    await expectRefused(cases);
    const retries = await configCheck({ CONVEYOR_QUEUE_MAX_RETRIES: '2147483648' });
    expect(retries.code, retries.stderr).toBe(2);
    expect(retries.stderr).toMatch(/^conveyor: invalid configuration: queue\.max_retries: /);
    const longest = await configCheck({
      CONVEYOR_QUEUE_EXPIRY_REAPER_INTERVAL: '24d',
      CONVEYOR_QUEUE_VISIBILITY_TIMEOUT: '12h',
      CONVEYOR_QUEUE_MESSAGE_TTL: '36500d',
      CONVEYOR_QUEUE_MAX_RETRIES: '2147483647',
      CONVEYOR_QUEUE_DELETE_REAPER_SCHEDULE: '0 3 * * *',
    });
    expect(longest.code, longest.stderr).toBe(0);
  });

  it('refuses a redis.url that is not one, before anything starts, without echoing it', async () => {
    await expectRefused([
      [{ CONVEYOR_REDIS_URL: 'localhost:6379' }, 'redis.url: expected the scheme redis:// or rediss://'],
      [{ CONVEYOR_REDIS_URL: 'redis:6379' }, 'redis.url: expected redis://[user:password@]host[:port][/db] (a host after //; percent-encode @ : / ? # in a password)'],
      // An unencoded ? ends the authority: no host is left, and the password must not be echoed.
      [{ CONVEYOR_REDIS_URL: 'redis://:99?pw-in-url@cache:6379/0' }, 'redis.url: expected redis://[user:password@]host[:port][/db] or rediss://… (percent-encode @ : / ? # in a password)'],
      [{ CONVEYOR_REDIS_URL: 'http://:pw-in-url@cache:6379' }, 'redis.url: expected the scheme redis:// or rediss://'],
      [{ CONVEYOR_REDIS_URL: 'redis://cache:6379/zero' }, 'redis.url: the path must be a database number, such as /0'],
    ]);
    for (const url of ['redis://cache:6379', 'rediss://user:pw@cache:6380/2', 'redis://[::1]:6379/0']) expect((await configCheck({ CONVEYOR_REDIS_URL: url })).code, url).toBe(0);
  });

  it('refuses an empty number (a compose file\'s VAR=, not 0), a visibility timeout under 1 s, and periods of 0', async () => {
    await expectRefused([
      [{ CONVEYOR_QUEUE_DLQ_THRESHOLD: '' }, 'queue.dlq_threshold: expected a number, got an empty value'],
      [{ CONVEYOR_AUDIT_RETENTION_DAYS: ' ' }, 'audit.retention_days: expected a number, got an empty value'],
      [{ CONVEYOR_SERVER_HTTP_PORT: '' }, 'server.http_port: expected a number, got an empty value'],
      [{ CONVEYOR_QUEUE_VISIBILITY_TIMEOUT: '0' }, 'queue.visibility_timeout: expected a duration of at least 1s, as a dequeue may ask'],
      [{ CONVEYOR_QUEUE_VISIBILITY_TIMEOUT: '500ms' }, 'queue.visibility_timeout: expected a duration of at least 1s, as a dequeue may ask'],
      [{ CONVEYOR_QUEUE_CONFIG_REFRESH_INTERVAL: '0' }, 'queue.config_refresh_interval: expected a duration above 0'],
      [{ CONVEYOR_CONTROLLER_RESYNC_PERIOD: '0' }, 'controller.resync_period: expected a duration above 0'],
      [{ CONVEYOR_CONTROLLER_WATCH_TIMEOUT: '0s' }, 'controller.watch_timeout: expected a duration above 0'],
    ]);
    // 0 stays what it documents where it means something: no dead-lettering, audit records kept forever.
    const zeros = await configCheck({ CONVEYOR_QUEUE_DLQ_THRESHOLD: '0', CONVEYOR_AUDIT_RETENTION_DAYS: '0', CONVEYOR_QUEUE_VISIBILITY_TIMEOUT: '1s' });
    expect(zeros.code, zeros.stderr).toBe(0);
  });

  it('refuses leader-election timings that would let two controllers lead at once', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ CONVEYOR_CONTROLLER_RENEW_DEADLINE: '20s' }, 'controller.lease_duration: must be longer than controller.renew_deadline'],
      [{ CONVEYOR_CONTROLLER_LEASE_DURATION: '10s' }, 'controller.lease_duration: must be longer than controller.renew_deadline'],
      [{ CONVEYOR_CONTROLLER_RETRY_PERIOD: '9s' }, 'controller.renew_deadline: must be longer than 1.2 x controller.retry_period'],
      [{ CONVEYOR_CONTROLLER_RETRY_PERIOD: '0' }, 'controller.retry_period: expected a duration above 0'],
    ];
    await expectRefused(cases);
    const fine = await configCheck({ CONVEYOR_CONTROLLER_LEASE_DURATION: '30s', CONVEYOR_CONTROLLER_RENEW_DEADLINE: '20s' });
    expect(fine.code, fine.stderr).toBe(0);
  });

  it('refuses to start, with one line and never the secret: a short JWT secret, a value and its file, a missing file', async () => {
    const dir = tempDir();
    const short = 'short-jwt-secret-in-file';
    const shortFile = join(dir, 'short');
    writeFileSync(shortFile, `${short}\n`);
    const dbUrl = `sqlite:${join(dir, 'never.db')}`;
    const cases: Array<[Record<string, string>, string]> = [
      [{ CONVEYOR_AUTH_ENABLED: 'true', CONVEYOR_AUTH_JWT_SECRET_FILE: shortFile }, `conveyor: invalid configuration: auth.jwt_secret (read from ${shortFile}): must be at least 32 bytes when auth.enabled is true`],
      [{ CONVEYOR_AUTH_ENABLED: 'true', CONVEYOR_AUTH_JWT_SECRET: short }, 'conveyor: invalid configuration: auth.jwt_secret: must be at least 32 bytes when auth.enabled is true'],
      [{ CONVEYOR_AUTH_PASSWORD: short, CONVEYOR_AUTH_PASSWORD_FILE: shortFile }, 'conveyor: invalid configuration: auth.password and auth.password_file are both set; set one of them'],
      [{ CONVEYOR_DB_URL_FILE: join(dir, 'absent') }, `conveyor: invalid configuration: db.url_file: cannot read ${join(dir, 'absent')} (ENOENT)`],
      [{ CONVEYOR_DB_URL: `app:${short}@db:3306/q` }, 'conveyor: db.url: unsupported scheme "app"; use sqlite:<path> or mysql://user:pass@host:3306/db'],
    ];
    const runs = await Promise.all(
      cases.map(([env]) => {
        const db = 'CONVEYOR_DB_URL' in env || 'CONVEYOR_DB_URL_FILE' in env ? {} : { CONVEYOR_DB_URL: dbUrl };
        return Promise.all([runCli(['serve'], { ...db, CONVEYOR_SERVER_HTTP_PORT: '0', CONVEYOR_SERVER_GRPC_PORT: '0', ...env }), runCli(['config', 'check'], { ...db, ...env })]);
      }),
    );
    runs.forEach(([serve, check], i) => {
      const expected = cases[i][1];
      for (const run of [serve, check]) {
        expect(run.code, run.stderr).toBe(2);
        expect(lines(run.stderr)).toEqual([expected]);
        expect(run.stdout + run.stderr).not.toContain(short);
      }
      expect(serve.stdout).not.toContain('conveyor listening');
    });
    // The commands that open the database say the same of a db.url none can open.
    const badUrl = { CONVEYOR_DB_URL: `app:${short}@db:3306/q` };
    for (const run of await Promise.all([runCli(['migrate'], badUrl), runCli(['reap', 'expiry'], badUrl), runCli(['controller'], { ...badUrl, CONVEYOR_CONTROLLER_PORT: '0' })])) {
      expect(run.code, run.stderr).toBe(2);
      expect(lines(run.stderr)).toEqual(['conveyor: db.url: unsupported scheme "app"; use sqlite:<path> or mysql://user:pass@host:3306/db']);
    }
  }, 120_000);
});
