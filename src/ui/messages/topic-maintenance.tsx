import { useState, type FormEvent } from 'react';
import { Field } from '../components/field';
import { PURGEABLE_STATUSES, type MessageStatus } from './types';

/**
 * The admin's destructive tools for the filtered topic: purge by status and delete by key. Each only asks
 * for what it needs here; the confirmation (typed topic name for a purge) is the screen's ConfirmDialog.
 */
export function TopicMaintenance(props: { topic: string; initialStatus: string; onPurge: (statuses: MessageStatus[]) => void; onDeleteByKey: (key: string) => void }) {
  const [statuses, setStatuses] = useState<MessageStatus[]>(() => PURGEABLE_STATUSES.filter((s) => s === props.initialStatus));
  const [key, setKey] = useState('');
  const toggle = (status: MessageStatus, on: boolean) => setStatuses((current) => (on ? [...current, status] : current.filter((s) => s !== status)));
  const submitKey = (event: FormEvent) => {
    event.preventDefault();
    if (key !== '') props.onDeleteByKey(key);
  };
  return (
    <section className="topic-maintenance" aria-labelledby="topic-maintenance-title">
      <h2 id="topic-maintenance-title">
        Maintenance of <span className="wrap-anywhere">{props.topic}</span>
      </h2>
      <div className="maintenance-forms">
        <fieldset>
          <legend>Purge by status</legend>
          <div className="checkbox-row">
            {PURGEABLE_STATUSES.map((status) => (
              <label key={status}>
                <input type="checkbox" checked={statuses.includes(status)} onChange={(e) => toggle(status, e.target.checked)} /> {status}
              </label>
            ))}
          </div>
          <p className="hint">None ticked: pending, processing and expired.</p>
          <button type="button" className="danger" onClick={() => props.onPurge(PURGEABLE_STATUSES.filter((s) => statuses.includes(s)))}>
            Purge…
          </button>
        </fieldset>
        <form onSubmit={submitKey} className="delete-by-key">
          <Field label="Key to delete" hint="Every message with this key on the topic, whatever its status.">
            <input value={key} onChange={(e) => setKey(e.target.value)} autoComplete="off" spellCheck={false} />
          </Field>
          <button type="submit" className="danger" disabled={key === ''}>
            Delete by key…
          </button>
        </form>
      </div>
    </section>
  );
}
