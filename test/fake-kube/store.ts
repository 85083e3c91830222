// Object storage: one global resourceVersion counter (like etcd's revision), objects per storage key
// (group/plural), a bounded per-resource event history for watch resumption, and watch listeners.

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoredEvent {
  type: EventType;
  /** The object after the change (for DELETED: the last state, with the deletion's resourceVersion). */
  object: any;
  /** The object before the change (undefined for ADDED). */
  prev?: any;
  rv: number;
}

export interface Listener {
  storageKey: string;
  onEvent(ev: StoredEvent): void;
}

const objKey = (ns: string | undefined, name: string) => `${ns ?? ''}/${name}`;

export class Store {
  private rv = 1;
  private readonly objects = new Map<string, Map<string, any>>();
  private readonly history = new Map<string, { events: StoredEvent[]; oldest: number }>();
  private readonly listeners = new Set<Listener>();
  private compactedAt = 0;

  constructor(private readonly historyLimit: number) {}

  currentRv(): number {
    return this.rv;
  }

  nextRv(): number {
    return ++this.rv;
  }

  get(storageKey: string, ns: string | undefined, name: string): any | undefined {
    return this.objects.get(storageKey)?.get(objKey(ns, name));
  }

  /** Objects of a storage key, in etcd key order (namespace, then name). */
  list(storageKey: string, ns?: string): any[] {
    const m = this.objects.get(storageKey);
    if (!m) return [];
    return [...m.entries()]
      .filter(([, o]) => ns === undefined || (o.metadata?.namespace ?? '') === ns)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, o]) => o);
  }

  /** Store `obj` (already carrying its new resourceVersion `rv`) and emit ADDED/MODIFIED. */
  put(storageKey: string, obj: any, rv: number): void {
    let m = this.objects.get(storageKey);
    if (!m) this.objects.set(storageKey, (m = new Map()));
    const key = objKey(obj.metadata.namespace, obj.metadata.name);
    const prev = m.get(key);
    m.set(key, obj);
    this.emit(storageKey, { type: prev ? 'MODIFIED' : 'ADDED', object: obj, prev, rv });
  }

  /** Remove an object; `last` is its final state carrying the deletion's resourceVersion `rv`. */
  remove(storageKey: string, last: any, rv: number): void {
    const m = this.objects.get(storageKey);
    const key = objKey(last.metadata.namespace, last.metadata.name);
    const prev = m?.get(key);
    if (!prev) return;
    m!.delete(key);
    this.emit(storageKey, { type: 'DELETED', object: last, prev, rv });
  }

  /** Drop a whole storage key (CRD deleted): every object gets a DELETED event first. */
  drop(storageKey: string): void {
    for (const o of this.list(storageKey)) {
      const rv = this.nextRv();
      const last = structuredClone(o);
      last.metadata.resourceVersion = String(rv);
      this.remove(storageKey, last, rv);
    }
    this.objects.delete(storageKey);
  }

  private emit(storageKey: string, ev: StoredEvent): void {
    let h = this.history.get(storageKey);
    if (!h) this.history.set(storageKey, (h = { events: [], oldest: 0 }));
    h.events.push(ev);
    while (h.events.length > this.historyLimit) {
      const dropped = h.events.shift()!;
      h.oldest = dropped.rv;
    }
    for (const l of [...this.listeners]) if (l.storageKey === storageKey) l.onEvent(ev);
  }

  /**
   * Events of `storageKey` after resourceVersion `from`, or `{ expired }` with the oldest resourceVersion
   * still replayable when `from` is older than the retained history.
   */
  since(storageKey: string, from: number): StoredEvent[] | { expired: number } {
    const h = this.history.get(storageKey);
    const oldest = Math.max(h?.oldest ?? 0, this.compactedAt);
    if (from < oldest) return { expired: oldest };
    return (h?.events ?? []).filter((e) => e.rv > from);
  }

  subscribe(l: Listener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  /**
   * Forget all event history. The global resourceVersion first moves on by one (as if something else had
   * been written, as in any live cluster), so resuming a watch from ANY resourceVersion handed out so far,
   * even an up-to-date informer's, answers 410 Expired.
   */
  compact(): void {
    this.rv++;
    this.compactedAt = this.rv;
    for (const h of this.history.values()) {
      h.events = [];
      h.oldest = this.rv;
    }
  }
}
