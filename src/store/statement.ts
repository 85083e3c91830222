import type { Knex } from 'knex';
import { capabilities } from './capabilities.js';
import { typedError } from './errors.js';
import { endStatementSpan, startStatementSpan } from '../tracing/statement-spans.js';

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
  // knex's query events do not see this statement: its span (with tracing on, in a traced request) starts here.
  const span = startStatementSpan('mysql', sql);
  try {
    // Outside a transaction, typed as knex's own statements are (src/store/errors.ts); in one, the driver's error.
    const rows = await new Promise((resolve, reject) => connection.query(sql, values, (err, rows) => (err ? reject(db.isTransaction ? err : typedError(err)) : resolve(rows))));
    endStatementSpan(span);
    return rows;
  } catch (err) {
    endStatementSpan(span, err);
    throw err;
  } finally {
    await client.releaseConnection(connection);
  }
}

/** One statement of a one-trip transaction: its text with `?` placeholders, and their values. */
export interface Statement {
  sql: string;
  bindings: readonly unknown[];
}

/**
 * MySQL/MariaDB: a transaction of statements that need no answer of one another, sent as one text
 * (`START TRANSACTION; ...; COMMIT`) in one round trip; resolves to each statement's result in order. On a
 * loaded machine a round trip's socket write costs the service more CPU than building and reading the
 * statement (profiled: a third of an ordered enqueue's CPU went to mysql2's packet writes when its transaction
 * took seven round trips; docs/performance.md). The connection has multipleStatements on (src/store/db.ts).
 *
 * A statement that fails ends the text there; the transaction is rolled back on the same connection before
 * the connection goes back to the pool, and the error is typed as runStatement's (for withDbRetry). A lost
 * connection leaves the commit unknown, as any transaction's.
 */
export async function runInOneTrip(db: Knex, statements: Statement[]): Promise<unknown[]> {
  const client = db.client as PoolClient;
  const sql = ['START TRANSACTION', ...statements.map((s) => s.sql), 'COMMIT'].join(';\n');
  const values = statements.flatMap((s) => s.bindings);
  if (client.config.debug) client.logger.debug({ sql, bindings: values });
  const connection = await client.acquireConnection();
  const span = startStatementSpan('mysql', sql);
  try {
    const results = await new Promise<unknown[]>((resolve, reject) => connection.query(sql, values, (err, rows) => (err ? reject(err) : resolve(rows as unknown[]))));
    endStatementSpan(span);
    return results.slice(1, -1);
  } catch (err) {
    endStatementSpan(span, err);
    await new Promise<void>((resolve) => connection.query('ROLLBACK', [], () => resolve()));
    throw typedError(err);
  } finally {
    await client.releaseConnection(connection);
  }
}
