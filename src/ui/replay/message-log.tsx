import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import type { components } from '../api/openapi';
import { ErrorMessage } from '../components/error-message';
import { Pager, useBackToLastPage } from '../components/pager';
import { Timestamp } from '../components/timestamp';

const PAGE = 20;

export const logKey = (topic: string) => ['message-log', topic] as const;

/** The log keeps payloads as base64 (they are bytes); shown as text when they are UTF-8. */
export function decodePayload(base64: string): { text: string; binary: boolean } {
  try {
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes), binary: false };
  } catch {
    return { text: `base64: ${base64}`, binary: true };
  }
}

/** The archive log of the topic (acked messages of a replayable topic), a page at a time. */
export function MessageLog(props: { topic: string }) {
  const { topic } = props;
  const headingId = useId();
  const [offset, setOffset] = useState(0);
  const log = useQuery({
    queryKey: [...logKey(topic), offset],
    queryFn: (): Promise<components['schemas']['MessageLogPage']> =>
      unwrap(api.GET('/api/topics/{topic}/message-log', { params: { path: { topic }, query: { limit: PAGE, offset } } })),
    placeholderData: keepPreviousData,
  });
  const page = log.data;
  useBackToLastPage(page, !log.isPlaceholderData, offset, PAGE, setOffset);
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>Message log</h2>
      <p className="hint">Acked messages of {topic} kept for replay, in the order they were acked. A topic that is not replayable keeps none.</p>
      <ErrorMessage error={log.error} />
      {log.isPending ? (
        <p>Loading…</p>
      ) : page && page.total === 0 ? (
        <p>The log of {topic} is empty.</p>
      ) : (
        page && (
          <>
            <div className="table-wrap" tabIndex={0} role="region" aria-label="Logged messages">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Created</th>
                    <th scope="col">Acked</th>
                    <th scope="col">Key</th>
                    <th scope="col">Payload</th>
                    <th scope="col" className="num">Retries</th>
                  </tr>
                </thead>
                <tbody>
                  {page.items.map((entry) => {
                    const payload = decodePayload(entry.payload);
                    return (
                      <tr key={entry.id}>
                        <td>
                          <Timestamp iso={entry.created_at} />
                        </td>
                        <td>
                          <Timestamp iso={entry.acked_at} />
                        </td>
                        <td>{entry.key ?? '—'}</td>
                        <td>
                          <code className={payload.binary ? 'log-payload binary' : 'log-payload'}>{payload.text}</code>
                        </td>
                        <td className="num">{entry.retry_count}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
            <Pager total={page.total} limit={page.limit} offset={page.offset} onChange={setOffset} label="Message log pages" />
          </>
        )
      )}
    </section>
  );
}
