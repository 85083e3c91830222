import { createLogger, type Logger } from '../../src/log/logger.js';

export type LogLine = Record<string, any>;

/** A logger writing into memory: every line as written and parsed, and the whole output as text. */
export function captureLogger(level = 'info'): { logger: Logger; raw: string[]; lines: LogLine[]; text: () => string } {
  const raw: string[] = [];
  const lines: LogLine[] = [];
  const logger = createLogger(level, {
    write(chunk: string) {
      for (const l of chunk.split('\n').filter(Boolean)) {
        raw.push(l);
        lines.push(JSON.parse(l));
      }
    },
  });
  return { logger, raw, lines, text: () => raw.map((l) => `${l}\n`).join('') };
}
