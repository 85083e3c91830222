import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Fragment, useId, useState } from 'react';
import { api, ApiError, unwrap } from '../api/client';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { Timestamp } from '../components/timestamp';
import { payloadView } from '../format';
import type { DequeuedMessage } from './types';

type Outcome = { kind: 'acked' } | { kind: 'nacked'; error: string };

/** A 404 from ack or nack means the lease is no longer this consumer's: say so in words. */
function outcomeError(error: unknown): unknown {
  if (error instanceof ApiError && error.status === 404) {
    return new Error(`${error.message}: it was already acked or nacked, or its visibility timeout passed and the lease is gone.`);
  }
  return error;
}

/** One leased message with its Ack and Nack; the state after the action is shown in place. */
export function DequeuedMessageCard(props: { message: DequeuedMessage; consumerGroup: string }) {
  const { message, consumerGroup } = props;
  const titleId = useId();
  const [errorText, setErrorText] = useState('');
  const queryClient = useQueryClient();
  const group = consumerGroup === '' ? {} : { consumer_group: consumerGroup };
  const settle = useMutation({
    mutationFn: async (action: 'ack' | 'nack'): Promise<Outcome> => {
      const path = { params: { path: { id: message.id } } };
      if (action === 'ack') {
        await unwrap(api.POST('/api/messages/{id}/ack', { ...path, body: group }));
        return { kind: 'acked' };
      }
      await unwrap(api.POST('/api/messages/{id}/nack', { ...path, body: { ...group, ...(errorText === '' ? {} : { error: errorText }) } }));
      return { kind: 'nacked', error: errorText };
    },
    onSettled: () => Promise.all([queryClient.invalidateQueries({ queryKey: ['messages'] }), queryClient.invalidateQueries({ queryKey: ['stats'] })]),
  });
  const outcome = settle.data;
  const pretty = payloadView(message);
  const leaseGone = settle.error instanceof ApiError && settle.error.status === 404;
  const state = outcome?.kind ?? (leaseGone ? 'lease gone' : 'processing');
  return (
    <article className="dequeued-message" aria-labelledby={titleId}>
      <header className="dequeued-header">
        <h3 id={titleId}>
          Message <span className="mono wrap-anywhere">{message.id}</span>
        </h3>
        <span className={`status status-${state.replace(' ', '-')}`}>
          {state}
        </span>
      </header>
      <dl className="details compact">
        <dt>Key</dt>
        <dd className="wrap-anywhere">{message.key ?? '— (none)'}</dd>
        <dt>Retry count</dt>
        <dd>
          {message.retry_count} of {message.max_retries} retries
        </dd>
        <dt>Created</dt>
        <dd>
          <Timestamp iso={message.created_at} />
        </dd>
        {Object.entries(message.metadata ?? {}).map(([name, value]) => (
          <Fragment key={name}>
            <dt className="wrap-anywhere">Metadata: {name}</dt>
            <dd className="wrap-anywhere">{value}</dd>
          </Fragment>
        ))}
      </dl>
      {pretty.binary && <p className="hint">Binary payload (its bytes are not UTF-8 text), shown as base64.</p>}
      <pre className="payload" tabIndex={0}>
        {pretty.text}
      </pre>
      {outcome === undefined ? (
        <div className="settle-actions">
          <Field label="Nack error text (optional)">
            <input value={errorText} onChange={(e) => setErrorText(e.target.value)} autoComplete="off" />
          </Field>
          <div className="settle-buttons">
            <button type="button" className="primary" disabled={settle.isPending} onClick={() => settle.mutate('ack')}>
              Ack
            </button>
            <button type="button" disabled={settle.isPending} onClick={() => settle.mutate('nack')}>
              Nack
            </button>
          </div>
        </div>
      ) : (
        <p role="status">{outcome.kind === 'acked' ? 'Acked: the message is done and removed from the topic.' : `Nacked${outcome.error ? ` with error "${outcome.error}"` : ''}: it is retried, dead-lettered or failed by the topic's retry rules.`}</p>
      )}
      <ErrorMessage error={settle.error ? outcomeError(settle.error) : null} />
    </article>
  );
}
