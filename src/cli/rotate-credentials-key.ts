import { ConfigError, loadConfig } from '../config/load.js';
import { createStderrLogger } from '../log/logger.js';
import { assertOpenableDbUrl } from './db-url.js';
import { CONFIG_OPTION, HELP_OPTION, type CommandHelp } from './help.js';
import { quietConnectionLogger } from './one-shot.js';

export const rotateCredentialsKeyHelp: CommandHelp = {
  name: 'rotate-credentials-key',
  synopsis: 'conveyor rotate-credentials-key [--config FILE]',
  summary: 're-encrypt the access keys\' secrets under auth.credentials_key and exit',
  description: `Re-encrypts every access key's secret that is not yet under auth.credentials_key (the new key), reading
it with auth.previous_credentials_key (the old one), and prints {"reencrypted":N,"current":M,"unreadable":0}
on stdout. Run it once every instance runs with both keys set; then remove auth.previous_credentials_key
(docs/auth.md, Rotating the credentials key). It runs beside the service and may be run again: a key
already under the new key is left alone. It expects a migrated database (conveyor migrate).`,
  options: [CONFIG_OPTION, HELP_OPTION],
  config: ['db.url', 'db.url_file', 'db.lock_wait_timeout', 'auth.credentials_key', 'auth.credentials_key_file', 'auth.previous_credentials_key', 'auth.previous_credentials_key_file', 'log.level'],
  exitCodes:
    '0 when every key is under auth.credentials_key; 2 for an invalid configuration or no auth.credentials_key; 1 when keys under an unknown credentials key were left as they are, or the database fails (one line on stderr).',
};

export async function rotateCredentialsKey(configPath: string | undefined): Promise<void> {
  const config = loadConfig({ configPath });
  if (!config.auth.credentials_key) throw new ConfigError('invalid configuration: auth.credentials_key: must be set to the key to rotate to');
  await assertOpenableDbUrl(config.db.url);
  const { createDb } = await import('../store/db.js');
  const { CredentialsCipher } = await import('../auth/credentials-cipher.js');
  const { reencryptAccessKeys } = await import('../auth/credentials-rotation.js');
  const db = createDb({ url: config.db.url, logger: quietConnectionLogger(createStderrLogger(config.log.level)), lockWaitTimeoutSeconds: config.db.lock_wait_timeout });
  try {
    const cipher = new CredentialsCipher(config.auth.credentials_key, config.auth.previous_credentials_key || undefined);
    const { reencrypted, current, unreadable } = await reencryptAccessKeys(db, cipher);
    process.stdout.write(`${JSON.stringify({ reencrypted, current, unreadable: unreadable.length })}\n`);
    if (unreadable.length > 0) {
      throw new Error(
        `${unreadable.length} access keys (${unreadable.slice(0, 5).join(', ')}${unreadable.length > 5 ? ', ...' : ''}) are encrypted under a key that is neither auth.credentials_key nor auth.previous_credentials_key; they were left as they are`,
      );
    }
  } finally {
    await db.destroy();
  }
}
