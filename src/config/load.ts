import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { configSchema, tracesHeadersValid, type Config } from './schema.js';
import { readSecretFiles, withoutSecrets } from './secret-files.js';
import { credentialsKeyProblem } from '../auth/credentials-cipher.js';

export class ConfigError extends Error {}

type Tree = Record<string, Record<string, unknown>>;

/** The section/key pairs the schema knows, so `CONVEYOR_QUEUE_MAX_RETRIES` maps to `queue.max_retries` unambiguously. */
function knownKeys(): Array<[section: string, key: string]> {
  const pairs: Array<[string, string]> = [];
  for (const [section, sectionSchema] of Object.entries(configSchema.shape)) {
    const inner = (sectionSchema as unknown as { def: { innerType: { shape: Record<string, unknown> } } }).def.innerType;
    for (const key of Object.keys(inner.shape)) pairs.push([section, key]);
  }
  return pairs;
}

function readFile(path: string | undefined): Tree {
  if (!path) return {};
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`config file ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`config file ${path}: invalid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (parsed == null) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`config file ${path}: expected a mapping of sections`);
  return parsed as Tree;
}

function applyEnv(tree: Tree, env: NodeJS.ProcessEnv): Tree {
  const merged: Tree = { ...tree };
  for (const [section, key] of knownKeys()) {
    const value = env[`CONVEYOR_${section}_${key}`.toUpperCase()];
    if (value === undefined) continue;
    merged[section] = { ...(merged[section] ?? {}), [key]: value };
  }
  return merged;
}

export interface LoadOptions {
  configPath?: string;
  env?: NodeJS.ProcessEnv;
  /** Values layered over file and environment (used by tests and the benchmark). */
  overrides?: Partial<Record<string, Record<string, unknown>>>;
}

/** Loads `conveyor.yaml` (or `--config` / `CONVEYOR_CONFIG`), applies `CONVEYOR_*` overrides and validates once. */
export function loadConfig(options: LoadOptions = {}): Config {
  const env = options.env ?? process.env;
  const path = options.configPath ?? env.CONVEYOR_CONFIG ?? (existsSync('conveyor.yaml') ? 'conveyor.yaml' : undefined);
  let tree = applyEnv(readFile(path), env);
  for (const [section, values] of Object.entries(options.overrides ?? {})) {
    tree = { ...tree, [section]: { ...(tree[section] ?? {}), ...values } };
  }
  return validateConfig(tree);
}

/**
 * What is wrong with a redis.url, or undefined ("" is none). Checked here rather than left to the client:
 * `localhost:6379` would otherwise fail after the migrations ran, and `redis:6379` (no //) reads as localhost.
 */
function redisUrlProblem(url: string): string | undefined {
  if (url === '') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'expected redis://[user:password@]host[:port][/db] or rediss://… (percent-encode @ : / ? # in a password)';
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') return 'expected the scheme redis:// or rediss://';
  if (!url.slice(parsed.protocol.length).startsWith('//') || parsed.hostname === '') {
    return 'expected redis://[user:password@]host[:port][/db] (a host after //; percent-encode @ : / ? # in a password)';
  }
  if (!/^\/?(\d+)?$/.test(parsed.pathname)) return 'the path must be a database number, such as /0';
  return undefined;
}

const isHttpUrl = (value: string) => {
  try {
    return ['https:', 'http:'].includes(new URL(value).protocol);
  } catch {
    return false;
  }
};

/** The credentials keys and the Kubernetes issuer settings (docs/auth.md): checked together, as they work together. */
function authProblems(config: Config, fromFiles: Set<string>): void {
  const auth = config.auth;
  for (const [key, fileKey] of [['credentials_key', 'credentials_key_file'], ['previous_credentials_key', 'previous_credentials_key_file']] as const) {
    const problem = auth[key] === '' ? undefined : credentialsKeyProblem(auth[key]);
    const source = fromFiles.has(`auth.${key}`) ? ` (read from ${auth[fileKey]})` : '';
    if (problem) throw new ConfigError(`invalid configuration: auth.${key}${source}: ${problem}`);
  }
  if (auth.previous_credentials_key !== '' && auth.credentials_key === '') {
    throw new ConfigError('invalid configuration: auth.previous_credentials_key: needs auth.credentials_key, the key it is rotated to');
  }
  if (!auth.kubernetes_enabled) return;
  if (!auth.enabled) throw new ConfigError('invalid configuration: auth.kubernetes_enabled: needs auth.enabled: true');
  if (!isHttpUrl(auth.kubernetes_issuer)) throw new ConfigError('invalid configuration: auth.kubernetes_issuer: expected the issuer URL (https://...) when auth.kubernetes_enabled is true');
  if (auth.kubernetes_audience.trim() === '') throw new ConfigError('invalid configuration: auth.kubernetes_audience: must not be empty');
  if (auth.kubernetes_jwks_url !== '' && !isHttpUrl(auth.kubernetes_jwks_url)) throw new ConfigError('invalid configuration: auth.kubernetes_jwks_url: expected an https:// URL, or "" for the discovery document\'s');
}

export function validateConfig(tree: unknown): Config {
  const result = configSchema.safeParse(tree);
  if (!result.success) {
    const issue = result.error.issues[0];
    const key = issue.path.join('.') || '(root)';
    throw new ConfigError(`invalid configuration: ${key}: ${withoutSecrets(issue.message, tree)}`);
  }
  const config = result.data;
  const fromFiles = readSecretFiles(config, tree, (message) => new ConfigError(message));
  if (config.auth.enabled && Buffer.byteLength(config.auth.jwt_secret) < 32) {
    const source = fromFiles.has('auth.jwt_secret') ? ` (read from ${config.auth.jwt_secret_file})` : '';
    throw new ConfigError(`invalid configuration: auth.jwt_secret${source}: must be at least 32 bytes when auth.enabled is true`);
  }
  authProblems(config, fromFiles);
  // The schema checked a value given directly; one read from its file is checked here.
  if (fromFiles.has('telemetry.traces_headers') && !tracesHeadersValid(config.telemetry.traces_headers)) {
    throw new ConfigError(`invalid configuration: telemetry.traces_headers (read from ${config.telemetry.traces_headers_file}): expected name=value pairs separated by commas`);
  }
  // The request timeout counts from the first byte of the headers, so a longer headers timeout could never fire.
  if (config.server.http_headers_timeout > config.server.http_request_timeout) {
    throw new ConfigError('invalid configuration: server.http_headers_timeout: must not exceed server.http_request_timeout');
  }
  const redisProblem = redisUrlProblem(config.redis.url);
  if (redisProblem) {
    const source = fromFiles.has('redis.url') ? ` (read from ${config.redis.url_file})` : '';
    throw new ConfigError(`invalid configuration: redis.url${source}: ${redisProblem}`);
  }
  const { tls_cert_file: cert, tls_key_file: key, tls_client_ca_file: clientCa } = config.server;
  if (Boolean(cert) !== Boolean(key)) {
    throw new ConfigError('invalid configuration: server.tls_cert_file and server.tls_key_file: set both (TLS) or neither (plaintext)');
  }
  if (clientCa && !cert) {
    throw new ConfigError('invalid configuration: server.tls_client_ca_file: mutual TLS needs server.tls_cert_file and server.tls_key_file too');
  }
  return config;
}
