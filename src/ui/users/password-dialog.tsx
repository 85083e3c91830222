import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { Dialog } from '../components/dialog';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { useChangePassword, type User } from './api';

/** Sets a new password; the old one and the user's tokens issued before it stop working at once. */
export function PasswordDialog(props: { user: User; onClose: () => void; onChanged: () => void }) {
  const formId = useId();
  const firstField = useRef<HTMLInputElement>(null);
  // The Dialog (a child, so its effect runs first) has opened; start in the first field, not on Close.
  useEffect(() => firstField.current?.focus(), []);
  const [password, setPassword] = useState('');
  const update = useChangePassword(props.user);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    update.mutate(password, { onSuccess: props.onChanged });
  };
  return (
    <Dialog
      title={`Change password of ${props.user.username}`}
      onClose={props.onClose}
      footer={
        <>
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" form={formId} className="primary" disabled={update.isPending}>
            Change password
          </button>
        </>
      }
    >
      <form id={formId} onSubmit={submit}>
        <Field label="New password" hint="At least 12 characters.">
          <input ref={firstField} type="password" value={password} onChange={(e) => setPassword(e.target.value)} required autoComplete="new-password" />
        </Field>
        <ErrorMessage error={update.error} />
      </form>
    </Dialog>
  );
}
