import { useState, type FormEvent } from 'react';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { useSaveSchedule, useSchedule } from './api';
import { describeCron } from './cron';

/**
 * The service runs the cron in its process's time zone, or (reapers.mode external) a Kubernetes CronJob runs
 * it in the CronJob's; the API tells neither, and neither need be this browser's: every reading says whose
 * clock it is on, without pretending to know the zone.
 */
const ZONE = "in the service's time zone (or its CronJob's)";

const HINT = `Five fields: minute, hour, day of month, month, day of week (as in a Kubernetes CronJob), e.g. 0 3 * * * for 03:00 every day; a sixth leading seconds field is accepted. Times are ${ZONE}: that of the service's process, or, when Kubernetes CronJobs run the reapers, the CronJob's (the chart's reapers.timeZone, else the cluster's, usually UTC); not necessarily yours. Leave empty and save to disable the delete reaper.`;

function reading(expression: string): string {
  if (expression.trim() === '') return 'Disabled: the delete reaper does not run on its own.';
  const described = describeCron(expression);
  return described === null ? 'This page cannot read this expression; saving checks it.' : `${described}, ${ZONE}`;
}

/** The delete reaper's cron schedule, stored by the service (it wins over the configuration once set). */
export function ScheduleSection() {
  const schedule = useSchedule();
  const save = useSaveSchedule();
  // null: not edited, the field shows the stored schedule (and follows it when it changes elsewhere).
  const [draft, setDraft] = useState<string | null>(null);
  const value = draft ?? schedule.data?.schedule ?? '';
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate(value.trim(), { onSuccess: () => setDraft(null) });
  };
  return (
    <section aria-labelledby="schedule-title">
      <h2 id="schedule-title">Delete-reaper schedule</h2>
      <ErrorMessage error={schedule.error} />
      {schedule.data && (
        <dl className="facts">
          <dt>Schedule</dt>
          <dd>
            <code>{schedule.data.schedule || '(none)'}</code>
          </dd>
          <dt>Active</dt>
          <dd>{schedule.data.active ? 'Yes' : 'No'}</dd>
          <dt>Runs</dt>
          <dd>{reading(schedule.data.schedule)}</dd>
        </dl>
      )}
      <form onSubmit={submit} aria-labelledby="schedule-title">
        <div className="toolbar">
          <Field label="Cron expression" hint={HINT}>
            <input value={value} onChange={(e) => setDraft(e.target.value)} placeholder="0 3 * * *" autoComplete="off" spellCheck={false} disabled={!schedule.data} />
          </Field>
          <button type="submit" className="primary" disabled={!schedule.data || save.isPending}>
            Save schedule
          </button>
        </div>
        {draft !== null && draft !== schedule.data?.schedule && (
          <p className="hint" aria-live="polite">
            New schedule: {reading(draft)}
          </p>
        )}
        {save.isSuccess && draft === null && (
          <p className="notice" role="status">
            Saved; every instance applies it within a few seconds.
          </p>
        )}
        <ErrorMessage error={save.error} />
      </form>
    </section>
  );
}
