import { useState, type FormEvent } from 'react';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { TOPIC_GRANT_ACTIONS, useAddConsumeGrant, useAddGrant, type TopicGrantAction } from './api';
import { PATTERN_HINT } from './patterns';

const ACTION_HINT = 'read: list messages and stats; write: enqueue, dequeue, ack, nack, requeue; admin: the topic’s configuration, schema and consumer groups.';

/** A read, write or admin grant on a topic pattern. */
export function AddGrantForm(props: { userId: string }) {
  const [action, setAction] = useState<TopicGrantAction>('read');
  const [pattern, setPattern] = useState('');
  const add = useAddGrant(props.userId);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    add.mutate({ action, topic_pattern: pattern }, { onSuccess: () => setPattern('') });
  };
  return (
    <form className="grant-form" onSubmit={submit} aria-labelledby="add-grant-title">
      <h4 id="add-grant-title">Add grant</h4>
      <div className="toolbar">
        <Field label="Action" hint={ACTION_HINT}>
          <select value={action} onChange={(e) => setAction(e.target.value as TopicGrantAction)}>
            {TOPIC_GRANT_ACTIONS.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Topic pattern" hint={PATTERN_HINT}>
          <input value={pattern} onChange={(e) => setPattern(e.target.value)} placeholder="*" autoComplete="off" spellCheck={false} />
        </Field>
        <button type="submit" className="primary" disabled={add.isPending}>
          Add grant
        </button>
      </div>
      <ErrorMessage error={add.error} />
    </form>
  );
}

/** Restricts dequeue, ack and nack on matching topics to one consumer group (and allows them with it). */
export function AddConsumeGrantForm(props: { userId: string }) {
  const [pattern, setPattern] = useState('');
  const [group, setGroup] = useState('');
  const add = useAddConsumeGrant(props.userId);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    add.mutate(
      { consumer_group: group, topic_pattern: pattern },
      {
        onSuccess: () => {
          setPattern('');
          setGroup('');
        },
      },
    );
  };
  return (
    <form className="grant-form" onSubmit={submit} aria-labelledby="add-consume-grant-title">
      <h4 id="add-consume-grant-title">Add consume grant</h4>
      <p className="hint">
        Allows dequeue, ack and nack with this consumer group. Once any consume grant matches a topic, only the granted groups may be used there,
        even with a write grant.
      </p>
      <div className="toolbar">
        <Field label="Topic pattern" hint={PATTERN_HINT}>
          <input value={pattern} onChange={(e) => setPattern(e.target.value)} placeholder="*" autoComplete="off" spellCheck={false} />
        </Field>
        <Field label="Consumer group">
          <input value={group} onChange={(e) => setGroup(e.target.value)} required autoComplete="off" spellCheck={false} />
        </Field>
        <button type="submit" className="primary" disabled={add.isPending}>
          Add consume grant
        </button>
      </div>
      <ErrorMessage error={add.error} />
    </form>
  );
}
