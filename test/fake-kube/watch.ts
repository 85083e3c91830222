// Watch streams: chunked JSON lines of {"type","object"}, replay from a resourceVersion, bookmarks,
// timeoutSeconds, 410 Expired as an ERROR event, and the handles fault injection uses to drop them.
import type { ServerResponse } from 'node:http';
import { expired } from './errors.js';
import type { Matcher } from './selectors.js';
import type { Store, StoredEvent } from './store.js';

export interface ActiveWatch {
  storageKey: string;
  /** End the stream cleanly (the client sees the response end). */
  end(): void;
  /** Destroy the socket (the client sees an error / premature close). */
  destroy(): void;
}

export interface WatchOptions {
  store: Store;
  storageKey: string;
  /** Object kind/apiVersion for BOOKMARK events. */
  kind: string;
  apiVersion: string;
  namespace?: string;
  labels: Matcher;
  fields: Matcher;
  resourceVersion?: string;
  bookmarks: boolean;
  /** WatchList (kubectl 1.35 waits this way): the current objects as ADDED, then an initial-events-end bookmark. */
  sendInitialEvents: boolean;
  bookmarkIntervalMs: number;
  timeoutSeconds?: number;
  /** Object as sent to the client (apiVersion of the watched version, defaults, Table conversion). */
  render(obj: any, first: boolean): any;
  res: ServerResponse;
  onStatus(code: number): void;
  /** Fail the stream at once: one ERROR event with this Status, then the end (fault injection). */
  failWith?: object;
}

export function serveWatch(o: WatchOptions, registry: Set<ActiveWatch>): void {
  const { res, store } = o;
  const inScope = (obj: any) =>
    !!obj && (o.namespace === undefined || (obj.metadata?.namespace ?? '') === o.namespace) && o.labels(obj) && o.fields(obj);

  res.writeHead(200, {
    'Content-Type': 'application/json',
    'Cache-Control': 'no-cache, private',
    'Transfer-Encoding': 'chunked',
  });
  o.onStatus(200);
  res.flushHeaders();

  let first = true;
  let closed = false;
  const write = (type: string, object: any) => {
    if (closed) return;
    res.write(`${JSON.stringify({ type, object })}\n`);
  };
  const send = (type: string, obj: any) => {
    write(type, o.render(obj, first));
    first = false;
  };

  const onEvent = (ev: StoredEvent) => {
    const nowIn = inScope(ev.object);
    const wasIn = ev.prev !== undefined && inScope(ev.prev);
    if (ev.type === 'ADDED') {
      if (nowIn) send('ADDED', ev.object);
    } else if (ev.type === 'MODIFIED') {
      if (nowIn && wasIn) send('MODIFIED', ev.object);
      else if (nowIn) send('ADDED', ev.object);
      else if (wasIn) {
        // leaving the selection: DELETED with the previous content and the event's resourceVersion
        const prev = structuredClone(ev.prev);
        prev.metadata.resourceVersion = String(ev.rv);
        send('DELETED', prev);
      }
    } else if (nowIn || wasIn) send('DELETED', ev.object);
  };

  let unsubscribe = () => {};
  let bookmarkTimer: NodeJS.Timeout | undefined;
  let timeoutTimer: NodeJS.Timeout | undefined;
  const cleanup = () => {
    if (closed) return;
    closed = true;
    unsubscribe();
    if (bookmarkTimer) clearInterval(bookmarkTimer);
    if (timeoutTimer) clearTimeout(timeoutTimer);
    registry.delete(handle);
  };
  const handle: ActiveWatch = {
    storageKey: o.storageKey,
    end: () => {
      cleanup();
      res.end();
    },
    destroy: () => {
      cleanup();
      res.socket?.destroy();
      res.destroy();
    },
  };
  registry.add(handle);
  res.on('close', cleanup);

  const rv = o.resourceVersion;
  if (o.failWith) {
    write('ERROR', o.failWith);
    handle.end();
    return;
  }
  if (o.sendInitialEvents) {
    for (const obj of store.list(o.storageKey)) if (inScope(obj)) send('ADDED', obj);
    write('BOOKMARK', {
      kind: o.kind,
      apiVersion: o.apiVersion,
      metadata: { resourceVersion: String(store.currentRv()), annotations: { 'k8s.io/initial-events-end': 'true' } },
    });
  } else if (rv === undefined || rv === '' || rv === '0') {
    for (const obj of store.list(o.storageKey)) if (inScope(obj)) send('ADDED', obj);
  } else {
    const from = Number(rv);
    const events = Number.isInteger(from) ? store.since(o.storageKey, from) : { expired: store.currentRv() };
    if (!Array.isArray(events)) {
      write('ERROR', expired(`too old resource version: ${rv} (${events.expired})`));
      handle.end();
      return;
    }
    for (const ev of events) onEvent(ev);
  }
  unsubscribe = store.subscribe({ storageKey: o.storageKey, onEvent });

  if (o.bookmarks && o.bookmarkIntervalMs > 0) {
    bookmarkTimer = setInterval(() => {
      write('BOOKMARK', {
        kind: o.kind,
        apiVersion: o.apiVersion,
        metadata: { resourceVersion: String(store.currentRv()) },
      });
    }, o.bookmarkIntervalMs);
    bookmarkTimer.unref?.();
  }
  if (o.timeoutSeconds !== undefined && o.timeoutSeconds > 0) {
    timeoutTimer = setTimeout(() => handle.end(), o.timeoutSeconds * 1000);
    timeoutTimer.unref?.();
  }
}
