import { format } from 'node:util';
import type { Logger } from './logger.js';
import { safeError } from './redact.js';

const MAX_TEXT = 2000;

function describe(err: Error): string {
  const { type, message, code } = safeError(err, false);
  return code === undefined ? `${type}: ${message}` : `${type}: ${message} (${code})`;
}

/**
 * The last line of defence for "stdout carries JSON lines only": libraries that print with console.* (mysql2
 * protocol warnings, grpc-js, anything knex says before its logger is set) become log lines of the service's
 * logger instead of plain text. Only the long-running commands install it; a multi-line text stays one line.
 */
export function routeConsoleToLogger(logger: Logger): void {
  const log = logger.child({ source: 'console' });
  const forward = (level: 'debug' | 'info' | 'warn' | 'error') => (...args: unknown[]) => {
    if (!log.isLevelEnabled(level)) return;
    // An error printed whole would show what a driver attached to it (SQL with values): only its safe form.
    const text = format(...args.map((arg) => (arg instanceof Error ? describe(arg) : arg)));
    log[level](text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text);
  };
  console.log = forward('info');
  console.info = forward('info');
  console.debug = forward('debug');
  console.warn = forward('warn');
  console.error = forward('error');
  console.trace = forward('error');
}
