import { useState } from 'react';
import { Dialog } from './dialog';
import { ErrorMessage } from './error-message';
import { Field } from './field';

/**
 * Confirms a destructive action. With `typed`, the action stays disabled until the user has typed that
 * exact text (a topic name for a purge), so a stray click or Enter cannot destroy messages.
 */
export function ConfirmDialog(props: {
  title: string;
  message: string;
  actionLabel: string;
  typed?: string;
  pending?: boolean;
  error?: unknown;
  onConfirm: () => void;
  onClose: () => void;
}) {
  const [text, setText] = useState('');
  const ready = props.typed === undefined || text === props.typed;
  return (
    <Dialog
      title={props.title}
      onClose={props.onClose}
      footer={
        <>
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="button" className="danger" disabled={!ready || props.pending} onClick={props.onConfirm}>
            {props.actionLabel}
          </button>
        </>
      }
    >
      <p>{props.message}</p>
      {props.typed !== undefined && (
        <Field label={`Type ${props.typed} to confirm`}>
          <input value={text} onChange={(e) => setText(e.target.value)} autoComplete="off" spellCheck={false} />
        </Field>
      )}
      <ErrorMessage error={props.error} />
    </Dialog>
  );
}
