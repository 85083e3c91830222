import type { Knex } from 'knex';
import { invalid } from '../queue/errors.js';
import { validateCron } from './cron-expression.js';
import { storeDeleteSchedule, storedDeleteSchedule } from '../store/reaper-schedule.js';

export interface ScheduleView {
  schedule: string;
  active: boolean;
}

/** The delete reaper's schedule: the stored value wins over queue.delete_reaper_schedule once set, "" too. */
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
