/**
 * What may leave the process in a log line, decided in one place: every error that reaches a logger goes
 * through safeError, every string field through redactText. Call sites need not know which errors are risky.
 */

/** Longest message text kept from an error that is not ours; the rest is cut. */
const MAX_MESSAGE = 500;

/**
 * scheme://user:password@host -> scheme://user:***@host, wherever it appears in a text. The password runs to
 * the last `@` before a space, so one with an unencoded `@`, `/`, `?` or `#` is hidden whole (a URL parser
 * would take `u:1234/abc@h` for host `u`, port 1234 and no password at all). An `@` later in a path or query
 * hides more than the password: safe, and rare in the URLs a log line holds.
 */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@:]*):(\S*)@/gi;
/** password=..., jwt_secret=..., token=... in a query string or a connection string. */
const PASSWORD_PARAMETER = /\b([\w.-]*?(?:password|passwd|pass|pwd|secret|token))=([^\s&;,'"]+)/gi;

/** The password of every URL-looking text, and `password=` parameters, replaced by `***`. */
export function redactText(text: string): string {
  if (!text.includes('=') && !text.includes('@')) return text;
  return text.replace(URL_CREDENTIALS, '$1$2:***@').replace(PASSWORD_PARAMETER, '$1=***');
}

function capped(text: string): string {
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE)}…` : text;
}

/**
 * Driver codes whose message is a fixed text naming at most a table, a column, a user or a host: kept, because
 * they tell an operator what is wrong. Every other database error loses its message: MySQL's quote values
 * (`Duplicate entry '<key>' for key ...`, `Incorrect integer value: '<value>'`, a parse error quoting the
 * statement), and knex prefixes all of them with the statement.
 */
const VALUE_FREE_MESSAGES = new Set([
  'ER_ACCESS_DENIED_ERROR',
  'ER_DBACCESS_DENIED_ERROR',
  'ER_BAD_DB_ERROR',
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_LOCK_DEADLOCK',
  'ER_NO_SUCH_TABLE',
  'ER_TABLE_EXISTS_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_QUERY_INTERRUPTED',
  'ER_OPTION_PREVENTS_STATEMENT',
  'ER_RECORD_FILE_FULL',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_READONLY',
  'SQLITE_FULL',
  'SQLITE_IOERR',
  'SQLITE_CANTOPEN',
  'SQLITE_CORRUPT',
  'SQLITE_NOTADB',
  'SQLITE_CONSTRAINT_UNIQUE',
  'SQLITE_CONSTRAINT_PRIMARYKEY',
  'SQLITE_CONSTRAINT_NOTNULL',
  'SQLITE_CONSTRAINT_FOREIGNKEY',
  'SQLITE_CONSTRAINT_CHECK',
]);

const SQL_START = /^\s*\(?\s*(select|insert|replace|update|delete|with|start|begin|commit|rollback|savepoint|release|pragma|set|create|alter|drop|truncate|lock|unlock|show|call|analyze)\b/i;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** SQL with its quoted literals gone, so no word of a value can be taken for a table name. */
function withoutLiterals(sql: string): string {
  return sql.replace(/'(?:[^'\\]|\\.|'')*'/g, '?').replace(/"(?:[^"\\]|\\.|"")*"/g, '?');
}

/**
 * A statement's shape without any value: its first keyword and the table it works on, e.g. `insert messages`,
 * `select topic_configs`, `begin`. Undefined for anything that does not start like SQL.
 */
export function statementShape(sql: string): string | undefined {
  const start = SQL_START.exec(sql);
  if (!start) return undefined;
  const keyword = start[1].toLowerCase();
  const text = withoutLiterals(sql.slice(0, 4000));
  const name = '[`"\\[]?([A-Za-z_][A-Za-z0-9_]*)';
  const table =
    keyword === 'insert' || keyword === 'replace'
      ? new RegExp(`^\\s*(?:insert|replace)\\s+(?:ignore\\s+)?into\\s+${name}`, 'i').exec(text)
      : keyword === 'update'
        ? new RegExp(`^\\s*update\\s+(?:ignore\\s+)?${name}`, 'i').exec(text)
        : keyword === 'delete' || keyword === 'select' || keyword === 'with'
          ? new RegExp(`\\bfrom\\s+${name}`, 'i').exec(text)
          : undefined;
  const tableName = table?.[1];
  return tableName && IDENTIFIER.test(tableName) ? `${keyword} ${tableName}` : keyword;
}

type ErrorLike = {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  errno?: unknown;
  sqlState?: unknown;
  sqlMessage?: unknown;
  sql?: unknown;
  stack?: unknown;
  cause?: unknown;
};

/** knex prefixes a failed query's message with the statement: `insert into ... - <driver message>`. */
const KNEX_PREFIXED = (message: string) => SQL_START.test(message) && message.includes(' - ');

