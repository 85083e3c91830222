import { memo } from 'react';
import { Timestamp } from '../components/timestamp';
import { Truncated } from '../components/truncated';
import { useNow } from '../replay/time';
import { availabilityOf, type Availability } from './availability';
import { isDeadLetter, type Message } from './types';

/** The preview shows one line of the payload; its title (hover, focus) this much of it. */
const PREVIEW_CHARS = 200;
const TITLE_CHARS = 1000;

function flat(payload: string, chars: number): string {
  const text = payload.slice(0, chars + 1).replace(/\s+/g, ' ');
  return text.length > chars ? `${text.slice(0, chars)}…` : text;
}

interface RowProps {
  message: Message;
  /** Computed by the table, so a row re-renders only when its message's state changes, not on every tick. */
  availability: Availability;
  selected: boolean;
  onToggle: (id: string) => void;
  onOpen: (id: string) => void;
}

/**
 * One row, memoised: with 200 rows on a page, ticking one checkbox re-renders that row only (the handlers
 * are stable and the message objects keep their identity between renders of the same page).
 */
const Row = memo(function Row({ message, availability, selected, onToggle, onOpen }: RowProps) {
  const dead = isDeadLetter(message);
  return (
    <tr className={selected ? 'selected' : undefined}>
      <td className="select-cell">
        {dead && <input type="checkbox" checked={selected} onChange={() => onToggle(message.id)} aria-label={`Select message ${message.id}`} />}
      </td>
      <td>
        <button type="button" className="link-button mono" onClick={() => onOpen(message.id)} aria-label={`Details of message ${message.id}`} title={message.id}>
          {message.id.slice(0, 8)}…
        </button>
      </td>
      <td>
        <Truncated text={message.topic} />
        {dead && <span className="badge badge-dead">dead letter</span>}
      </td>
      <td>{message.key === null ? '—' : <Truncated text={message.key} />}</td>
      <td>{message.ordering_key === null ? '—' : <Truncated text={message.ordering_key} />}</td>
      <td>
        <span className={`status status-${message.status}`}>{message.status}</span>
        {availability === 'waiting' && <span className="badge badge-waiting">waiting behind an earlier message of its ordering key</span>}
        {availability === 'delayed' && (
          <span className="badge badge-delayed">
            delayed until <Timestamp iso={message.available_at} />
          </span>
        )}
        {availability === 'leased' && (
          <span className="badge">
            leased until <Timestamp iso={message.available_at} />
          </span>
        )}
      </td>
      <td className="num">{message.retry_count}</td>
      <td className="hide-narrow">
        <Timestamp iso={message.created_at} />
      </td>
      <td className="payload-cell">
        {message.payload_encoding === 'base64' && <span className="badge">binary, base64</span>}
        <Truncated className="payload-preview mono" text={flat(message.payload, PREVIEW_CHARS)} full={flat(message.payload, TITLE_CHARS)} />
      </td>
    </tr>
  );
});

/** The page of messages; checkboxes only on dead letters, the only messages a requeue applies to. */
export function MessageTable(props: { items: Message[]; selected: ReadonlySet<string>; onToggle: (id: string) => void; onToggleAll: (select: boolean) => void; onOpen: (id: string) => void }) {
  const deadIds = props.items.filter(isDeadLetter).map((m) => m.id);
  const allSelected = deadIds.length > 0 && deadIds.every((id) => props.selected.has(id));
  // A delay ends while the page is open; the rows follow within seconds, without a refetch.
  const now = useNow(5_000);
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label="Message list">
      <table className="message-table">
        <caption className="visually-hidden">Messages</caption>
        <thead>
          <tr>
            <th scope="col" className="select-cell">
              {deadIds.length > 0 ? <input type="checkbox" checked={allSelected} onChange={(e) => props.onToggleAll(e.target.checked)} aria-label="Select all dead letters on this page" /> : <span className="visually-hidden">Select</span>}
            </th>
            <th scope="col">ID</th>
            <th scope="col">Topic</th>
            <th scope="col">Key</th>
            <th scope="col">Ordering key</th>
            <th scope="col">Status</th>
            <th scope="col" className="num">
              Retries
            </th>
            <th scope="col" className="hide-narrow">
              Created
            </th>
            <th scope="col">Payload</th>
          </tr>
        </thead>
        <tbody>
          {props.items.map((m) => (
            <Row key={m.id} message={m} availability={availabilityOf(m, now)} selected={props.selected.has(m.id)} onToggle={props.onToggle} onOpen={props.onOpen} />
          ))}
        </tbody>
      </table>
    </div>
  );
}
