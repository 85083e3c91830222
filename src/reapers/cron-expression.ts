import { Cron } from 'croner';
import { invalid } from '../queue/errors.js';

/**
 * 5 fields as in a Kubernetes CronJob; a sixth leading seconds field is accepted for in-process runs; a
 * nickname such as @daily stands alone. The field count is checked here, so the message states our rule
 * (croner's own names "five, six, or seven" parts, though seven are refused).
 */
export function validateCron(expression: string): void {
  const fields = expression.trim().split(/\s+/);
  if (!(fields.length === 1 && fields[0].startsWith('@')) && fields.length !== 5 && fields.length !== 6) {
    throw invalid(
      `schedule is not a valid cron expression: it needs 5 fields (minute hour day-of-month month day-of-week), or 6 with a leading seconds field; got ${fields.length}`,
    );
  }
  let cron: Cron;
  try {
    cron = new Cron(expression, { paused: true, mode: '5-or-6-parts' });
  } catch (err) {
    throw invalid(`schedule is not a valid cron expression: ${(err as Error).message.replace(/^CronPattern: /, '')}`);
  }
  // Such as "0 3 31 2 *": valid fields, but no date has them all, so a reaper that reads as scheduled never runs.
  const next = cron.nextRun();
  cron.stop();
  if (next === null) throw invalid('schedule never runs: no date matches all of its fields');
}
