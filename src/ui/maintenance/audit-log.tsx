import { useState, type FormEvent } from 'react';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { Pager } from '../components/pager';
import { Timestamp } from '../components/timestamp';
import { TopicInput } from '../components/topic-input';
import { Truncated } from '../components/truncated';
import { useUsers } from '../users/api';
import { useAuditLog, type AuditEntry, type AuditFilter } from './api';
import { auditSummary, type UserName } from './audit-summary';

const PAGE_SIZE = 25;

/** Details are free-form JSON from the service; shown as text, laid out, never as markup. */
function detailsText(details: unknown): string {
  if (details === null || details === undefined) return '';
  if (typeof details === 'object' && Object.keys(details).length === 0) return '';
  return JSON.stringify(details, null, 2);
}

/** One line per record: when, who, what in words; the raw record (ids, action, details) on expand. */
function AuditRow(props: { entry: AuditEntry; userName: UserName }) {
  const e = props.entry;
  const summary = auditSummary(e, props.userName);
  const details = detailsText(e.details);
  return (
    <tr className={e.result === 'error' ? 'audit-error' : undefined}>
      <td className="nowrap">
        <Timestamp iso={e.at} />
      </td>
      <td className="nowrap">{e.actor.name}</td>
      <td className="audit-summary">
        <Truncated text={summary} />
      </td>
      <td className="nowrap">
        {e.result}
        {e.status !== null ? ` (${e.status})` : ''}
      </td>
      <td className="audit-details">
        <details>
          <summary>Details</summary>
          <dl className="facts">
            <dt>Action</dt>
            <dd>
              <code>{e.action}</code>
            </dd>
            {e.topic !== null && (
              <>
                <dt>Topic</dt>
                <dd>{e.topic}</dd>
              </>
            )}
            {e.target !== null && (
              <>
                <dt>Target</dt>
                <dd className="mono">{e.target}</dd>
              </>
            )}
            {e.actor.id !== null && (
              <>
                <dt>Actor id</dt>
                <dd className="mono">{e.actor.id}</dd>
              </>
            )}
          </dl>
          {details !== '' && <pre className="audit-json">{details}</pre>}
        </details>
      </td>
    </tr>
  );
}

/** Who changed what, newest first, filtered by topic and actor (a username, `anonymous`, or a user id). */
export function AuditLogSection() {
  const [topic, setTopic] = useState('');
  const [actor, setActor] = useState('');
  const [filter, setFilter] = useState<AuditFilter>({ topic: '', actor: '' });
  const [offset, setOffset] = useState(0);
  const log = useAuditLog(filter, PAGE_SIZE, offset);
  // Records name users by id (the target of user.* and grant.*): shown by name when the user still exists.
  const users = useUsers();
  const names = new Map((users.data ?? []).map((u) => [u.id, u.username]));
  const userName: UserName = (id) => names.get(id);
  const apply = (event: FormEvent) => {
    event.preventDefault();
    setFilter({ topic: topic.trim(), actor: actor.trim() });
    setOffset(0);
  };
  const clear = () => {
    setTopic('');
    setActor('');
    setFilter({ topic: '', actor: '' });
    setOffset(0);
  };
  return (
    <section aria-labelledby="audit-title">
      <h2 id="audit-title">Audit log</h2>
      <p className="hint">Every change made outside producing and consuming, and every refused attempt at one, newest first.</p>
      <form className="toolbar" onSubmit={apply} aria-label="Audit log filters">
        <Field label="Topic">
          <TopicInput value={topic} onChange={setTopic} />
        </Field>
        <Field label="Actor" hint="A username, anonymous, or a user id.">
          <input value={actor} onChange={(e) => setActor(e.target.value)} autoComplete="off" spellCheck={false} />
        </Field>
        <button type="submit" className="primary">
          Apply filters
        </button>
        <button type="button" onClick={clear}>
          Clear
        </button>
      </form>
      <ErrorMessage error={log.error} />
      {log.data && log.data.items.length === 0 && <p className="hint">No audit records{filter.topic || filter.actor ? ' match these filters' : ''}.</p>}
      {log.data && log.data.items.length > 0 && (
        <div className="table-wrap" tabIndex={0} role="region" aria-label="Audit records">
          <table aria-label="Audit records">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Actor</th>
                <th scope="col">What</th>
                <th scope="col">Result</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {log.data.items.map((entry) => (
                <AuditRow key={entry.id} entry={entry} userName={userName} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {log.data && <Pager total={log.data.total} limit={log.data.limit} offset={log.data.offset} onChange={setOffset} label="Audit log pages" />}
    </section>
  );
}
