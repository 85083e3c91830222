import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { ConfigError, loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { redactText } from '../log/redact.js';
import { configKeys, type ConfigKey } from './config-keys.js';
import { CONFIG_OPTION, HELP_OPTION, type CommandHelp } from './help.js';

export const configCheckHelp: CommandHelp = {
  name: 'config check',
  synopsis: 'conveyor config check [--config FILE] [--format yaml|json]',
  summary: 'validate the configuration file and environment; print the result, secrets redacted',
  description: `Reads the configuration exactly as conveyor serve does (the file, then CONVEYOR_* variables over it),
validates it and prints the effective configuration with every default filled in (durations as 25s, 5m,
24h), itself a valid conveyor.yaml. auth.jwt_secret and auth.password are shown as "<redacted>" when set, and the password inside
db.url and redis.url as "***"; a value read from its *_file key is shown as that key's path alone (the files
are read, so a missing one is an error here too). CONVEYOR_* variables that are not configuration keys are named on stderr.
It connects to nothing.`,
  options: [CONFIG_OPTION, { flag: '--format yaml|json', description: 'output format', default: 'yaml' }, HELP_OPTION],
  config: configKeys().map((k) => k.key),
  exitCodes: '0 when the configuration is valid; 2 when it is not (one line on stderr naming the key, as conveyor serve would say).',
};

export const REDACTED = '<redacted>';

function redact(key: ConfigKey, value: unknown): unknown {
  if (key.sensitive === 'secret') return value === '' ? '' : REDACTED;
  // mysql://user:secret@host/db -> mysql://user:***@host/db, by the same rule as every log line.
  if (key.sensitive === 'url-password' && typeof value === 'string') return redactText(value);
  return value;
}

/** Seconds back into the form a configuration file takes: 86400 -> "24h", 300 -> "5m", 25 -> "25s", 0.2 -> "200ms". */
export function durationText(seconds: number): string {
  if (!Number.isInteger(seconds)) return `${Math.round(seconds * 1000)}ms`;
  if (seconds > 0 && seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds > 0 && seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}

/** The configuration as a file would hold it: sections of keys, durations as text, secrets redacted. */
export function effectiveConfig(config: Config): Record<string, Record<string, unknown>> {
  const tree = config as unknown as Record<string, Record<string, unknown>>;
  const out: Record<string, Record<string, unknown>> = {};
  for (const key of configKeys()) {
    let value = tree[key.section][key.name];
    // A value read from its `<key>_file` is shown as that path alone: the output stays a valid conveyor.yaml
    // (a value and its file both set is refused) and the secret never leaves the file.
    if (typeof tree[key.section][`${key.name}_file`] === 'string' && tree[key.section][`${key.name}_file`] !== '') value = '';
    if (key.duration && typeof value === 'number') value = durationText(value);
    (out[key.section] ??= {})[key.name] = redact(key, value);
  }
  return out;
}

/** The same file loadConfig reads (load.ts): --config, CONVEYOR_CONFIG, else ./conveyor.yaml when it exists. */
function configFileOf(configPath: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  return configPath ?? env.CONVEYOR_CONFIG ?? (existsSync('conveyor.yaml') ? 'conveyor.yaml' : undefined);
}

/** Variables a test harness uses, not meant as configuration. */
const NOT_CONFIGURATION = new Set(['CONVEYOR_CONFIG', 'CONVEYOR_TEST_LOG_REPEAT_MS']);

export async function configCheck(configPath: string | undefined, format: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (format !== undefined && format !== 'yaml' && format !== 'json') throw new ConfigCheckUsageError(`--format must be yaml or json, not "${format}"`);
  const config = loadConfig({ configPath, env });
  const { describeDb } = await import('../store/db.js');
  try {
    describeDb(config.db.url);
  } catch (err) {
    // The line conveyor serve would print for a db.url it cannot open.
    throw new ConfigError((err as Error).message);
  }
  const keys = configKeys();
  const known = new Set(keys.map((k) => k.env));
  const unknown = Object.keys(env).filter((name) => name.startsWith('CONVEYOR_') && !known.has(name) && !NOT_CONFIGURATION.has(name)).sort();
  for (const name of unknown) process.stderr.write(`conveyor: warning: ${name} is not a configuration variable and is ignored\n`);

  const effective = effectiveConfig(config);
  if (format === 'json') {
    process.stdout.write(`${JSON.stringify(effective, null, 2)}\n`);
    return;
  }
  const file = configFileOf(configPath, env);
  const overridden = keys.filter((k) => env[k.env] !== undefined).map((k) => k.env);
  const header = [
    '# conveyor config check: the configuration is valid',
    `# file: ${file ? resolve(file) : 'none (defaults and environment only)'}`,
    `# environment: ${overridden.length > 0 ? overridden.join(', ') : 'no CONVEYOR_* overrides'}`,
  ];
  process.stdout.write(`${header.join('\n')}\n${toYaml(effective)}`);
}

export class ConfigCheckUsageError extends Error {}
