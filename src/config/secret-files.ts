import { readFileSync } from 'node:fs';
import { redactText } from '../log/redact.js';
import type { Config } from './schema.js';

/**
 * The settings that hold secrets, each also accepted from a file (`<key>_file`): Kubernetes mounts a Secret
 * as files, and a file keeps the value out of the environment that `kubectl describe` and crash dumps show.
 */
export const SECRET_SETTINGS = [
  { section: 'db', key: 'url', fileKey: 'url_file' },
  { section: 'auth', key: 'jwt_secret', fileKey: 'jwt_secret_file' },
  { section: 'auth', key: 'password', fileKey: 'password_file' },
  { section: 'auth', key: 'credentials_key', fileKey: 'credentials_key_file' },
  { section: 'auth', key: 'previous_credentials_key', fileKey: 'previous_credentials_key_file' },
  { section: 'redis', key: 'url', fileKey: 'url_file' },
  { section: 'telemetry', key: 'traces_headers', fileKey: 'traces_headers_file' },
] as const;

type Tree = Record<string, Record<string, unknown> | undefined> | undefined;

const given = (tree: Tree, section: string, key: string) => {
  const value = tree?.[section]?.[key];
  return value !== undefined && value !== null && value !== '';
};

/** One trailing newline is the editor's (or `echo`'s), not the secret's: `\n` or `\r\n`, once. */
export function withoutTrailingNewline(text: string): string {
  return text.endsWith('\r\n') ? text.slice(0, -2) : text.endsWith('\n') ? text.slice(0, -1) : text;
}

/**
 * Reads every `<key>_file` that is set into its key. `tree` is what was given (file and environment, before
 * defaults), so a value and its file both given is an error even when the value equals the default. Errors
 * name the key and the path, never what the file holds.
 */
export function readSecretFiles(config: Config, tree: unknown, error: (message: string) => Error): Set<string> {
  const fromFiles = new Set<string>();
  const sections = config as unknown as Record<string, Record<string, unknown>>;
  for (const { section, key, fileKey } of SECRET_SETTINGS) {
    const path = sections[section][fileKey];
    if (typeof path !== 'string' || path === '') continue;
    if (given(tree as Tree, section, key)) {
      throw error(`invalid configuration: ${section}.${key} and ${section}.${fileKey} are both set; set one of them`);
    }
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code ?? 'unreadable';
      throw error(`invalid configuration: ${section}.${fileKey}: cannot read ${path} (${reason})`);
    }
    sections[section][key] = withoutTrailingNewline(text);
    fromFiles.add(`${section}.${key}`);
  }
  return fromFiles;
}

/**
 * A validation message with every secret of `tree` taken out: a schema message may quote the value it
 * refused, and a secret must not reach a terminal or a log that way. URL passwords go by shape, the other
 * secrets by value.
 */
export function withoutSecrets(message: string, tree: unknown): string {
  let text = redactText(message);
  for (const { section, key } of SECRET_SETTINGS) {
    const value = (tree as Tree)?.[section]?.[key];
    if (typeof value === 'string' && value.length >= 3) text = text.split(value).join('<redacted>');
  }
  return text;
}
