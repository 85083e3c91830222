import { Cron } from 'croner';
import type { Knex } from 'knex';
import { invalid } from '../queue/errors.js';
import { storeDeleteSchedule, storedDeleteSchedule } from '../store/reaper-schedule.js';

export interface ScheduleView {
  schedule: string;
  active: boolean;
}

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
  try {
    new Cron(expression, { paused: true, mode: '5-or-6-parts' }).stop();
  } catch (err) {
    throw invalid(`schedule is not a valid cron expression: ${(err as Error).message.replace(/^CronPattern: /, '')}`);
  }
}

/** The delete reaper's schedule: the stored value wins over queue.delete_reaper_schedule once set, "" too (contract §6). */
export class DeleteSchedule {
  constructor(
    private readonly db: Knex,
    private readonly configured: string,
    private readonly onChange: () => Promise<void> = async () => {},
  ) {}

  async effective(): Promise<string> {
    return (await storedDeleteSchedule(this.db)) ?? this.configured;
  }

  async view(): Promise<ScheduleView> {
    const schedule = await this.effective();
    return { schedule, active: schedule !== '' };
  }

  async put(schedule: unknown): Promise<ScheduleView> {
    if (typeof schedule !== 'string') throw invalid('schedule is required and must be a string (a cron expression, or "" to disable)');
    const trimmed = schedule.trim().replace(/\s+/g, ' ');
    if (trimmed !== '') validateCron(trimmed);
    await storeDeleteSchedule(this.db, trimmed);
    await this.onChange();
    return { schedule: trimmed, active: trimmed !== '' };
  }
}
