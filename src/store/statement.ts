import type { Knex } from 'knex';
import { capabilities } from './capabilities.js';
import { typedError } from './errors.js';

interface PooledMysqlConnection {
  query(sql: string, values: readonly unknown[], callback: (err: Error | null, rows: unknown) => void): void;
}

interface PoolClient {
  acquireConnection(): Promise<PooledMysqlConnection>;
  releaseConnection(connection: PooledMysqlConnection): Promise<void>;
  config: { debug?: boolean };
  logger: { debug(message: unknown): void };
}

/**
 * One statement with `?` placeholders, autocommit or in the transaction `db` is; what it returns: the rows of a
 * SELECT or a RETURNING, or MySQL's result header (affectedRows) of any other statement.
 *
 * On MySQL it goes to mysql2 on a connection of the pool, not through knex's raw query: knex rewrites every
 * placeholder of a raw statement before mysql2 formats them again, then runs the statement through its query
 * runner. For the service's hottest statements, a group commit's INSERT of many rows and an ack batch's
 * DELETE, that was about a third of the database client's CPU (docs/benchmark.md, tenth round). What stays
 * the same: the pool (its session settings, its checks of a connection before reuse), the errors (typed
 * outside a transaction, mysql2's own in one: src/store/errors.ts) and knex's trace line. Given a transaction, the
 * connection is the transaction's: knex's transaction client hands out only that one.
 * SQLite: knex's raw statement, whose result is the rows already.
 */
export async function runStatement(db: Knex, sql: string, values: readonly unknown[]): Promise<unknown> {
  if (!capabilities(db).driverQuery) return db.raw(sql, values as Knex.RawBinding[]);
  const client = db.client as PoolClient;
  // The shape knex's `debug` hands its logger (src/store/db.ts turns it into a line without values).
  if (client.config.debug) client.logger.debug({ sql, bindings: values });
  const connection = await client.acquireConnection();
  try {
    // Outside a transaction, typed as knex's own statements are (src/store/errors.ts); in one, the driver's error.
    return await new Promise((resolve, reject) => connection.query(sql, values, (err, rows) => (err ? reject(db.isTransaction ? err : typedError(err)) : resolve(rows))));
  } finally {
    await client.releaseConnection(connection);
  }
}
