import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useCallback, useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import type { components } from '../api/openapi';
import { ConfirmDialog } from '../components/confirm-dialog';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { formatAge, formatNumber, formatTime, localZoneName } from '../format';
import type { TopicConfig } from '../topics/api';
import { logKey } from './message-log';
import { fromLocalInput, toLocalInput, useNow } from './time';

/** Re-enqueues the topic's archived messages created at or after a chosen time, within its replay window. */
export function ReplayForm(props: { config: TopicConfig }) {
  const { topic, replay_window_seconds: windowSeconds } = props.config;
  const queryClient = useQueryClient();
  const now = useNow();
  const [value, setValue] = useState('');
  const [confirming, setConfirming] = useState(false);
  const windowStart = windowSeconds === null ? null : now - windowSeconds * 1000;
  const fromMs = value === '' ? null : fromLocalInput(value);

  let problem: string | null = null;
  if (value !== '' && fromMs === null) problem = 'Enter a date and a time.';
  else if (fromMs !== null && windowStart !== null && fromMs < windowStart)
    problem = `That is before the replay window, which starts at ${formatTime(new Date(windowStart).toISOString())} (${formatAge(windowSeconds)} ago). Choose a later time.`;
  else if (fromMs !== null && fromMs > now) problem = 'That is in the future: nothing would be replayed. Choose an earlier time.';

  const replay = useMutation({
    mutationFn: (): Promise<components['schemas']['ReplayResult']> =>
      unwrap(api.POST('/api/topics/{topic}/replay', { params: { path: { topic } }, body: fromMs === null ? {} : { from_time: new Date(fromMs).toISOString() } })),
    onSettled: () => setConfirming(false),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['stats'] });
      void queryClient.invalidateQueries({ queryKey: ['topics'] });
      void queryClient.invalidateQueries({ queryKey: ['messages'] });
      void queryClient.invalidateQueries({ queryKey: logKey(topic) });
    },
  });
  const closeConfirm = useCallback(() => setConfirming(false), []);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (problem === null) {
      replay.reset();
      setConfirming(true);
    }
  };
  const start = fromMs !== null ? formatTime(new Date(fromMs).toISOString()) : windowStart !== null ? 'the start of the replay window' : 'the oldest entry of the log';

  return (
    <>
      <form onSubmit={submit} noValidate>
        <Field
          label="Replay from"
          hint={`Messages created at or after this time (your local time, ${localZoneName(fromMs ?? now)}; sent as UTC) are enqueued again as new pending messages. Empty: from ${windowStart !== null ? 'the start of the window' : 'the oldest entry of the log'}.`}
          error={problem}
        >
          <input
            type="datetime-local"
            step={1}
            value={value}
            min={windowStart === null ? undefined : toLocalInput(Math.ceil(windowStart / 1000) * 1000)}
            max={toLocalInput(now)}
            onChange={(e) => setValue(e.target.value)}
          />
        </Field>
        <div className="editor-actions">
          <button type="submit" className="primary" disabled={problem !== null || replay.isPending}>
            Replay
          </button>
          {value !== '' && (
            <button type="button" onClick={() => setValue('')}>
              Clear time
            </button>
          )}
        </div>
        {replay.isSuccess && (
          <p role="status" className="ok-text">
            Enqueued {formatNumber(replay.data.enqueued)} {replay.data.enqueued === 1 ? 'message' : 'messages'} again, replayed from {formatTime(replay.data.replayed_from)} ({replay.data.replayed_from}).
          </p>
        )}
        <ErrorMessage error={replay.error} />
      </form>
      {confirming && (
        <ConfirmDialog
          title={`Replay ${topic}`}
          message={`Enqueue again every archived message of ${topic} created at or after ${start}? Each becomes a new pending message; consumers will receive it again.`}
          actionLabel="Replay"
          pending={replay.isPending}
          onConfirm={() => replay.mutate()}
          onClose={closeConfirm}
        />
      )}
    </>
  );
}
