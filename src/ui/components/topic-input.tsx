import { useId } from 'react';
import { useTopicNames } from '../api/topics';

/** A topic name field that suggests the known topics (a datalist: any name may still be typed). */
export function TopicInput(props: { id?: string; value: string; onChange: (value: string) => void; required?: boolean; 'aria-describedby'?: string; 'aria-invalid'?: boolean }) {
  const listId = useId();
  const topics = useTopicNames();
  return (
    <>
      <input id={props.id} aria-describedby={props['aria-describedby']} aria-invalid={props['aria-invalid']} list={listId} value={props.value} required={props.required} onChange={(e) => props.onChange(e.target.value)} autoComplete="off" spellCheck={false} />
      <datalist id={listId}>
        {topics.map((t) => (
          <option key={t} value={t} />
        ))}
      </datalist>
    </>
  );
}
