import type { Logger } from '../log/logger.js';

/**
 * The logger a one-shot command (migrate, reap) gives its database: at least `error`, because a connection
 * failure is what the command reports itself, as its one line on stderr.
 */
export function quietConnectionLogger(logger: Logger): Logger {
  const values = logger.levels.values;
  return values[logger.level] >= values.error ? logger : logger.child({}, { level: 'error' });
}
