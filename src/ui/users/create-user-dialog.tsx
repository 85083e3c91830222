import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { Dialog } from '../components/dialog';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { useCreateUser, type User } from './api';

/** Username, password (12 characters or more, the service checks) and the admin flag; 400/409 shown inline. */
export function CreateUserDialog(props: { onClose: () => void; onCreated: (user: User) => void }) {
  const formId = useId();
  const firstField = useRef<HTMLInputElement>(null);
  // The Dialog (a child, so its effect runs first) has opened; start in the first field, not on Close.
  useEffect(() => firstField.current?.focus(), []);
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [isAdmin, setIsAdmin] = useState(false);
  const create = useCreateUser();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({ username, password, is_admin: isAdmin }, { onSuccess: props.onCreated });
  };
  return (
    <Dialog
      title="Create user"
      onClose={props.onClose}
      footer={
        <>
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" form={formId} className="primary" disabled={create.isPending}>
            Create
          </button>
        </>
      }
    >
      <form id={formId} onSubmit={submit}>
        <Field label="Username">
          <input ref={firstField} value={username} onChange={(e) => setUsername(e.target.value)} required autoComplete="off" spellCheck={false} />
        </Field>
        <Field label="Password" hint="At least 12 characters.">
          <input type="password" value={password} onChange={(e) => setPassword(e.target.value)} required autoComplete="new-password" />
        </Field>
        <label className="check">
          <input type="checkbox" checked={isAdmin} onChange={(e) => setIsAdmin(e.target.checked)} /> Administrator (may do everything, no grants needed)
        </label>
        <ErrorMessage error={create.error} />
      </form>
    </Dialog>
  );
}
