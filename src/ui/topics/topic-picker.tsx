import { useState, type FormEvent } from 'react';
import { Field } from '../components/field';
import { TopicInput } from '../components/topic-input';
import { navigate, type ScreenId } from '../router';

/** Chooses the screen's topic; the topic lives in the URL (`#/topics?topic=orders`), so it can be bookmarked. */
export function TopicPicker(props: { screen: ScreenId; topic: string; action: string }) {
  const [value, setValue] = useState(props.topic);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    navigate(props.screen, { topic: value.trim() });
  };
  return (
    <form className="toolbar" onSubmit={submit}>
      <Field label="Topic">
        <TopicInput value={value} onChange={setValue} required />
      </Field>
      <button type="submit" className="primary">
        {props.action}
      </button>
    </form>
  );
}
