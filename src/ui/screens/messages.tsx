import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { useIsAdmin } from '../auth/session';
import { ConfirmDialog } from '../components/confirm-dialog';
import { ErrorMessage, errorText } from '../components/error-message';
import { Field } from '../components/field';
import { Pager, useBackToLastPage } from '../components/pager';
import { TopicInput } from '../components/topic-input';
import { formatNumber } from '../format';
import { useDeleteByKey, usePurge, useRequeue, type RequeueResult } from '../messages/actions';
import { MessageDrawer } from '../messages/message-drawer';
import { MessageTable } from '../messages/message-table';
import { TopicMaintenance } from '../messages/topic-maintenance';
import { isDeadLetter, MESSAGE_STATUSES, PAGE_SIZES, type Message, type MessageStatus } from '../messages/types';
import { navigate, useRoute } from '../router';

const DEFAULT_LIMIT = 50;

type Order = 'newest' | 'oldest';

interface Filters {
  topic: string;
  status: string;
  /** Newest first unless the URL says `order=oldest` (queue order, the next to be consumed first). */
  order: Order;
  limit: number;
  offset: number;
}

/** The filters are the URL's (`#/messages?topic=&status=&order=&offset=&limit=`), so reload and back keep them. */
function useFilters(): Filters {
  const { params } = useRoute();
  const limit = Number(params.get('limit'));
  const offset = Number(params.get('offset'));
  return {
    topic: params.get('topic') ?? '',
    status: params.get('status') ?? '',
    order: params.get('order') === 'oldest' ? 'oldest' : 'newest',
    limit: (PAGE_SIZES as readonly number[]).includes(limit) ? limit : DEFAULT_LIMIT,
    offset: Number.isInteger(offset) && offset > 0 ? offset : 0,
  };
}

function go(filters: Filters, options?: { replace?: boolean }): void {
  navigate(
    'messages',
    {
      topic: filters.topic,
      status: filters.status,
      order: filters.order === 'newest' ? undefined : filters.order,
      limit: filters.limit === DEFAULT_LIMIT ? undefined : String(filters.limit),
      offset: filters.offset === 0 ? undefined : String(filters.offset),
    },
    options,
  );
}

const plural = (n: number, one: string, many = `${one}s`) => `${formatNumber(n)} ${n === 1 ? one : many}`;

function requeueNotice(result: RequeueResult): string {
  return result.requeued.length === 0 ? '' : `Requeued ${plural(result.requeued.length, 'dead letter')} to the original topic.`;
}

