import type { Knex } from 'knex';

export type Engine = 'sqlite' | 'mysql';

export function engineOf(db: Knex): Engine {
  const client = String(db.client.config.client);
  return client === 'mysql2' || client === 'mysql' ? 'mysql' : 'sqlite';
}

const deleteReturning = new WeakMap<object, Promise<boolean>>();

/**
 * `DELETE ... RETURNING`: SQLite (3.35+) and MariaDB (10.0.5+) have it, MySQL 8 does not. Asked once per
 * pool (SELECT VERSION()); a failed probe answers no, which only costs the transactional fallback.
 */
export function canDeleteReturning(db: Knex): Promise<boolean> {
  if (engineOf(db) === 'sqlite') return Promise.resolve(true);
  let answer = deleteReturning.get(db.client);
  if (!answer) {
    answer = db
      .raw('SELECT VERSION() AS version')
      .then(([rows]: [Array<{ version: string }>]) => /mariadb/i.test(rows[0]?.version ?? ''))
      .catch(() => false);
    deleteReturning.set(db.client, answer);
  }
  return answer;
}

/** MySQL/MariaDB error numbers and SQLite codes that mean "another transaction won; run it again". */
export function isRetryableConflict(err: unknown): boolean {
  const e = err as { errno?: number; code?: string };
  return e?.errno === 1213 || e?.errno === 1205 || e?.code === 'SQLITE_BUSY';
}

export function isUniqueViolation(err: unknown): boolean {
  const e = err as { errno?: number; code?: string };
  return e?.errno === 1062 || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; fatal?: boolean; name?: string };
  return (
    e?.fatal === true ||
    e?.name === 'KnexTimeoutError' ||
    ['ECONNREFUSED', 'ECONNRESET', 'PROTOCOL_CONNECTION_LOST', 'ETIMEDOUT', 'EPIPE', 'ER_CON_COUNT_ERROR'].includes(e?.code ?? '')
  );
}
