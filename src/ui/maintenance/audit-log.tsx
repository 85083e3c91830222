import { useState, type FormEvent } from 'react';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { Pager } from '../components/pager';
import { Timestamp } from '../components/timestamp';
import { TopicInput } from '../components/topic-input';
import { useAuditLog, type AuditEntry, type AuditFilter } from './api';

const PAGE_SIZE = 25;

/** Details are free-form JSON from the service; shown as text, compact, never as markup. */
function detailsText(details: unknown): string {
  if (details === null || details === undefined) return '';
  if (typeof details === 'object' && Object.keys(details).length === 0) return '';
  return JSON.stringify(details);
}

function AuditRow(props: { entry: AuditEntry }) {
  const e = props.entry;
  return (
    <tr className={e.result === 'error' ? 'audit-error' : undefined}>
      <td className="nowrap">
        <Timestamp iso={e.at} />
      </td>
      <td>{e.actor.name}</td>
      <td>
        <code>{e.action}</code>
      </td>
      <td>{e.topic ?? '—'}</td>
      <td className="wrap-anywhere audit-target">{e.target ?? '—'}</td>
      <td>
        {e.result}
        {e.status !== null ? ` (${e.status})` : ''}
      </td>
      <td className="wrap-anywhere audit-details">
        <code>{detailsText(e.details)}</code>
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
                <th scope="col">Action</th>
                <th scope="col">Topic</th>
                <th scope="col">Target</th>
                <th scope="col">Result</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {log.data.items.map((entry) => (
                <AuditRow key={entry.id} entry={entry} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {log.data && <Pager total={log.data.total} limit={log.data.limit} offset={log.data.offset} onChange={setOffset} label="Audit log pages" />}
    </section>
  );
}
