import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { groupKeys } from './api';

/** Registers a consumer group on the topic; the service's 400 (bad name) or 409 (already there) shows inline. */
export function RegisterForm(props: { topic: string }) {
  const { topic } = props;
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const register = useMutation({
    mutationFn: (group: string) => unwrap(api.POST('/api/topics/{topic}/consumer-groups', { params: { path: { topic } }, body: { consumer_group: group } })),
    onSuccess: () => {
      setName('');
      void queryClient.invalidateQueries({ queryKey: groupKeys.list(topic), exact: true });
      void queryClient.invalidateQueries({ queryKey: ['stats'] });
      void queryClient.invalidateQueries({ queryKey: ['topics'] });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    register.mutate(name.trim());
  };
  return (
    <form className="register-form" onSubmit={submit} noValidate>
      <Field label="Group name" hint="1-200 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit. The group gets every message enqueued from now on, and the pending ones.">
        <input
          value={name}
          autoComplete="off"
          spellCheck={false}
          onChange={(e) => {
            if (!register.isPending) register.reset();
            setName(e.target.value);
          }}
        />
      </Field>
      <div className="editor-actions">
        <button type="submit" className="primary" disabled={register.isPending}>
          Register
        </button>
        {register.isSuccess && (
          <span role="status" className="ok-text">
            Registered {register.variables}.
          </span>
        )}
      </div>
      <ErrorMessage error={register.error} />
    </form>
  );
}
