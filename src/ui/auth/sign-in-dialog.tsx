import { useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { Dialog } from '../components/dialog';
import { errorText } from '../components/error-message';
import { Field } from '../components/field';
import { session } from './session';
import { signIn, SignInError } from './sign-in';

/** The sign-in form, over whatever screen is open (its state and the URL stay untouched underneath). */
export function SignInDialog() {
  const queryClient = useQueryClient();
  const formId = useId();
  const usernameRef = useRef<HTMLInputElement>(null);
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);
  const close = useCallback(() => session.dismissPrompt(), []);

  // The dialog's own effect (a child's, so it runs first) has opened it; focus goes to the first field,
  // not to the Close button showModal() would pick.
  useEffect(() => usernameRef.current?.focus(), []);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setPending(true);
    setError(null);
    try {
      await signIn(queryClient, username, password);
    } catch (err) {
      setError(err instanceof SignInError ? err.message : errorText(err));
      setPassword('');
    } finally {
      setPending(false);
    }
  };

  return (
    <Dialog
      title="Sign in"
      onClose={close}
      footer={
        <button type="submit" form={formId} className="primary" disabled={pending}>
          Sign in
        </button>
      }
    >
      <form id={formId} onSubmit={submit} className="sign-in-form">
        <Field label="Username">
          <input ref={usernameRef} value={username} onChange={(e) => setUsername(e.target.value)} autoComplete="username" autoCapitalize="none" spellCheck={false} required />
        </Field>
        <Field label="Password">
          <input type="password" value={password} onChange={(e) => setPassword(e.target.value)} autoComplete="current-password" required />
        </Field>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </Dialog>
  );
}