export function MessagesScreen() {
  const filters = useFilters();
  const isAdmin = useIsAdmin();
  const [topicDraft, setTopicDraft] = useState(filters.topic);
  useEffect(() => setTopicDraft(filters.topic), [filters.topic]);

  const query = useQuery({
    queryKey: ['messages', filters],
    // An unknown status typed into the URL goes to the service as is: its 400 says what is allowed.
    queryFn: () =>
      unwrap(
        api.GET('/api/messages', {
          params: { query: { topic: filters.topic || undefined, status: (filters.status || undefined) as MessageStatus | undefined, order: filters.order, limit: filters.limit, offset: filters.offset } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const items = query.data?.items ?? [];
  // Replacing the URL: Back must not return to the empty page, which would only move back here again.
  useBackToLastPage(query.data, !query.isPlaceholderData, filters.offset, filters.limit, (offset) => go({ ...filters, offset }, { replace: true }));

  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [open, setOpen] = useState<Message | null>(null);
  const [notice, setNotice] = useState('');
  const [purging, setPurging] = useState<MessageStatus[] | null>(null);
  const [deletingKey, setDeletingKey] = useState<{ topic: string; key: string } | null>(null);
  const requeue = useRequeue();
  const purge = usePurge();
  const deleteByKey = useDeleteByKey();

  const filterKey = JSON.stringify(filters);
  useEffect(() => setSelected(new Set()), [filterKey]);
  // What was done on one topic ("Requeued 2 dead letters…", a failed requeue) says nothing about the next.
  const resetRequeueResult = requeue.reset;
  useEffect(() => {
    setNotice('');
    resetRequeueResult();
  }, [filters.topic, resetRequeueResult]);

  // Stable handlers keep the memoised rows from re-rendering; the current page is read through a ref.
  const itemsRef = useRef(items);
  itemsRef.current = items;
  const onToggle = useCallback((id: string) => {
    setSelected((current) => {
      const next = new Set(current);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  }, []);
  const onToggleAll = useCallback((select: boolean) => setSelected(select ? new Set(itemsRef.current.filter(isDeadLetter).map((m) => m.id)) : new Set()), []);
  // requeue.reset is stable (TanStack binds it once per observer).
  const resetRequeue = requeue.reset;
  const onOpen = useCallback((id: string) => {
    resetRequeue();
    setOpen(itemsRef.current.find((m) => m.id === id) ?? null);
  }, [resetRequeue]);
  const closeDrawer = useCallback(() => setOpen(null), []);
  const closePurge = useCallback(() => setPurging(null), []);
  const closeDeleteByKey = useCallback(() => setDeletingKey(null), []);

  const applyFilters = (event: FormEvent) => {
    event.preventDefault();
    go({ ...filters, topic: topicDraft.trim(), offset: 0 });
  };

  const requeueIds = (ids: string[], fromDrawer: boolean) => {
    setNotice('');
    requeue.mutate(ids, {
      onSuccess: (result) => {
        setNotice(requeueNotice(result));
        setSelected((current) => new Set([...current].filter((id) => !result.requeued.includes(id))));
        if (fromDrawer && result.failed.length === 0) setOpen(null);
      },
    });
  };

  const startPurge = (statuses: MessageStatus[]) => {
    purge.reset();
    setPurging(statuses);
  };
  const startDeleteByKey = (topic: string, key: string) => {
    deleteByKey.reset();
    setOpen(null);
    setDeletingKey({ topic, key });
  };

  const deadOnPage = items.some(isDeadLetter);
  const requeueFailures = requeue.data?.failed ?? [];

  return (
    <section className="messages-screen">
      <h1>Messages</h1>
      <form className="toolbar" onSubmit={applyFilters} aria-label="Filters">
        <Field label="Topic">
          <TopicInput value={topicDraft} onChange={setTopicDraft} />
        </Field>
        <Field label="Status">
          <select value={filters.status} onChange={(e) => go({ ...filters, topic: topicDraft.trim(), status: e.target.value, offset: 0 })}>
            <option value="">Any status</option>
            {MESSAGE_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Order">
          <select value={filters.order} onChange={(e) => go({ ...filters, topic: topicDraft.trim(), order: e.target.value as Order, offset: 0 })}>
            <option value="newest">Newest first</option>
            <option value="oldest">Oldest first (queue order)</option>
          </select>
        </Field>
        <Field label="Page size">
          <select value={filters.limit} onChange={(e) => go({ ...filters, topic: topicDraft.trim(), limit: Number(e.target.value), offset: 0 })}>
            {PAGE_SIZES.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </Field>
        <button type="submit" className="primary">
          Show
        </button>
        <button type="button" onClick={() => void query.refetch()} disabled={query.isFetching}>
          Refresh
        </button>
      </form>

      {isAdmin && filters.topic !== '' && (
        <TopicMaintenance key={filters.topic} topic={filters.topic} initialStatus={filters.status} onPurge={startPurge} onDeleteByKey={(key) => startDeleteByKey(filters.topic, key)} />
      )}

      <p role="status" className="notice">
        {notice}
      </p>
      <ErrorMessage error={query.error} />
      {!open && requeueFailures.length > 0 && (
        <div className="error" role="alert">
          <p>Some dead letters were not requeued:</p>
          <ul>
            {requeueFailures.map((f) => (
              <li key={f.id}>
                <span className="mono">{f.id}</span>: {errorText(f.error)}
              </li>
            ))}
          </ul>
        </div>
      )}
      <ErrorMessage error={requeue.error} />

      {query.data && (
        <>
          <div className="table-actions">
            {deadOnPage && (
              <button type="button" className="primary" disabled={selected.size === 0 || requeue.isPending} onClick={() => requeueIds([...selected], false)}>
                Requeue selected ({selected.size})
              </button>
            )}
            <Pager total={query.data.total} limit={filters.limit} offset={filters.offset} onChange={(offset) => go({ ...filters, offset })} label="Message pages" />
          </div>
          {items.length === 0 ? (
            <p className="empty">No messages{filters.topic ? ` in ${filters.topic}` : ''}{filters.status ? ` with status ${filters.status}` : ''}.</p>
          ) : (
            <MessageTable items={items} selected={selected} onToggle={onToggle} onToggleAll={onToggleAll} onOpen={onOpen} />
          )}
        </>
      )}
      {query.isPending && <p className="hint">Loading…</p>}

      {open && (
        <MessageDrawer
          message={open}
          canDeleteByKey={isAdmin}
          requeuePending={requeue.isPending}
          requeueError={requeue.data?.failed[0]?.error ?? requeue.error}
          onRequeue={() => requeueIds([open.id], true)}
          onDeleteByKey={() => open.key !== null && startDeleteByKey(open.topic, open.key)}
          onClose={closeDrawer}
        />
      )}
      {purging && (
        <ConfirmDialog
          title="Purge topic"
          message={`Permanently delete the ${purging.length === 0 ? 'pending, processing and expired' : purging.join(', ')} messages of topic ${filters.topic}? This cannot be undone.`}
          actionLabel="Purge"
          typed={filters.topic}
          pending={purge.isPending}
          error={purge.error}
          onConfirm={() =>
            purge.mutate(
              { topic: filters.topic, statuses: purging },
              {
                onSuccess: ({ deleted }) => {
                  setNotice(`Purged ${plural(deleted, 'message')} from ${filters.topic}.`);
                  setPurging(null);
                },
              },
            )
          }
          onClose={closePurge}
        />
      )}
      {deletingKey && (
        <ConfirmDialog
          title="Delete by key"
          message={`Delete every message with key "${deletingKey.key}" on topic ${deletingKey.topic}, whatever its status? This cannot be undone.`}
          actionLabel="Delete"
          pending={deleteByKey.isPending}
          error={deleteByKey.error}
          onConfirm={() =>
            deleteByKey.mutate(deletingKey, {
              onSuccess: ({ deleted }) => {
                setNotice(`Deleted ${plural(deleted, 'message')} with key "${deletingKey.key}" from ${deletingKey.topic}.`);
                setDeletingKey(null);
              },
            })
          }
          onClose={closeDeleteByKey}
        />
      )}
    </section>
  );
}
