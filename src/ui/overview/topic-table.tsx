import { useId } from 'react';
import { formatAge, formatNumber } from '../format';
import { href } from '../router';
import type { SeriesStyle } from './series-style';
import { Swatch } from './swatch';
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
export function TopicTable(props: { rows: TopicRow[]; styles: Map<string, SeriesStyle>; hasOrdering?: boolean }) {
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
              return (
                <tr key={row.topic} data-topic={row.topic}>
                  <th scope="row">
                    <Swatch style={props.styles.get(row.topic)} />
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
      {props.hasOrdering && <OrderingNote id={orderingNoteId} />}
    </>
  );
}

function OrderingNote(props: { id: string }) {
  return (
    <p id={props.id} className="muted">
      Ordering keys: how many keys have messages not yet done, and how many of those are waiting: a consumer holds the key's first message while later ones wait behind it.
    </p>
  );
}

/**
 * The phone layout: one card per topic, its name and the figures that matter most first (pending,
 * processing, dead letters, oldest pending), the rest only when there is something to say.
 */
export function TopicCards(props: { rows: TopicRow[]; styles: Map<string, SeriesStyle>; hasOrdering?: boolean }) {
  const orderingNoteId = useId();
  return (
    <>
      <ul className="topic-cards" aria-label="Topics">
        {props.rows.map((row) => (
          <li key={row.topic} className="topic-card" data-topic={row.topic}>
            <h2 className="topic-card-title">
              <Swatch style={props.styles.get(row.topic)} />
              <a href={href('messages', { topic: row.topic })}>{row.topic}</a>
            </h2>
            <dl className="topic-card-figures">
              <div>
                <dt>Pending</dt>
                <dd>{formatNumber(row.counts.pending ?? 0)}</dd>
              </div>
              <div>
                <dt>Processing</dt>
                <dd>{formatNumber(row.counts.processing ?? 0)}</dd>
              </div>
              <div>
                <dt>Dead letters</dt>
                <dd>{row.deadLetters > 0 ? <a href={href('messages', { topic: `${row.topic}.dlq` })}>{formatNumber(row.deadLetters)}</a> : '0'}</dd>
              </div>
              <div>
                <dt>Oldest pending</dt>
                <dd>{formatAge(row.oldestPendingAge)}</dd>
              </div>
              <div>
                <dt>Enqueued</dt>
                <dd>{rate(row.enqueuedPerSecond)}</dd>
              </div>
              <div>
                <dt>Acked</dt>
                <dd>{rate(row.ackedPerSecond)}</dd>
              </div>
              {(row.counts.failed ?? 0) > 0 && (
                <div>
                  <dt>Failed</dt>
                  <dd>{formatNumber(row.counts.failed)}</dd>
                </div>
              )}
              {(row.counts.expired ?? 0) > 0 && (
                <div>
                  <dt>Expired</dt>
                  <dd>{formatNumber(row.counts.expired)}</dd>
                </div>
              )}
            </dl>
            {row.groups.length > 0 && (
              <p className="topic-card-line">
                <span className="muted">Consumer groups: </span>
                {row.groups.map((g, i) => (
                  <span key={g.group}>
                    {i > 0 && '; '}
                    <a href={href('groups', { topic: row.topic })}>{g.group}</a>: {groupText(g.counts)}
                  </span>
                ))}
              </p>
            )}
            {props.hasOrdering && (row.ordering !== undefined || row.groups.some((g) => g.ordering !== undefined)) && (
              <div className="topic-card-line" aria-describedby={orderingNoteId}>
                <span className="muted">Ordering keys: </span>
                <OrderingCell row={row} />
              </div>
            )}
          </li>
        ))}
      </ul>
      {props.hasOrdering && <OrderingNote id={orderingNoteId} />}
    </>
  );
}
