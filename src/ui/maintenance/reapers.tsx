import { ErrorMessage } from '../components/error-message';
import { formatNumber, formatTime } from '../format';
import { useRunReaper, type ReaperName, type ReaperReport } from './api';

const REAPERS: Array<{ name: ReaperName; title: string; what: string }> = [
  { name: 'expiry', title: 'Expiry reaper', what: 'Marks pending messages whose time to live has passed as expired. Messages being processed are left alone.' },
  { name: 'delete', title: 'Delete reaper', what: 'Permanently deletes expired messages.' },
  {
    name: 'archive',
    title: 'Archive reaper',
    what: 'Deletes archive-log entries older than each replayable topic’s replay window, and audit records older than the retention.',
  },
];

const plural = (n: number | undefined, one: string, many: string) => `${formatNumber(n ?? 0)} ${n === 1 ? one : many}`;

function describeReport(name: ReaperName, report: ReaperReport): string {
  if (name === 'expiry') return `Expired ${plural(report.expired, 'message', 'messages')}`;
  if (name === 'delete') return `Deleted ${plural(report.deleted, 'message', 'messages')}`;
  return `Deleted ${plural(report.deleted, 'archive-log entry', 'archive-log entries')} and ${plural(report.audit_deleted, 'audit record', 'audit records')}`;
}

function ReaperCard(props: { name: ReaperName; title: string; what: string }) {
  const run = useRunReaper(props.name);
  const titleId = `reaper-${props.name}-title`;
  return (
    <section className="card" aria-labelledby={titleId}>
      <h3 id={titleId}>{props.title}</h3>
      <p className="hint">{props.what}</p>
      <button type="button" onClick={() => run.mutate()} disabled={run.isPending}>
        Run {props.title.toLowerCase()} now
      </button>
      <p className="reaper-result" role="status">
        {run.isPending ? 'Running…' : run.data ? `${describeReport(props.name, run.data.report)} (ran at ${formatTime(run.data.ranAt)})` : ''}
      </p>
      <ErrorMessage error={run.error} />
    </section>
  );
}

/** Manual runs of the three reapers; each waits for a run on another instance to finish, then does what is left. */
export function ReapersSection() {
  return (
    <section aria-labelledby="reapers-title">
      <h2 id="reapers-title">Reapers</h2>
      <p className="hint">They also run on their own (intervals and the schedule below); a run here does the same work at once.</p>
      <div className="cards">
        {REAPERS.map((r) => (
          <ReaperCard key={r.name} {...r} />
        ))}
      </div>
    </section>
  );
}
