import { pino, type Logger } from 'pino';

export type { Logger };

/** JSON lines on stdout; `level: silent` keeps tests quiet. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'conveyor' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
}
