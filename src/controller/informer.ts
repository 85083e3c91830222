import { Observable, Watch, type ConfigurationOptions, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../log/logger.js';
import { describeKubeError, GROUP, objectKey, statusCode, VERSION, type KubeClients, type KubeObject } from './kube.js';

export type InformerEvent = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface InformerOptions {
  clients: KubeClients;
  plural: string;
  /** One namespace, or undefined for all namespaces. */
  namespace?: string;
  /** Only resources with these labels are listed and watched (others never reach the cache); undefined = all. */
  labelSelector?: string;
  logger: Logger;
  /**
   * A watch that brought no event and no bookmark for this long is restarted; a list, or the start of a
   * watch, that got no answer for this long is abandoned and tried again.
   */
  watchTimeoutMs: number;
  onEvent(type: InformerEvent, obj: KubeObject): void;
  onRestart?(reason: string): void;
  /** The first list has filled the cache. */
  onSynced?(): void;
  maxBackoffMs?: number;
}

/**
 * List + watch of one custom resource kind, keeping a cache. Unlike client-node's informer, which stops
 * after a socket error, this one restarts itself: from the last resourceVersion after a clean close or an
 * error (capped exponential backoff), with a fresh list after 410 Gone, and from scratch when the watchdog
 * finds the watch silent (bookmarks are requested, so a healthy watch is never silent for long). A list or
 * a watch start the API server accepts and never answers counts as a failure after the watch timeout.
 */
export class Informer {
  readonly cache = new Map<string, KubeObject>();
  private resourceVersion = '';
  private synced = false;
  private healthy = false;
  private stopped = false;
  private abort: AbortController | undefined;
  private lastActivity = Date.now();
  private failures = 0;
  private watchdog: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private generation = 0;

  constructor(private readonly options: InformerOptions) {}

  get hasSynced(): boolean {
    return this.synced;
  }

  /** Whether the last list or watch attempt reached the API server. */
  get isHealthy(): boolean {
    return this.healthy;
  }

  start(): void {
    const check = Math.max(250, Math.min(this.options.watchTimeoutMs / 4, 10_000));
    this.watchdog = setInterval(() => {
      if (this.abort && Date.now() - this.lastActivity > this.options.watchTimeoutMs) this.restart('watch silent for too long', false);
    }, check);
    this.watchdog.unref();
    void this.list();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.watchdog);
    clearTimeout(this.retryTimer);
    this.abort?.abort();
  }

  private get path(): string {
    const ns = this.options.namespace ? `/namespaces/${this.options.namespace}` : '';
    return `/apis/${GROUP}/${VERSION}${ns}/${this.options.plural}`;
  }

  private async list(): Promise<void> {
    if (this.stopped) return;
    const attempt = ++this.generation;
    const deadline = AbortSignal.timeout(this.options.watchTimeoutMs);
    try {
      const { custom } = this.options.clients;
      const { namespace, plural, labelSelector } = this.options;
      const list = (
        namespace
          ? await custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, labelSelector }, abortedBy(deadline))
          : await custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural, labelSelector }, abortedBy(deadline))
      ) as { metadata?: { resourceVersion?: string }; items?: KubeObject[] };
      if (this.stopped || attempt !== this.generation) return;
      this.replace(list.items ?? []);
      this.resourceVersion = list.metadata?.resourceVersion ?? '';
      const first = !this.synced;
      this.synced = true;
      this.healthy = true;
      this.failures = 0;
      if (first) this.options.onSynced?.();
      await this.watch(attempt);
    } catch (err) {
      this.failed(attempt, `list failed: ${deadline.aborted ? `no answer within ${this.options.watchTimeoutMs} ms` : describeKubeError(err)}`, true);
    }
  }

  private async watch(attempt: number): Promise<void> {
    if (this.stopped || attempt !== this.generation) return;
    this.lastActivity = Date.now();
    const watch = new Watch(boundedStart(this.options.clients.config, this.options.watchTimeoutMs));
    // Like client-go: a server-side timeout of 5-10 minutes, so watches are renewed now and then anyway.
    const timeoutSeconds = Math.floor(300 + Math.random() * 300);
    let gone = false;
    /** An ERROR event other than 410: the server failed the watch (an etcd error, say) and ends the stream. */
    let streamError: string | undefined;
    let finished = false;
    const abort = await watch.watch(
      this.path,
      { resourceVersion: this.resourceVersion, allowWatchBookmarks: true, timeoutSeconds, ...(this.options.labelSelector ? { labelSelector: this.options.labelSelector } : {}) },
      (type, obj) => {
        if (attempt !== this.generation) return;
        this.lastActivity = Date.now();
        if (type === 'ERROR') {
          const status = obj as { code?: number; message?: string } | undefined;
          if (status?.code === 410) gone = true;
          else streamError = `${status?.code ?? 'no code'}: ${status?.message ?? 'an ERROR event'}`;
          return;
        }
        this.healthy = true;
        // The watch delivers again: the next failure starts its backoff from the beginning.
        this.failures = 0;
        const rv = (obj as KubeObject)?.metadata?.resourceVersion;
        if (rv) this.resourceVersion = rv;
        if (type === 'BOOKMARK') return;
        this.apply(type as InformerEvent, obj as KubeObject);
      },
      (err) => {
        finished = true;
        if (attempt !== this.generation || this.stopped) return;
        if (gone || statusCode(err) === 410) return this.restart('resourceVersion expired (410 Gone)', true);
        if (err) return this.failed(attempt, `watch failed: ${describeKubeError(err)}`, false);
        // Reopened at once, a watch the server keeps failing would loop as fast as it answers: back off.
        if (streamError !== undefined) return this.failed(attempt, `watch failed: ${streamError}`, false);
        this.failures = 0;
        void this.watch(attempt);
      },
    );
    // The watch may already have ended (connection refused) before it was handed back.
    if (!finished && attempt === this.generation) this.abort = abort;
  }

  private restart(reason: string, relist: boolean): void {
    this.options.logger.info({ kind: this.options.plural, namespace: this.options.namespace, reason }, 'restarting watch');
    this.options.onRestart?.(reason);
    const attempt = ++this.generation;
    this.abort?.abort();
    this.abort = undefined;
    if (relist) void this.list();
    else void this.watch(attempt);
  }

  private failed(attempt: number, reason: string, relist: boolean): void {
    if (this.stopped || attempt !== this.generation) return;
    this.healthy = false;
    this.abort = undefined;
    const delay = Math.min(1000 * 2 ** this.failures, this.options.maxBackoffMs ?? 30_000);
    this.failures++;
    if (this.failures === 1 || this.failures % 10 === 0) this.options.logger.warn({ kind: this.options.plural, reason, retryInMs: delay, failures: this.failures }, 'watch interrupted');
    this.options.onRestart?.(reason);
    this.retryTimer = setTimeout(() => {
      if (attempt !== this.generation) return;
      const next = ++this.generation;
      if (relist || !this.resourceVersion) void this.list();
      else void this.watch(next);
    }, delay);
    this.retryTimer.unref();
  }

  /** A fresh list replaces the cache; what changed while no watch ran is reported as events. */
  private replace(items: KubeObject[]): void {
    const seen = new Set<string>();
    for (const item of items) {
      const key = objectKey(item.metadata.namespace, item.metadata.name);
      seen.add(key);
      const old = this.cache.get(key);
      if (old?.metadata.resourceVersion === item.metadata.resourceVersion) continue;
      this.apply(old ? 'MODIFIED' : 'ADDED', item);
    }
    for (const [key, old] of this.cache) if (!seen.has(key)) this.apply('DELETED', old);
  }

  private apply(type: InformerEvent, obj: KubeObject): void {
    const key = objectKey(obj.metadata.namespace, obj.metadata.name);
    if (type === 'DELETED') this.cache.delete(key);
    else this.cache.set(key, obj);
    this.options.onEvent(type, obj);
  }
}

/** Request options that abort a client-node API call when `signal` does (its calls have no timeout of their own). */
function abortedBy(signal: AbortSignal): ConfigurationOptions {
  return {
    middleware: [
      {
        pre: (context) => {
          context.setSignal(signal);
          return new Observable(Promise.resolve(context));
        },
        post: (response) => new Observable(Promise.resolve(response)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}

/**
 * client-node's Watch sets no timeout and hands out its AbortController only once the API server has
 * answered, so a watch request that is never answered could not be ended. node-fetch's `timeout` covers just
 * that wait (until the response headers, not the stream that follows), so the Watch gets a config whose fetch
 * options carry it: a start that hangs fails like any watch error and is retried.
 */
function boundedStart(config: KubeConfig, timeoutMs: number): KubeConfig {
  const bounded = Object.create(config) as KubeConfig;
  bounded.applyToFetchOptions = async (opts) => ({ ...(await config.applyToFetchOptions(opts)), timeout: timeoutMs });
  return bounded;
}