/** Whether an error came from the database driver, whose message may quote values. */
export function isDatabaseError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as ErrorLike;
  // Ours, with messages written to be shown (src/queue/errors.ts), and knex's fixed pool-timeout text.
  if (e.name === 'DomainError' || e.name === 'KnexTimeoutError') return false;
  if (typeof e.sqlState === 'string' || typeof e.sqlMessage === 'string' || typeof e.sql === 'string') return true;
  if (e.name === 'SqliteError') return true;
  if (typeof e.code === 'string' && /^(ER_|SQLITE_)/.test(e.code)) return true;
  return typeof e.message === 'string' && KNEX_PREFIXED(e.message);
}

/**
 * Marks what safeError made, so a serializer that meets it again (a RepeatedFailure's summary under `err`)
 * passes it through. A symbol key survives object spread and never reaches the JSON line.
 */
export const SAFE = Symbol('conveyor.safe-error');

/** What a log line may say about an error. */
export interface SafeError {
  [SAFE]?: true;
  type: string;
  message: string;
  code?: string | number;
  errno?: number;
  sqlState?: string;
  /** For database errors: the statement's shape (`insert messages`), never its text or values. */
  statement?: string;
  stack?: string;
  cause?: SafeError;
}

/** The driver's own message of a value-free kind, without knex's statement prefix. */
function driverMessage(e: ErrorLike, code: string | undefined): string | undefined {
  if (code === undefined || !VALUE_FREE_MESSAGES.has(code.startsWith('SQLITE_IOERR') ? 'SQLITE_IOERR' : code)) return undefined;
  if (typeof e.sqlMessage === 'string') return e.sqlMessage;
  if (typeof e.message !== 'string') return undefined;
  const message = e.message;
  if (!KNEX_PREFIXED(message)) return message.split('\n')[0];
  return message.slice(message.lastIndexOf(' - ') + 3).split('\n')[0];
}

function statementOf(e: ErrorLike): string | undefined {
  // The message's prefix is knex's statement with placeholders; mysql2's `sql` has the values in it, and is
  // only a fallback for the shape (literals are removed before a table name is looked for).
  if (typeof e.message === 'string' && KNEX_PREFIXED(e.message)) return statementShape(e.message);
  return typeof e.sql === 'string' ? statementShape(e.sql) : undefined;
}

/** Stack frames only: the first line of a stack repeats the message, which is what must not be logged. */
function framesOf(stack: unknown): string {
  if (typeof stack !== 'string') return '';
  return stack
    .split('\n')
    .filter((line) => /^\s+at /.test(line))
    .join('\n');
}

/**
 * An error as a log line may carry it. Database errors keep type, code, errno, SQL state and the statement's
 * shape; their message is the driver's only when it cannot quote a value, else a fixed text. Other errors keep
 * their message (cut at 500 characters, URL passwords masked): our own errors say what went wrong in words
 * that name no payload or secret. Never properties a driver attached (SQL, bound values, connection options).
 */
export function safeError(err: unknown, withStack = true, depth = 0): SafeError {
  if (typeof err !== 'object' || err === null) return { [SAFE]: true, type: typeof err, message: capped(redactText(String(err))) };
  if ((err as SafeError)[SAFE]) return err as SafeError;
  const e = err as ErrorLike;
  const type = (typeof e.name === 'string' && e.name) || (err as object).constructor?.name || 'Error';
  const code = typeof e.code === 'string' || typeof e.code === 'number' ? e.code : undefined;
  const out: SafeError = { [SAFE]: true, type, message: '' };
  if (isDatabaseError(err)) {
    const statement = statementOf(e);
    const codeText = code === undefined ? undefined : String(code);
    out.message = capped(redactText(driverMessage(e, codeText) ?? `${statement ?? 'database statement'} failed${codeText ? ` (${codeText})` : ''}`));
    if (statement) out.statement = statement;
  } else {
    let message = typeof e.message === 'string' ? e.message : '';
    // JSON.parse quotes the text it could not parse: `Unexpected token 'x', "<the input>" is not valid JSON`.
    if (type === 'SyntaxError') message = message.replace(/"(?:[^"\\]|\\.)*"/g, '"…"');
    out.message = capped(redactText(message));
  }
  if (code !== undefined) out.code = code;
  if (typeof e.errno === 'number') out.errno = e.errno;
  if (typeof e.sqlState === 'string' && /^[0-9A-Z]{5}$/.test(e.sqlState)) out.sqlState = e.sqlState;
  if (withStack) {
    const frames = framesOf(e.stack);
    if (frames) out.stack = `${type}: ${out.message}\n${frames}`;
  }
  if (e.cause !== undefined && e.cause !== null && depth < 3) out.cause = safeError(e.cause, withStack, depth + 1);
  return out;
}
