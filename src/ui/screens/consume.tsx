import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useRef, useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { TopicInput } from '../components/topic-input';
import { DequeuedMessageCard } from '../messages/dequeued-message';
import type { DequeuedMessage } from '../messages/types';

interface Batch {
  /** One per Dequeue click, so React keeps each card's state apart even if a message comes back later. */
  seq: number;
  topic: string;
  consumerGroup: string;
  messages: DequeuedMessage[];
}

/** Debugging a consumer: lease messages, look at them, then ack or nack each by hand. */
export function ConsumeScreen() {
  const [topic, setTopic] = useState('');
  const [count, setCount] = useState('1');
  const [visibility, setVisibility] = useState('');
  // A number field holding text it cannot read ("5e") has the value "", which would mean the server's default.
  const visibilityInput = useRef<HTMLInputElement>(null);
  const [visibilityUnreadable, setVisibilityUnreadable] = useState(false);
  const [group, setGroup] = useState('');
  const [batches, setBatches] = useState<Batch[]>([]);
  const [checked, setChecked] = useState(false);
  const queryClient = useQueryClient();

  const countNumber = Number(count);
  const countError = checked && !(Number.isInteger(countNumber) && countNumber >= 1 && countNumber <= 1000) ? 'Count is a whole number from 1 to 1000.' : null;
  const visibilityNumber = Number(visibility);
  const visibilityError =
    checked && (visibilityUnreadable || (visibility !== '' && !(Number.isInteger(visibilityNumber) && visibilityNumber >= 1 && visibilityNumber <= 43200)))
      ? 'The visibility timeout is a whole number of seconds from 1 to 43200.'
      : null;
  const topicError = checked && topic.trim() === '' ? 'Enter the topic to dequeue from.' : null;

  const dequeue = useMutation({
    mutationFn: async (body: { topic: string; count: number; visibility_timeout_seconds?: number; consumer_group?: string }) =>
      (await unwrap(api.POST('/api/messages/dequeue', { body }))).messages,
    onSuccess: (messages, body) => {
      setBatches((current) => [{ seq: (current[0]?.seq ?? 0) + 1, topic: body.topic, consumerGroup: body.consumer_group ?? '', messages }, ...current]);
      // Not awaited: the leased messages are shown at once, other screens' lists refresh behind them.
      void queryClient.invalidateQueries({ queryKey: ['messages'] });
      void queryClient.invalidateQueries({ queryKey: ['stats'] });
      void queryClient.invalidateQueries({ queryKey: ['topics'] });
    },
  });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setChecked(true);
    const unreadable = visibilityInput.current?.validity.badInput === true;
    setVisibilityUnreadable(unreadable);
    const countOk = Number.isInteger(countNumber) && countNumber >= 1 && countNumber <= 1000;
    const visibilityOk = visibility === '' || (Number.isInteger(visibilityNumber) && visibilityNumber >= 1 && visibilityNumber <= 43200);
    if (topic.trim() === '' || !countOk || !visibilityOk || unreadable) return;
    dequeue.mutate({
      topic: topic.trim(),
      count: countNumber,
      ...(visibility === '' ? {} : { visibility_timeout_seconds: visibilityNumber }),
      ...(group.trim() === '' ? {} : { consumer_group: group.trim() }),
    });
  };

  const latest = batches[0];
  return (
    <section className="consume-screen">
      <h1>Consume</h1>
      <p className="hint">Lease messages as a consumer would, look at them, then ack or nack each one. Messages left alone return to the topic when their visibility timeout passes.</p>
      <form className="toolbar consume-form" onSubmit={submit} noValidate aria-label="Dequeue">
        <Field label="Topic" error={topicError}>
          <TopicInput value={topic} onChange={setTopic} required />
        </Field>
        <Field label="Count" error={countError}>
          <input type="number" inputMode="numeric" min={1} max={1000} value={count} onChange={(e) => setCount(e.target.value)} />
        </Field>
        <Field label="Visibility timeout (seconds)" hint="Empty: the server's default." error={visibilityError}>
          <input
            ref={visibilityInput}
            type="number"
            inputMode="numeric"
            min={1}
            max={43200}
            value={visibility}
            onChange={(e) => {
              setVisibility(e.target.value);
              setVisibilityUnreadable(e.target.validity.badInput);
            }}
          />
        </Field>
        <Field label="Consumer group (optional)">
          <input value={group} onChange={(e) => setGroup(e.target.value)} autoComplete="off" spellCheck={false} />
        </Field>
        <button type="submit" className="primary" disabled={dequeue.isPending}>
          Dequeue
        </button>
      </form>
      <ErrorMessage error={dequeue.error} />
      <p role="status" className="notice">
        {latest && !dequeue.isPending ? (latest.messages.length === 0 ? `No message available on ${latest.topic}.` : `Dequeued ${latest.messages.length} from ${latest.topic}.`) : ''}
      </p>
      {batches.some((b) => b.messages.length > 0) && (
        <button type="button" onClick={() => setBatches([])}>
          Clear the list
        </button>
      )}
      <div className="dequeued-list">
        {batches.flatMap((batch) => batch.messages.map((m) => <DequeuedMessageCard key={`${batch.seq}:${m.id}`} message={m} consumerGroup={batch.consumerGroup} />))}
      </div>
    </section>
  );
}
