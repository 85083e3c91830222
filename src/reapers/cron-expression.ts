import { Cron } from 'croner';
import { invalid } from '../queue/errors.js';

interface FieldRule {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const SECONDS: FieldRule = { name: 'seconds', min: 0, max: 59 };
const STANDARD: readonly FieldRule[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['', 'jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'] },
  { name: 'day-of-week', min: 0, max: 6, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
];

/** One item of a field's comma-separated list: `*` or `?`, a value or a range, each with an optional step. */
const ITEM = /^(?:[*?]|(\d+|[a-z]{3})(?:-(\d+|[a-z]{3}))?)(?:\/(\d+))?$/i;

/**
 * The grammar a Kubernetes CronJob takes (standard cron: numbers, month and weekday names, `*`, `?`, ranges,
 * lists, steps; day-of-week 0-6), which croner extends (L, W, #, a 7 for Sunday). A schedule must run the
 * same way wherever it runs: in-process, and in the delete-reaper CronJob the controller keeps equal to it,
 * which the Kubernetes API would refuse to set to anything beyond this.
 */
function checkStandard(fields: readonly string[]): void {
  const rules = fields.length === 6 ? [SECONDS, ...STANDARD] : STANDARD;
  fields.forEach((field, i) => {
    const rule = rules[i]!;
    for (const item of field.split(',')) {
      const match = ITEM.exec(item);
      if (!match) {
        throw invalid(
          `schedule is not a valid cron expression: ${rule.name} "${item}" is not standard cron (numbers, names, *, ?, ranges, lists and steps; L, W and # are not), which a Kubernetes CronJob would refuse`,
        );
      }
      for (const value of [match[1], match[2]]) {
        if (value === undefined) continue;
        const number = /^\d+$/.test(value) ? Number(value) : (rule.names?.indexOf(value.toLowerCase()) ?? -1);
        if (number < rule.min || number > rule.max) {
          const sunday = rule.name === 'day-of-week' ? ', Sunday is 0' : '';
          throw invalid(`schedule is not a valid cron expression: ${rule.name} "${value}" is not in ${rule.min}-${rule.max}${rule.names ? ` or a name${sunday}` : ''}`);
        }
      }
    }
  });
}

/** The nicknames a Kubernetes CronJob takes, spelt as it takes them (lower case). */
const NICKNAMES = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'];

/**
 * How croner must read `expression` to run it on the days a Kubernetes CronJob does. Kubernetes (robfig/cron)
 * requires both day fields to match when either of them starts with `*` or `?` (a day-of-month step from `*`
 * with a weekday: only the weekdays on those dates), and either of them otherwise (`0 3 1,15 * 1`: the 1st,
 * the 15th and every Monday); croner's default is "either" always.
 */
export function cronOptions(expression: string): { mode: '5-or-6-parts'; domAndDow: boolean } {
  const fields = expression.trim().split(/\s+/);
  const days = fields.length >= 5 ? fields.slice(-3, -2).concat(fields.slice(-1)) : [];
  return { mode: '5-or-6-parts', domAndDow: days.some((field) => field.split(',').some((item) => item.startsWith('*') || item.startsWith('?'))) };
}

/**
 * 5 fields as in a Kubernetes CronJob; a sixth leading seconds field is accepted for in-process runs; a
 * nickname such as @daily stands alone. The field count is checked here, so the message states our rule
 * (croner's own names "five, six, or seven" parts, though seven are refused).
 */
export function validateCron(expression: string): void {
  const fields = expression.trim().split(/\s+/);
  if (fields.length === 1 && fields[0].startsWith('@')) {
    if (!NICKNAMES.includes(fields[0])) throw invalid(`schedule is not a valid cron expression: the nicknames are ${NICKNAMES.join(', ')}, in lower case as a Kubernetes CronJob takes them`);
  } else if (fields.length !== 5 && fields.length !== 6) {
    throw invalid(
      `schedule is not a valid cron expression: it needs 5 fields (minute hour day-of-month month day-of-week), or 6 with a leading seconds field; got ${fields.length}`,
    );
  }
  let cron: Cron;
  try {
    cron = new Cron(expression, { paused: true, ...cronOptions(expression) });
  } catch (err) {
    throw invalid(`schedule is not a valid cron expression: ${(err as Error).message.replace(/^CronPattern: /, '')}`);
  }
  if (fields.length > 1) checkStandard(fields);
  // Such as "0 3 31 2 *": valid fields, but no date has them all, so a reaper that reads as scheduled never runs.
  const next = cron.nextRun();
  cron.stop();
  if (next === null) throw invalid('schedule never runs: no date matches all of its fields');
}
