import { useId } from 'react';
import { formatAge, formatNumber } from '../format';
import { href } from '../router';
import { SERIES_COLOURS } from './depth-chart';
import { STATUSES, type OrderingKeys, type TopicRow } from './topic-rows';

function rate(value: number | undefined): string {
  if (value === undefined) return '—';
  return `${value >= 10 || value === 0 ? Math.round(value) : value.toFixed(1)}/s`;
}

function groupText(counts: Record<string, number>): string {
  const parts = STATUSES.filter((s) => counts[s]).map((s) => `${formatNumber(counts[s])} ${s}`);
  return parts.length > 0 ? parts.join(', ') : 'nothing waiting';
}

function orderingText(ordering: OrderingKeys): string {
  return `${formatNumber(ordering.keys)} ${ordering.keys === 1 ? 'key' : 'keys'}, ${formatNumber(ordering.waiting)} waiting`;
}

/** The topic's own ordering keys, then each consumer group's (a group delivers each key in order on its own). */
function OrderingCell(props: { row: TopicRow }) {
  const groups = props.row.groups.filter((g) => g.ordering !== undefined);
  if (props.row.ordering === undefined && groups.length === 0) return <>—</>;
  return (
    <ul className="group-list">
      {props.row.ordering && <li>{orderingText(props.row.ordering)}</li>}
      {groups.map((g) => (
        <li key={g.group}>
          {g.group}: {orderingText(g.ordering!)}
        </li>
      ))}
    </ul>
  );
}

/** Every topic with its depth by status, dead letters, oldest pending message, rates and consumer groups. */
export function TopicTable(props: { rows: TopicRow[]; chartTopics: string[]; hasOrdering?: boolean }) {
  const orderingNoteId = useId();
  return (
    <>
      <div className="table-wrap" tabIndex={0} role="region" aria-label="Topic depths">
        <table className="overview-table">
          <caption className="visually-hidden">Topics</caption>
          <thead>
            <tr>
              <th scope="col">Topic</th>
              {STATUSES.map((s) => (
                <th key={s} scope="col" className="num">
                  {s.charAt(0).toUpperCase() + s.slice(1)}
                </th>
              ))}
              <th scope="col" className="num">
                Dead letters
              </th>
              <th scope="col" className="num">
                Oldest pending
              </th>
              <th scope="col" className="num">
                Enqueued
              </th>
              <th scope="col" className="num">
                Acked
              </th>
              <th scope="col">Consumer groups</th>
              {props.hasOrdering && (
                <th scope="col" aria-describedby={orderingNoteId}>
                  Ordering keys
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {props.rows.map((row) => {
              const colour = props.chartTopics.indexOf(row.topic);
              return (
                <tr key={row.topic} data-topic={row.topic}>
                  <th scope="row">
                    {colour >= 0 && <span className="swatch" aria-hidden="true" style={{ background: SERIES_COLOURS[colour % SERIES_COLOURS.length] }} />}
                    <a href={href('messages', { topic: row.topic })}>{row.topic}</a>
                  </th>
                  {STATUSES.map((s) => (
                    <td key={s} className="num" data-label={s}>
                      {formatNumber(row.counts[s] ?? 0)}
                    </td>
                  ))}
                  <td className="num" data-label="dead letters">
                    {row.deadLetters > 0 ? <a href={href('messages', { topic: `${row.topic}.dlq` })}>{formatNumber(row.deadLetters)}</a> : '0'}
                  </td>
                  <td className="num">{formatAge(row.oldestPendingAge)}</td>
                  <td className="num">{rate(row.enqueuedPerSecond)}</td>
                  <td className="num">{rate(row.ackedPerSecond)}</td>
                  <td>
                    {row.groups.length === 0 ? (
                      '—'
                    ) : (
                      <ul className="group-list">
                        {row.groups.map((g) => (
                          <li key={g.group}>
                            <a href={href('groups', { topic: row.topic })}>{g.group}</a>: {groupText(g.counts)}
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                  {props.hasOrdering && (
                    <td>
                      <OrderingCell row={row} />
                    </td>
                  )}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {props.hasOrdering && (
        <p id={orderingNoteId} className="muted">
          Ordering keys: how many keys have messages not yet done, and how many of those are waiting: a consumer holds the key's first message while later ones wait behind it.
        </p>
      )}
    </>
  );
}
