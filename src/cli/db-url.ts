import { ConfigError } from '../config/load.js';

/**
 * A db.url no engine can open is a configuration error (exit 2) for every command that opens the database,
 * said as `config check` says it (and never with the URL).
 */
export async function assertOpenableDbUrl(url: string): Promise<void> {
  const { describeDb } = await import('../store/db.js');
  try {
    describeDb(url);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}
