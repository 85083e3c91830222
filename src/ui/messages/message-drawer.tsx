import { useId, useState, type ReactNode } from 'react';
import { Dialog } from '../components/dialog';
import { ErrorMessage } from '../components/error-message';
import { Timestamp } from '../components/timestamp';
import { payloadView } from '../format';
import { useNow } from '../replay/time';
import { availabilityOf } from './availability';
import { isDeadLetter, type Message } from './types';

function Detail(props: { term: string; children: ReactNode }) {
  return (
    <>
      <dt>{props.term}</dt>
      <dd>{props.children}</dd>
    </>
  );
}

/** When a consumer may get the message, in words; the clock moves on while the drawer is open. */
function Availability(props: { message: Message }) {
  const { message } = props;
  const at = <Timestamp iso={message.available_at} />;
  switch (availabilityOf(message, useNow(5_000))) {
    case 'delayed':
      return <span className="badge badge-delayed">delayed until {at}</span>;
    case 'available':
      // Most messages were never delayed: their available_at is their creation, shown just above.
      return message.available_at === message.created_at ? <>since it was created</> : <>since {at}</>;
    case 'waiting':
      return (
        <>
          <span className="badge badge-waiting">waiting behind an earlier message of its ordering key</span>: its turn comes once the earlier messages of that key are gone (acked, dead-lettered, failed, expired or deleted)
        </>
      );
    case 'leased':
      return <>when its lease ends, {at}</>;
    case 'lease-ended':
      return <>its lease ended {at}</>;
    case 'none':
      return <>— (none: the message is {message.status})</>;
  }
}

/** Everything about one message, as text; the payload pretty-printed when it is JSON, with the raw text a click away. */
export function MessageDrawer(props: {
  message: Message;
  canDeleteByKey: boolean;
  requeuePending: boolean;
  requeueError: unknown;
  onRequeue: () => void;
  onDeleteByKey: () => void;
  onClose: () => void;
}) {
  const { message } = props;
  const [raw, setRaw] = useState(false);
  const payloadHeadingId = useId();
  const pretty = payloadView(message);
  const metadata = Object.entries(message.metadata ?? {});
  const dead = isDeadLetter(message);
  return (
    <Dialog
      title="Message details"
      variant="drawer"
      onClose={props.onClose}
      footer={
        <>
          {props.canDeleteByKey && message.key !== null && (
            <button type="button" className="danger" onClick={props.onDeleteByKey}>
              Delete by key…
            </button>
          )}
          {dead && (
            <button type="button" className="primary" onClick={props.onRequeue} disabled={props.requeuePending}>
              Requeue
            </button>
          )}
        </>
      }
    >
      <dl className="details">
        <Detail term="ID">
          <span className="mono wrap-anywhere">{message.id}</span>
        </Detail>
        <Detail term="Topic">
          <span className="wrap-anywhere">{message.topic}</span>
        </Detail>
        <Detail term="Status">{message.status}</Detail>
        <Detail term="Key">
          <span className="wrap-anywhere">{message.key ?? '— (none)'}</span>
        </Detail>
        <Detail term="Ordering key">
          <span className="wrap-anywhere">{message.ordering_key ?? '— (none)'}</span>
        </Detail>
        <Detail term="Retry count">
          {message.retry_count} of {message.max_retries} retries
        </Detail>
        <Detail term="Last error">
          <span className="wrap-anywhere pre-line">{message.last_error || '— (none)'}</span>
        </Detail>
        <Detail term="Created">
          <Timestamp iso={message.created_at} />
        </Detail>
        <Detail term="Available to consumers">
          <Availability message={message} />
        </Detail>
        <Detail term="Expires">
          <Timestamp iso={message.expires_at} />
        </Detail>
        {dead && (
          <>
            <Detail term="Original topic">
              <span className="wrap-anywhere">{message.original_topic || '—'}</span>
            </Detail>
            <Detail term="Moved to dead letters">
              <Timestamp iso={message.dlq_moved_at} />
            </Detail>
          </>
        )}
      </dl>
      <h3>Metadata</h3>
      {metadata.length === 0 ? (
        <p className="hint">No metadata.</p>
      ) : (
        <div className="table-wrap">
          <table className="metadata-table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Value</th>
              </tr>
            </thead>
            <tbody>
              {metadata.map(([name, value]) => (
                <tr key={name}>
                  <td className="wrap-anywhere">{name}</td>
                  <td className="wrap-anywhere">{value}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div className="payload-heading">
        <h3 id={payloadHeadingId}>{pretty.binary ? 'Payload (binary, as base64)' : 'Payload'}</h3>
        {pretty.json && (
          <button type="button" aria-pressed={raw} onClick={() => setRaw((r) => !r)}>
            Show raw text
          </button>
        )}
      </div>
      <pre className="payload" tabIndex={0} role="region" aria-labelledby={payloadHeadingId}>
        {raw || !pretty.json ? message.payload : pretty.text}
      </pre>
      <ErrorMessage error={props.requeueError} />
    </Dialog>
  );
}
