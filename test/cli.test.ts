import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../src/config/load.js';
import { SERVE_V8_FLAGS } from '../src/cli/gc-policy.js';
import { configSchema } from '../src/config/schema.js';
import { runCli, tempDirs } from './helpers/cli.js';

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const tempDir = tempDirs('conveyor-cli-');

/** Runs the CLI to completion in an empty directory, with only the given CONVEYOR_* variables. */
const conveyor = (args: string[], env: Record<string, string> = {}, cwd = tempDir()) => runCli(args, env, cwd);

/** Every key of the schema with its environment variable: what the help texts must be generated from. */
const SCHEMA_KEYS = Object.entries(configSchema.shape).flatMap(([section, s]) =>
  Object.keys((s as unknown as { def: { innerType: { shape: Record<string, unknown> } } }).def.innerType.shape).map((key) => ({
    key: `${section}.${key}`,
    env: `CONVEYOR_${section}_${key}`.toUpperCase(),
    section,
  })),
);
const envOf = (sections: string[]) => SCHEMA_KEYS.filter((k) => sections.includes(k.section)).map((k) => k.env);

describe('help', () => {
  const helps = new Map<string, string>();

  const cases: Array<{ name: string; command: string[]; synopsis: string; reads: string[]; notReads: string[]; says: RegExp[] }> = [
    {
      name: 'serve',
      command: ['serve'],
      synopsis: 'usage: conveyor serve [--config FILE]',
      reads: envOf(['server', 'db', 'queue', 'reapers', 'auth', 'redis', 'metrics', 'log']),
      notReads: envOf(['controller']),
      says: [/conveyor listening/, /server\.http_port\s+CONVEYOR_SERVER_HTTP_PORT\s+8080\s+HTTP API/, /queue\.message_ttl\s+CONVEYOR_QUEUE_MESSAGE_TTL\s+24h/, /db\.url\s+CONVEYOR_DB_URL\s+sqlite:\.\/data\/conveyor\.db/],
    },
    {
      name: 'controller',
      command: ['controller'],
      synopsis: 'usage: conveyor controller [--config FILE]',
      reads: [...envOf(['controller']), 'CONVEYOR_DB_URL', 'CONVEYOR_LOG_LEVEL', 'KUBECONFIG'],
      notReads: [...envOf(['server', 'auth', 'redis', 'metrics', 'reapers']), 'CONVEYOR_QUEUE_MESSAGE_TTL'],
      says: [/controller\.lease_name\s+CONVEYOR_CONTROLLER_LEASE_NAME\s+conveyor-controller/, /leader Lease/],
    },
    {
      name: 'migrate',
      command: ['migrate'],
      synopsis: 'usage: conveyor migrate [--config FILE]',
      reads: ['CONVEYOR_DB_URL', 'CONVEYOR_DB_URL_FILE', 'CONVEYOR_LOG_LEVEL', 'CONVEYOR_CONFIG'],
      notReads: [...envOf(['server', 'queue', 'controller', 'auth']), 'CONVEYOR_DB_POOL_SIZE'],
      says: [/\{"applied": \[\.\.\.\]\}/],
    },
    {
      name: 'reap',
      command: ['reap'],
      synopsis: 'usage: conveyor reap <expiry|delete|archive> [--config FILE]',
      reads: ['CONVEYOR_DB_URL', 'CONVEYOR_DB_URL_FILE', 'CONVEYOR_QUEUE_DLQ_THRESHOLD', 'CONVEYOR_LOG_LEVEL'],
      notReads: [...envOf(['server', 'queue', 'controller'])].filter((env) => env !== 'CONVEYOR_QUEUE_DLQ_THRESHOLD'),
      says: [/^\s+expiry\s/m, /^\s+delete\s/m, /^\s+archive\s/m],
    },
    {
      name: 'backup',
      command: ['backup'],
      synopsis: 'usage: conveyor backup FILE [--config FILE]',
      reads: ['CONVEYOR_DB_URL', 'CONVEYOR_DB_URL_FILE', 'CONVEYOR_DB_LOCK_WAIT_TIMEOUT', 'CONVEYOR_LOG_LEVEL', 'CONVEYOR_CONFIG'],
      notReads: [...envOf(['server', 'queue', 'controller', 'auth']), 'CONVEYOR_DB_POOL_SIZE'],
      says: [/VACUUM INTO/, /mysqldump --single-transaction/, /-wal and\s+-shm/],
    },
    {
      name: 'rotate-credentials-key',
      command: ['rotate-credentials-key'],
      synopsis: 'usage: conveyor rotate-credentials-key [--config FILE]',
      reads: ['CONVEYOR_DB_URL', 'CONVEYOR_AUTH_CREDENTIALS_KEY', 'CONVEYOR_AUTH_CREDENTIALS_KEY_FILE', 'CONVEYOR_AUTH_PREVIOUS_CREDENTIALS_KEY', 'CONVEYOR_AUTH_PREVIOUS_CREDENTIALS_KEY_FILE', 'CONVEYOR_LOG_LEVEL'],
      notReads: [...envOf(['server', 'queue', 'controller']), 'CONVEYOR_AUTH_JWT_SECRET', 'CONVEYOR_AUTH_KUBERNETES_ENABLED'],
      says: [/\{"reencrypted":N,"current":M,"unreadable":0\}/, /may be run again/],
    },
    {
      name: 'config check',
      command: ['config', 'check'],
      synopsis: 'usage: conveyor config check [--config FILE] [--format yaml|json]',
      reads: SCHEMA_KEYS.map((k) => k.env),
      notReads: [],
      says: [/redacted/, /--format yaml\|json/],
    },
  ];

  it.each(cases)('conveyor $name --help: its own usage, options, keys with defaults and environment variables', async ({ command, synopsis, reads, notReads, says }) => {
    const run = await conveyor([...command, '--help']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout.split('\n')[0]).toBe(synopsis);
    expect(run.stdout).toContain('--config FILE');
    expect(run.stdout).toContain('-h, --help');
    for (const env of reads) expect(run.stdout, env).toContain(env);
    for (const env of notReads) expect(run.stdout, env).not.toMatch(new RegExp(`\\b${env}\\b`));
    for (const pattern of says) expect(run.stdout).toMatch(pattern);
    helps.set(command.join(' '), run.stdout);

    // `conveyor help <command>` and `-h` say the same.
    expect((await conveyor(['help', ...command])).stdout).toBe(run.stdout);
    expect((await conveyor([...command, '-h'])).stdout).toBe(run.stdout);
  });

  it('every subcommand has its own text', () => {
    expect(new Set(helps.values()).size).toBe(cases.length);
  });

  it('describes every configuration key (the schema is the source of the help texts)', async () => {
    const run = await conveyor(['config', 'check', '--help']);
    const defaults = validateConfig({}) as unknown as Record<string, Record<string, unknown>>;
    for (const { key, env, section } of SCHEMA_KEYS) {
      const row = run.stdout.split('\n').find((l) => l.startsWith(`  ${key} `));
      expect(row, key).toBeDefined();
      const [, documentedEnv, documentedDefault, meaning] = /^\s+\S+\s+(\S+)\s+(\S+)\s+(.+)$/.exec(row!)!;
      expect(documentedEnv).toBe(env);
      expect(meaning.trim().length, `${key} has a description`).toBeGreaterThan(5);
      const actual = defaults[section][key.split('.')[1]];
      if (typeof actual === 'string') expect(documentedDefault).toBe(actual === '' ? '""' : actual);
      else if (typeof actual === 'boolean' || !/[a-z]$/.test(documentedDefault)) expect(documentedDefault).toBe(String(actual));
    }
  });

  it('`conveyor help` and `conveyor --help` list every command', async () => {
    const run = await conveyor(['help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^usage: conveyor <command> \[options\]/);
    for (const command of ['serve', 'controller', 'migrate', 'reap <expiry|delete|archive>', 'backup FILE', 'rotate-credentials-key', 'config check', 'help [COMMAND]', 'version']) {
      expect(run.stdout).toMatch(new RegExp(`^  ${command.replace(/[[\]|]/g, '\\$&')}\\s{2,}\\S`, 'm'));
    }
    expect(run.stdout).toContain('node dist/src/cli.js');
    expect((await conveyor(['--help'])).stdout).toBe(run.stdout);
  });
});

describe('version and usage errors', () => {
  it('`conveyor version` and `conveyor --version` print the package version', async () => {
    for (const args of [['version'], ['--version']]) {
      const run = await conveyor(args);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe(`${VERSION}\n`);
    }
  });

  it('an unknown command exits 2 with the usage and a hint', async () => {
    const run = await conveyor(['frobnicate']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.split('\n')[0]).toBe('conveyor: unknown command "frobnicate"; run `conveyor help` for the list');
    expect(run.stderr).toContain('usage: conveyor <command> [options]');

    const typo = await conveyor(['serv']);
    expect(typo.code).toBe(2);
    expect(typo.stderr.split('\n')[0]).toBe('conveyor: unknown command "serv" (did you mean "serve"?); run `conveyor help` for the list');
    expect((await conveyor(['help', 'frobnicate'])).code).toBe(2);
  });

  it("an unknown option or a stray argument exits 2 with that command's synopsis", async () => {
    const option = await conveyor(['migrate', '--format', 'json']);
    expect(option.code).toBe(2);
    expect(option.stderr).toMatch(/^conveyor: Unknown option '--format'/);
    expect(option.stderr).toContain('usage: conveyor migrate [--config FILE]');

    const stray = await conveyor(['serve', 'now']);
    expect(stray.code).toBe(2);
    expect(stray.stderr).toMatch(/^conveyor: unexpected argument "now"/);

    const config = await conveyor(['config']);
    expect(config.code).toBe(2);
    expect(config.stderr).toMatch(/^conveyor: config needs a subcommand: check/);
  });
});

describe('conveyor config check', () => {
  it('prints the effective configuration as YAML: defaults, the file, the environment over it; exit 0', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'conveyor.yaml'), 'queue:\n  max_retries: 5\n  visibility_timeout: 45s\nserver:\n  http_port: 9000\n');
    const run = await conveyor(['config', 'check'], { CONVEYOR_SERVER_HTTP_PORT: '9100', CONVEYOR_QUEUE_CONFIG_REFRESH_INTERVAL: '500ms' }, dir);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain(`# file: ${join(dir, 'conveyor.yaml')}`);
    expect(run.stdout).toContain('# environment: CONVEYOR_SERVER_HTTP_PORT, CONVEYOR_QUEUE_CONFIG_REFRESH_INTERVAL');
    const printed = parseYaml(run.stdout);
    expect(printed.queue).toMatchObject({ max_retries: 5, visibility_timeout: '45s', message_ttl: '24h', expiry_reaper_interval: '1m', config_refresh_interval: '500ms' });
    expect(printed.server).toMatchObject({ http_port: 9100, grpc_port: 50051, shutdown_timeout: '25s' });
    expect(printed.db.url).toBe('sqlite:./data/conveyor.db');
    expect(Object.keys(printed).sort()).toEqual(Object.keys(configSchema.shape).sort());
    // What it prints is itself a valid configuration file, equal to what the service would run with.
    expect(validateConfig(printed)).toEqual(validateConfig({ queue: { max_retries: 5, visibility_timeout: '45s', config_refresh_interval: '500ms' }, server: { http_port: 9100 } }));

    const json = await conveyor(['config', 'check', '--format', 'json', '--config', join(dir, 'conveyor.yaml')]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout).server.http_port).toBe(9000);
  });

  it('redacts the JWT secret, the bootstrap password and the passwords inside db.url and redis.url', async () => {
    // db.url's password as people paste it, unencoded: a URL parser takes `conveyor:1234/db-…@db.example` for
    // host `conveyor`, port 1234 and no password, so a check through it would show it whole. (A redis.url must
    // parse as a URL, so its password is percent-encoded where it needs to be.)
    const secrets = {
      jwt: 'jwt-secret-0123456789-0123456789-abcdef',
      password: 'admin-pass-word-1',
      db: '1234/db-pass-word-2',
      redis: '99%3Fredis-pass-word-3',
      credentials: Buffer.alloc(32, 1).toString('base64'),
      previous: Buffer.alloc(32, 2).toString('base64'),
    };
    const env = {
      CONVEYOR_AUTH_ENABLED: 'true',
      CONVEYOR_AUTH_JWT_SECRET: secrets.jwt,
      CONVEYOR_AUTH_USERNAME: 'admin',
      CONVEYOR_AUTH_PASSWORD: secrets.password,
      CONVEYOR_DB_URL: `mysql://conveyor:${secrets.db}@db.example:3306/queue`,
      CONVEYOR_REDIS_URL: `redis://:${secrets.redis}@redis.example:6379/0`,
      CONVEYOR_AUTH_CREDENTIALS_KEY: secrets.credentials,
      CONVEYOR_AUTH_PREVIOUS_CREDENTIALS_KEY: secrets.previous,
    };
    for (const format of ['yaml', 'json']) {
      const run = await conveyor(['config', 'check', '--format', format], env);
      expect(run.code, run.stderr).toBe(0);
      for (const secret of Object.values(secrets)) expect(run.stdout).not.toContain(secret);
      const printed = format === 'json' ? JSON.parse(run.stdout) : parseYaml(run.stdout);
      expect(printed.auth).toEqual({
        enabled: true,
        jwt_secret: '<redacted>',
        jwt_secret_file: '',
        username: 'admin',
        password: '<redacted>',
        password_file: '',
        credentials_key: '<redacted>',
        credentials_key_file: '',
        previous_credentials_key: '<redacted>',
        previous_credentials_key_file: '',
        kubernetes_enabled: false,
        kubernetes_issuer: '',
        kubernetes_audience: 'conveyor',
        kubernetes_jwks_url: '',
      });
      expect(printed.db.url).toBe('mysql://conveyor:***@db.example:3306/queue');
      expect(printed.redis.url).toBe('redis://:***@redis.example:6379/0');
    }
    // Unset secrets stay visibly empty.
    const plain = parseYaml((await conveyor(['config', 'check'])).stdout);
    expect(plain.auth.jwt_secret).toBe('');
  });

  it('refuses an invalid configuration with the same line as serve, exit 2', async () => {
    const invalid: Array<Record<string, string>> = [
      { CONVEYOR_SERVER_HTTP_PORT: 'abc' },
      { CONVEYOR_QUEUE_MESSAGE_TTL: 'forever' },
      { CONVEYOR_AUTH_ENABLED: 'true', CONVEYOR_AUTH_JWT_SECRET: 'short' },
      { CONVEYOR_DB_URL: 'postgres://u:p@localhost:5432/q' },
    ];
    for (const env of invalid) {
      const [check, serve] = await Promise.all([conveyor(['config', 'check'], env), conveyor(['serve'], { ...env, CONVEYOR_SERVER_HTTP_PORT: env.CONVEYOR_SERVER_HTTP_PORT ?? '0' })]);
      expect(check.code, JSON.stringify(env)).toBe(2);
      expect(check.stdout).toBe('');
      expect(check.stderr.trim().split('\n')).toHaveLength(1);
      expect(check.stderr).toMatch(/^conveyor: /);
      expect(check.stderr).toBe(serve.stderr);
      expect(check.stderr).not.toMatch(/u:p@|short/);
    }
    const file = join(tempDir(), 'bad.yaml');
    writeFileSync(file, 'queue:\n  visiblity_timeout: 45s\n');
    const typo = await conveyor(['config', 'check', '--config', file]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/^conveyor: invalid configuration: queue: .*visiblity_timeout/);
  });

  it('names CONVEYOR_* variables that are not configuration keys', async () => {
    const run = await conveyor(['config', 'check'], { CONVEYOR_DB_URI: 'mysql://x' });
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('conveyor: warning: CONVEYOR_DB_URI is not a configuration variable and is ignored\n');
  });
});

describe('conveyor serve: garbage-collection policy', () => {
  it('the V8 flags serve sets for itself exist in this Node (setting an unknown one only prints to stderr)', () => {
    const known = spawnSync(process.execPath, [...SERVE_V8_FLAGS, '-e', '0'], { encoding: 'utf8' });
    expect(known.stderr).toBe('');
    expect(known.status).toBe(0);
    // What a flag a Node release dropped would do on the command line.
    expect(spawnSync(process.execPath, ['--no-such-v8-flag', '-e', '0'], { encoding: 'utf8' }).status).not.toBe(0);
  });
});
