import { cloneElement, isValidElement, useId, type ReactElement } from 'react';

/** A labelled control: the label, the input (given its id), an optional hint and an inline error. */
export function Field(props: { label: string; hint?: string; error?: string | null; children: ReactElement<Record<string, unknown>> }) {
  const id = useId();
  const hintId = props.hint ? `${id}-hint` : undefined;
  const errorId = props.error ? `${id}-error` : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(' ') || undefined;
  const control = isValidElement(props.children)
    ? cloneElement(props.children, { id, 'aria-describedby': describedBy, 'aria-invalid': props.error ? true : undefined })
    : props.children;
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {control}
      {props.hint && (
        <small id={hintId} className="hint">
          {props.hint}
        </small>
      )}
      {props.error && (
        <small id={errorId} className="field-error" role="alert">
          {props.error}
        </small>
      )}
    </div>
  );
}
