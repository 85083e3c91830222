import cronstrue from 'cronstrue';

/**
 * A cron expression as a sentence ("At 03:00 AM"), or null when cronstrue cannot read it. The sentence names no
 * time zone: the caller says whose clock runs the cron. The service decides what is valid (a 400 on save); this
 * is only a reading aid, so it never blocks a save.
 */
export function describeCron(expression: string): string | null {
  const text = expression.trim();
  if (text === '') return null;
  try {
    return cronstrue.toString(text, { throwExceptionOnParseError: true, verbose: false });
  } catch {
    return null;
  }
}
