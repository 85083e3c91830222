/**
 * Why a statement or transaction failed in a way that running it again can cure:
 * - `deadlock`: InnoDB picked it as a deadlock victim, or Galera aborted it in certification (both 1213);
 * - `lock_wait`: a row lock wait timed out (1205), or SQLite's lock stayed taken past db.lock_wait_timeout
 *   (SQLITE_BUSY; SQLITE_BUSY_SNAPSHOT: a read transaction that another process's write made stale);
 * - `wsrep_not_ready`: a Galera node outside the primary component refuses queries (1047);
 * - `connection_lost`: the connection died under a statement. Unlike the others this one may have committed
 *   (the COMMIT or an autocommit statement reached the server, its answer did not): see src/store/retry.ts;
 * - `interrupted`: the server stopped the statement: `KILL QUERY` by an operator (1317), or a statement time
 *   limit (MariaDB's max_statement_time, 1969; MySQL's max_execution_time, 3024). The transaction is rolled
 *   back whole by its caller, as after any failed statement.
 */
export const CONFLICT_KINDS = ['deadlock', 'lock_wait', 'wsrep_not_ready', 'connection_lost', 'interrupted'] as const;
export type ConflictKind = (typeof CONFLICT_KINDS)[number];

/** Errors of connecting in the first place: the database is away, not a query that a retry would rescue. */
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'ER_CON_COUNT_ERROR', 'ER_ACCESS_DENIED_ERROR', 'ER_BAD_DB_ERROR', 'HANDSHAKE_NO_SSL_SUPPORT']);
/** mysql2 codes and client/server error numbers of a connection that broke under a statement. */
const LOST_CODES = new Set(['PROTOCOL_CONNECTION_LOST', 'ECONNRESET', 'EPIPE', 'ECONNABORTED', 'PROTOCOL_SEQUENCE_TIMEOUT', 'ER_CONNECTION_KILLED', 'ER_SERVER_SHUTDOWN']);
// 2006 server gone away, 2013 lost connection during query (client numbers); 1053 server shutdown, 1927 connection killed.
const LOST_ERRNOS = new Set([2006, 2013, 1053, 1927]);
const INTERRUPTED_ERRNOS = new Set([1317, 1969, 3024]);
/**
 * The server refuses the statement for as long as its settings stay as they are, so a retry would not help:
 * it runs read-only (1290 `--read-only`, 1836 read-only mode: a replica, or a primary demoted in a failover),
 * or the statement is larger than max_allowed_packet (1153: lowered since start-up, src/store/packet-size.ts).
 */
const REFUSING_ERRNOS = new Set([1290, 1836, 1153]);

export function conflictKind(err: unknown): ConflictKind | undefined {
  const e = err as { errno?: number; code?: string; fatal?: boolean; message?: unknown } | null;
  if (!e || typeof e !== 'object') return undefined;
  if (e.errno === 1213) return 'deadlock';
  if (e.errno === 1205 || (typeof e.code === 'string' && e.code.startsWith('SQLITE_BUSY'))) return 'lock_wait';
  if (e.errno === 1047 || (typeof e.message === 'string' && e.message.includes('WSREP has not yet prepared node'))) return 'wsrep_not_ready';
  if (INTERRUPTED_ERRNOS.has(e.errno ?? 0)) return 'interrupted';
  if (CONNECT_FAILURES.has(e.code ?? '') || REFUSING_ERRNOS.has(e.errno ?? 0)) return undefined;
  if (LOST_CODES.has(e.code ?? '') || LOST_ERRNOS.has(e.errno ?? 0) || e.fatal === true) return 'connection_lost';
  return undefined;
}

export function isUniqueViolation(err: unknown): boolean {
  const e = err as { errno?: number; code?: string };
  return e?.errno === 1062 || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/**
 * SQLite's file cannot be written or read: the disk is full (or the file at its size limit), an I/O error, the
 * file or its directory became read-only, unreadable or damaged. Like a database that is away.
 */
const SQLITE_STORAGE_FAILURE = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN|CORRUPT|NOTADB)/;

/** The database cannot serve this now (unreachable, out of connections, refusing writes): 503 "database unavailable". */
export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; errno?: number; fatal?: boolean; name?: string };
  return (
    e?.fatal === true ||
    REFUSING_ERRNOS.has(e?.errno ?? 0) ||
    SQLITE_STORAGE_FAILURE.test(e?.code ?? '') ||
    e?.name === 'KnexTimeoutError' ||
    ['ECONNREFUSED', 'ECONNRESET', 'PROTOCOL_CONNECTION_LOST', 'ETIMEDOUT', 'EPIPE', 'ER_CON_COUNT_ERROR'].includes(e?.code ?? '')
  );
}
