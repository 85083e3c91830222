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
 * Tells the listeners of knex's `query` event (a test's statement counter, for one) of a statement run here
 * as of one of knex's own. Without knex's query id, which the statement spans' listener
 * (src/tracing/statement-spans.ts) takes for the mark of its own statements: these have their span here.
 */
function announce(db: Knex, sql: string, bindings: readonly unknown[]): void {
  (db.client as unknown as { emit(event: string, query: unknown): void }).emit('query', { sql, bindings });
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
  announce(db, sql, values);
  // knex's statement spans do not see this statement: its span (with tracing on, in a traced request) starts here.
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

const START: Statement = { sql: 'START TRANSACTION', bindings: [] };
const COMMIT: Statement = { sql: 'COMMIT', bindings: [] };

/** Statements sent as one text (the connection's multipleStatements). */
const textOf = (statements: Statement[]) => statements.map((s) => s.sql).join(';\n');

/**
 * Whether a transaction's statements may share one text. Not on a Galera node: there a transaction that another
 * node's commit aborts (a brute-force abort, when the applier needs a row it holds) between two statements of
 * one text is rolled back without a word, and the rest of the text runs after it outside any transaction, each
 * statement committed on its own, COMMIT answering OK: the client hears that a transaction committed of which
 * only its last statements are stored (tried against a two-node cluster: a text of an UPDATE, a pause and
 * another UPDATE answered OK with only the second stored; sent one statement at a time, the statement after
 * the abort fails with 1213 and nothing is stored). Claims through two nodes handed a batch out twice so. A
 * compound statement (`BEGIN NOT ATOMIC ... END`) is one statement here: an abort inside it fails it.
 */
const sharesText = (db: Knex) => !capabilities(db).galera;

/**
 * Statements on one connection, in order: as one text (`text`, their textOf; one round trip) where they may
 * share it, else one at a time. Each one's result.
 */
async function sendOn(db: Knex, connection: PooledMysqlConnection, statements: Statement[], text: string): Promise<unknown[]> {
  const query = (sql: string, values: readonly unknown[]) => new Promise<unknown>((resolve, reject) => connection.query(sql, values, (err, rows) => (err ? reject(err) : resolve(rows))));
  if (statements.length > 1 && sharesText(db)) return (await query(text, bindingsOf(statements))) as unknown[];
  const results: unknown[] = [];
  let next = 0;
  // A transaction that has just begun holds no row, so no abort can come between START TRANSACTION and the
  // statement after it: those two share a text.
  if (statements.length > 1 && statements[0] === START) {
    results.push(...((await query(textOf(statements.slice(0, 2)), statements[1].bindings)) as unknown[]));
    next = 2;
  }
  for (; next < statements.length; next++) results.push(await query(statements[next].sql, statements[next].bindings));
  return results;
}

/** A text about to be sent, statement by statement: knex's trace line (`debug`) and query event (announce) for each. */
function report(db: Knex, statements: Statement[]): void {
  const client = db.client as PoolClient;
  if (client.config.debug) client.logger.debug(statements.map((s) => ({ sql: s.sql, bindings: s.bindings })));
  for (const s of statements) announce(db, s.sql, s.bindings);
}

/** The statements' values in order. A loop: flatMap over a group commit's few hundred values showed in profiles. */
function bindingsOf(statements: Statement[]): unknown[] {
  const values: unknown[] = [];
  for (const s of statements) for (const v of s.bindings) values.push(v);
  return values;
}

/**
 * Statements that need no answer of one another, in the transaction (or autocommit) `db` is, in order; resolves
 * to each one's result (runStatement's). MySQL/MariaDB: sent as one text, one round trip (on a Galera node one
 * at a time: sharesText); each statement still begins after the one before it ends, so a read after a locking
 * read sees what was committed while it waited. SQLite: one after another (a statement costs it no round trip).
 */
export async function runStatements(db: Knex, statements: Statement[]): Promise<unknown[]> {
  if (statements.length === 0) return [];
  if (!capabilities(db).driverQuery || statements.length === 1 || !sharesText(db)) {
    const results: unknown[] = [];
    for (const s of statements) results.push(await runStatement(db, s.sql, s.bindings));
    return results;
  }
  return (await runStatement(db, textOf(statements), bindingsOf(statements))) as unknown[];
}

/**
 * MySQL/MariaDB: a transaction of statements that need no answer of one another, sent as one text
 * (`START TRANSACTION; ...; COMMIT`) in one round trip; resolves to each statement's result in order. On a
 * loaded machine a round trip's socket write costs the service more CPU than building and reading the
 * statement (profiled: a third of an ordered enqueue's CPU went to mysql2's packet writes when its transaction
 * took seven round trips; docs/performance.md). The connection has multipleStatements on (src/store/db.ts).
 * A Galera node gets them one at a time (the first with START TRANSACTION), a round trip each (sharesText says why).
 *
 * A statement that fails ends the text there; the transaction is rolled back on the same connection before
 * the connection goes back to the pool, and the error is typed as runStatement's (for withDbRetry). A lost
 * connection leaves the commit unknown, as any transaction's.
 */
export async function runInOneTrip(db: Knex, statements: Statement[]): Promise<unknown[]> {
  const client = db.client as PoolClient;
  const all = [START, ...statements, COMMIT];
  const sql = textOf(all);
  const connection = await client.acquireConnection();
  report(db, all);
  const span = startStatementSpan('mysql', sql);
  try {
    const results = await sendOn(db, connection, all, sql);
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

/**
 * MySQL/MariaDB: a transaction in two round trips, for one whose end depends on what its first statements
 * found: `first` after START TRANSACTION, then the statements `then` makes of their results, and COMMIT.
 * Resolves to both parts' results. Errors as runInOneTrip's: the transaction is rolled back on its connection
 * before the connection goes back to the pool. A Galera node gets the statements one at a time, as runInOneTrip's.
 */
export async function runInTwoTrips(
  db: Knex,
  first: Statement[],
  then: (results: unknown[]) => Statement[],
): Promise<{ first: unknown[]; then: unknown[] }> {
  const client = db.client as PoolClient;
  const connection = await client.acquireConnection();
  const trip = async (statements: Statement[]): Promise<unknown[]> => {
    const sql = textOf(statements);
    report(db, statements);
    const span = startStatementSpan('mysql', sql);
    try {
      const results = await sendOn(db, connection, statements, sql);
      endStatementSpan(span);
      return results;
    } catch (err) {
      endStatementSpan(span, err);
      throw err;
    }
  };
  try {
    const opened = await trip([START, ...first]);
    const firstResults = opened.slice(1);
    const next = then(firstResults);
    const closed = await trip([...next, COMMIT]);
    return { first: firstResults, then: closed.slice(0, -1) };
  } catch (err) {
    await new Promise<void>((resolve) => connection.query('ROLLBACK', [], () => resolve()));
    throw typedError(err);
  } finally {
    await client.releaseConnection(connection);
  }
}
