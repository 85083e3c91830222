import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Fragment, useId, useState } from 'react';
import { api, ApiError, unwrap } from '../api/client';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { Timestamp } from '../components/timestamp';
import { payloadView } from '../format';
import type { DequeuedMessage } from './types';

/** A nack's delay: null when none was sent, so the topic's retry backoff applies. */
type Outcome = { kind: 'acked' } | { kind: 'nacked'; error: string; delay: number | null } | { kind: 'given back' };

/**
 * Someone debugging a consumer by hand holds up the key's line meanwhile (docs/http-api.md, Ordering keys):
 * what the outcome means for the messages enqueued after this one with its ordering key.
 */
function orderingNote(outcome: Outcome, orderingKey: string | null): string {
  if (orderingKey === null) return '';
  if (outcome.kind === 'acked') return ' The next message of its ordering key, if there is one, can be dequeued now.';
  if (outcome.kind === 'given back') return ' It is still first of its ordering key: the later messages of the key keep waiting for it.';
  return ' While it is retried, the later messages of its ordering key wait for it.';
}

/** A 404 from ack, nack or a lease change means the lease is no longer this consumer's: say so in words. */
function outcomeError(error: unknown): unknown {
  if (error instanceof ApiError && error.status === 404) {
    return new Error(`${error.message}: it was already acked or nacked, or its visibility timeout passed and the lease is gone.`);
  }
  return error;
}

/** One leased message with its Ack and Nack, and its lease extended or given back; the state after the action is shown in place. */
export function DequeuedMessageCard(props: { message: DequeuedMessage; consumerGroup: string }) {
  const { message, consumerGroup } = props;
  const titleId = useId();
  const [errorText, setErrorText] = useState('');
  const [retryDelay, setRetryDelay] = useState('');
  const queryClient = useQueryClient();
  const group = consumerGroup === '' ? {} : { consumer_group: consumerGroup };
  const settle = useMutation({
    mutationFn: async (action: 'ack' | 'nack'): Promise<Outcome> => {
      const path = { params: { path: { id: message.id } } };
      if (action === 'ack') {
        await unwrap(api.POST('/api/messages/{id}/ack', { ...path, body: group }));
        return { kind: 'acked' };
      }
      // A sent delay, 0 included, wins over the topic's retry backoff; so an empty field sends none.
      const delay = retryDelay.trim() === '' ? null : Number(retryDelay);
      const body = { ...group, ...(errorText === '' ? {} : { error: errorText }), ...(delay === null ? {} : { delay_seconds: delay }) };
      await unwrap(api.POST('/api/messages/{id}/nack', { ...path, body }));
      return { kind: 'nacked', error: errorText, delay };
    },
    onSettled: () => Promise.all([queryClient.invalidateQueries({ queryKey: ['messages'] }), queryClient.invalidateQueries({ queryKey: ['stats'] }), queryClient.invalidateQueries({ queryKey: ['topics'] })]),
  });
  const [keepSeconds, setKeepSeconds] = useState('60');
  // Extends (or shortens) the lease: the message stays this consumer's until the answer's available_at.
  const extend = useMutation({
    mutationFn: async () => {
      const body = { ...group, visibility_timeout_seconds: Number(keepSeconds) };
      return unwrap(api.POST('/api/messages/{id}/visibility', { params: { path: { id: message.id } }, body }));
    },
  });
  const giveBack = useMutation({
    mutationFn: async (): Promise<Outcome> => {
      await unwrap(api.POST('/api/messages/{id}/visibility', { params: { path: { id: message.id } }, body: { ...group, visibility_timeout_seconds: 0 } }));
      return { kind: 'given back' };
    },
    onSettled: () => Promise.all([queryClient.invalidateQueries({ queryKey: ['messages'] }), queryClient.invalidateQueries({ queryKey: ['stats'] }), queryClient.invalidateQueries({ queryKey: ['topics'] })]),
  });
  const outcome = settle.data ?? giveBack.data;
  const pretty = payloadView(message);
  const failure = settle.error ?? giveBack.error ?? extend.error;
  const leaseGone = failure instanceof ApiError && failure.status === 404;
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
        <dt>Ordering key</dt>
        <dd className="wrap-anywhere">{message.ordering_key ?? '— (none)'}</dd>
        <dt>Retry count</dt>
        <dd>
          {message.retry_count} of {message.max_retries} retries
        </dd>
        <dt>Created</dt>
        <dd>
          <Timestamp iso={message.created_at} />
        </dd>
        {outcome === undefined && !leaseGone && (
          <>
            <dt>Leased until</dt>
            <dd>
              <Timestamp iso={extend.data?.available_at ?? message.available_at} />
            </dd>
          </>
        )}
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
          <Field label="Retry after (seconds, optional)" hint="Empty: the topic's retry backoff; 0: at once.">
            <input type="number" min={0} max={604800} value={retryDelay} onChange={(e) => setRetryDelay(e.target.value)} />
          </Field>
          <div className="settle-buttons">
            <button type="button" className="primary" disabled={settle.isPending} onClick={() => settle.mutate('ack')}>
              Ack
            </button>
            <button type="button" disabled={settle.isPending} onClick={() => settle.mutate('nack')}>
              Nack
            </button>
          </div>
          <Field label="Keep the lease for (seconds)">
            <input type="number" min={0} max={43200} value={keepSeconds} onChange={(e) => setKeepSeconds(e.target.value)} />
          </Field>
          <div className="settle-buttons">
            <button type="button" disabled={extend.isPending} onClick={() => extend.mutate()}>
              Extend lease
            </button>
            <button type="button" disabled={giveBack.isPending} onClick={() => giveBack.mutate()}>
              Give back
            </button>
          </div>
          {extend.data && (
            <p role="status">
              Lease extended: the message stays yours until <Timestamp iso={extend.data.available_at} />.
            </p>
          )}
        </div>
      ) : (
        <p role="status">
          {outcome.kind === 'acked'
            ? 'Acked: the message is done and removed from the topic.'
            : outcome.kind === 'given back'
              ? 'Given back: the message is pending again, with no attempt counted.'
              : `Nacked${outcome.error ? ` with error "${outcome.error}"` : ''}: it is retried${outcome.delay === null ? ' (after the topic\'s retry backoff, if it has one)' : outcome.delay > 0 ? ` (not before ${outcome.delay} s from now)` : ' (at once)'}, dead-lettered or failed by the topic's retry rules.`}
          {orderingNote(outcome, message.ordering_key)}
        </p>
      )}
      <ErrorMessage error={failure ? outcomeError(failure) : null} />
    </article>
  );
}
