// The HTTP front: routing of discovery, OpenAPI and resource paths, JSON responses, watches, the request
// log, fault injection, and the listening socket (stop / listen again on the same port).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import {
  ApiError,
  methodNotAllowed,
  resourceNotFound,
  status as statusObject,
  type Status,
} from './errors.js';
import {
  OPENAPI_V2_PROTOBUF,
  SERVER_VERSION,
  apiGroupDoc,
  apiGroupList,
  apiResourceList,
  apiVersions,
  openApiV2Json,
  openApiV3Doc,
  openApiV3Index,
} from './discovery.js';
import { Faults } from './faults.js';
import { Api, gv, parseBody, type Result } from './handlers.js';
import { Registry, type ResourceType } from './resources.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import { Store } from './store.js';
import { tableRow, tableColumns, toTable, wantsTable } from './table.js';
import { serveWatch, type ActiveWatch } from './watch.js';

export interface RequestLogEntry {
  method: string;
  /** URL path without the query string. */
  path: string;
  /** The query string without `?` ('' when none). */
  query: string;
  contentType?: string;
  /** HTTP status answered; 0 while unanswered (hung, or dropped without an answer). */
  status: number;
}

export interface ServerOptions {
  port?: number;
  bookmarkIntervalMs?: number;
  historyLimit?: number;
}

const MAX_BODY = 3 * 1024 * 1024;

interface Route {
  rt: ResourceType;
  namespace?: string;
  name?: string;
  sub?: 'status';
  legacyWatch: boolean;
}

export class FakeKubeServer {
  readonly store: Store;
  readonly registry = new Registry();
  readonly api: Api;
  readonly faults = new Faults();
  readonly requests: RequestLogEntry[] = [];
  readonly watches = new Set<ActiveWatch>();
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;
  private readonly bookmarkIntervalMs: number;
  port = 0;
  private listening = false;

  constructor(private readonly options: ServerOptions = {}) {
    this.store = new Store(options.historyLimit ?? 1000);
    this.api = new Api(this.store, this.registry);
    this.api.onStorageDropped = (key) => {
      for (const w of [...this.watches]) if (w.storageKey === key) w.end();
    };
    this.bookmarkIntervalMs = options.bookmarkIntervalMs ?? 1000;
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.keepAliveTimeout = 5000;
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async listen(port = this.options.port ?? 0): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const onError = (e: Error) => reject(e);
      this.server.once('error', onError);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', onError);
        resolve();
      });
    });
    const addr = this.server.address();
    if (addr && typeof addr === 'object') this.port = addr.port;
    this.listening = true;
  }

  /** Stop listening and destroy every socket (open watches and held requests included). */
  async stop(): Promise<void> {
    if (!this.listening) return;
    this.listening = false;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const w of [...this.watches]) w.destroy();
    for (const s of this.sockets) s.destroy();
    this.server.closeAllConnections?.();
    await closed;
  }

  dropWatches(mode: 'close' | 'destroy' = 'destroy'): void {
    for (const w of [...this.watches]) (mode === 'close' ? w.end() : w.destroy());
  }

  // ---------------------------------------------------------------------------------------------

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake-kube.invalid');
    const method = (req.method ?? 'GET').toUpperCase();
    const entry: RequestLogEntry = {
      method,
      path: url.pathname,
      query: url.search.replace(/^\?/, ''),
      status: 0,
    };
    if (req.headers['content-type']) entry.contentType = String(req.headers['content-type']);
    this.requests.push(entry);

    const failure = this.faults.failure(method, url.pathname, `${url.pathname}${url.search}`);
    if (failure) {
      req.resume();
      this.sendStatus(res, entry, failure);
      return;
    }
    if (this.faults.hang(req, res, method, url.pathname, `${url.pathname}${url.search}`)) return;

    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) tooLarge = true;
      else chunks.push(c);
    });
    req.on('end', () => {
      if (tooLarge) {
        this.sendStatus(res, entry, statusObject(413, 'RequestEntityTooLarge', 'Request entity too large: limit is 3145728', {}));
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        this.route(req, res, entry, url, method, body);
      } catch (e) {
        if (e instanceof ApiError) this.sendStatus(res, entry, e.status);
        else {
          const message = (e as Error)?.stack ?? String(e);
          this.sendStatus(res, entry, statusObject(500, 'InternalError', `Internal error occurred: ${message}`, {}));
        }
      }
    });
  }

  private send(res: ServerResponse, entry: RequestLogEntry, code: number, body: unknown, contentType = 'application/json', warnings?: string[]): void {
    if (res.headersSent || res.destroyed) return;
    entry.status = code;
    const text = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
    const headers: Record<string, string | string[]> = {
      'Content-Type': contentType,
      'Content-Length': String(Buffer.byteLength(text)),
      'Cache-Control': 'no-cache, private',
    };
    if (warnings?.length) headers.Warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
    res.writeHead(code, headers);
    res.end(text);
  }

  private sendStatus(res: ServerResponse, entry: RequestLogEntry, s: Status): void {
    this.send(res, entry, s.code, s);
  }

  private sendResult(res: ServerResponse, entry: RequestLogEntry, r: Result): void {
    this.send(res, entry, r.code, r.body, 'application/json', r.warnings);
  }

  private route(req: IncomingMessage, res: ServerResponse, entry: RequestLogEntry, url: URL, method: string, body: string): void {
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const segs = path.split('/').filter(Boolean);
    const accept = String(req.headers.accept ?? '');
    const getOnly = () => {
      if (method !== 'GET') throw methodNotAllowed();
    };

    // -------------------------------------------------------------- non-resource paths
    if (path === '/version') return getOnly(), this.send(res, entry, 200, SERVER_VERSION);
    if (path === '/healthz' || path === '/livez' || path === '/readyz') return this.send(res, entry, 200, 'ok', 'text/plain; charset=utf-8');
    if (path === '/api') return getOnly(), this.send(res, entry, 200, apiVersions(`127.0.0.1:${this.port}`));
    if (path === '/apis') return getOnly(), this.send(res, entry, 200, apiGroupList(this.registry));
    if (path === '/openapi/v2') {
      getOnly();
      if (accept.includes('protobuf')) return this.send(res, entry, 200, Buffer.alloc(0), OPENAPI_V2_PROTOBUF);
      return this.send(res, entry, 200, openApiV2Json());
    }
    if (path === '/openapi/v3') return getOnly(), this.send(res, entry, 200, openApiV3Index(this.registry));
    if (segs[0] === 'openapi' && segs[1] === 'v3') {
      getOnly();
      const [, , kind, a, b] = segs;
      const doc =
        kind === 'api' && a && !b ? openApiV3Doc(this.registry, '', a) : kind === 'apis' && a && b ? openApiV3Doc(this.registry, a, b) : undefined;
      if (!doc) throw resourceNotFound();
      return this.send(res, entry, 200, doc);
    }

    // -------------------------------------------------------------- group / version documents
    let group: string;
    let version: string;
    let rest: string[];
    if (segs[0] === 'api' && segs.length >= 2) {
      group = '';
      version = segs[1];
      rest = segs.slice(2);
    } else if (segs[0] === 'apis' && segs.length >= 2) {
      if (segs.length === 2) {
        getOnly();
        const g = apiGroupDoc(this.registry, segs[1]);
        if (!g) throw resourceNotFound();
        return this.send(res, entry, 200, g);
      }
      group = segs[1];
      version = segs[2];
      rest = segs.slice(3);
    } else throw resourceNotFound();
    if (!rest.length) {
      getOnly();
      const list = apiResourceList(this.registry, group, version);
      if (!list) throw resourceNotFound();
      return this.send(res, entry, 200, list);
    }

    // -------------------------------------------------------------- resources
    const r = this.resolve(group, version, rest);
    const q = url.searchParams;
    const isWatch = r.legacyWatch || q.get('watch') === 'true' || q.get('watch') === '1';
    const ns = r.namespace;
    const dryRun = q.getAll('dryRun').includes('All');
    const writeOpts = {
      dryRun,
      fieldValidation: q.get('fieldValidation') ?? undefined,
      fieldManager: q.get('fieldManager') ?? undefined,
    };
    const table = wantsTable(accept);
    const includeObject = q.get('includeObject') ?? 'Metadata';

    if (r.name === undefined) {
      // collection
      if (method === 'GET') {
        if (isWatch) return this.watch(req, res, entry, r.rt, ns, q, table, includeObject);
        const { items, metadata } = this.api.list(r.rt, ns, {
          labelSelector: q.get('labelSelector'),
          fieldSelector: q.get('fieldSelector'),
          limit: q.get('limit'),
          continue: q.get('continue'),
        });
        if (table) return this.send(res, entry, 200, toTable(r.rt, items, metadata, includeObject));
        return this.send(res, entry, 200, { apiVersion: gv(r.rt), kind: r.rt.listKind, metadata, items });
      }
      if (method === 'POST') {
        if (r.rt.namespaced && ns === undefined) throw methodNotAllowed();
        const obj = parseBody(body, req.headers['content-type']);
        return this.sendResult(res, entry, this.api.create(r.rt, ns, obj, writeOpts));
      }
      if (method === 'DELETE') {
        if (r.rt.namespaced && ns === undefined) throw methodNotAllowed();
        return this.sendResult(
          res,
          entry,
          this.api.deleteCollection(r.rt, ns, { labelSelector: q.get('labelSelector'), fieldSelector: q.get('fieldSelector') }, { dryRun }),
        );
      }
      throw methodNotAllowed();
    }

    // single object
    if (r.rt.namespaced && ns === undefined) throw resourceNotFound();
    const name = r.name;
    switch (method) {
      case 'GET': {
        if (isWatch) {
          const fs = q.get('fieldSelector');
          q.set('fieldSelector', fs ? `${fs},metadata.name=${name}` : `metadata.name=${name}`);
          return this.watch(req, res, entry, r.rt, ns, q, table, includeObject);
        }
        const obj = this.api.get(r.rt, ns, name);
        if (table) return this.send(res, entry, 200, toTable(r.rt, [obj], { resourceVersion: obj.metadata.resourceVersion }, includeObject));
        return this.send(res, entry, 200, obj);
      }
      case 'PUT': {
        const obj = parseBody(body, req.headers['content-type']);
        return this.sendResult(res, entry, this.api.update(r.rt, ns, name, obj, writeOpts, r.sub));
      }
      case 'PATCH':
        return this.sendResult(
          res,
          entry,
          this.api.patch(r.rt, ns, name, req.headers['content-type'], body, { ...writeOpts, force: q.get('force') === 'true' }, r.sub),
        );
      case 'DELETE': {
        if (r.sub) throw methodNotAllowed();
        const options = body.trim() ? parseBody(body, 'application/json') : undefined;
        return this.sendResult(res, entry, this.api.delete(r.rt, ns, name, options, { dryRun }));
      }
      default:
        throw methodNotAllowed();
    }
  }

  /** Resolve `[watch/]{namespaces/<ns>/}<plural>[/<name>[/status]]` under a group/version. */
  private resolve(group: string, version: string, rest: string[]): Route {
    let legacyWatch = false;
    let segs = rest;
    if (segs[0] === 'watch') {
      legacyWatch = true;
      segs = segs.slice(1);
    }
    let namespace: string | undefined;
    if (segs[0] === 'namespaces' && segs.length >= 3 && !(group === '' && segs.length === 3 && (segs[2] === 'status' || segs[2] === 'finalize'))) {
      namespace = segs[1];
      segs = segs.slice(2);
    }
    const [plural, name, sub, ...extra] = segs;
    if (!this.registry.hasGroupVersion(group, version)) throw resourceNotFound();
    const rt = this.registry.find(group, version, plural);
    if (!rt || extra.length) throw resourceNotFound();
    if (!rt.namespaced && namespace !== undefined) throw resourceNotFound();
    if (sub !== undefined && !(sub === 'status' && rt.statusSubresource)) throw resourceNotFound();
    return { rt, namespace, name, sub: sub as 'status' | undefined, legacyWatch };
  }

  private watch(
    _req: IncomingMessage,
    res: ServerResponse,
    entry: RequestLogEntry,
    rt: ResourceType,
    ns: string | undefined,
    q: URLSearchParams,
    table: boolean,
    includeObject: string,
  ): void {
    const labels = parseLabelSelector(q.get('labelSelector'));
    const fields = parseFieldSelector(q.get('fieldSelector'), rt.fieldSelectors);
    const timeout = q.get('timeoutSeconds');
    serveWatch(
      {
        store: this.store,
        storageKey: rt.storageKey,
        kind: rt.kind,
        apiVersion: gv(rt),
        namespace: rt.namespaced ? ns : undefined,
        labels,
        fields,
        resourceVersion: q.get('resourceVersion') ?? undefined,
        bookmarks: q.get('allowWatchBookmarks') === 'true',
        sendInitialEvents: q.get('sendInitialEvents') === 'true',
        bookmarkIntervalMs: this.bookmarkIntervalMs,
        timeoutSeconds: timeout ? Number(timeout) : undefined,
        render: (obj, first) => {
          const o = this.api.render(rt, obj);
          if (!table) return o;
          return {
            kind: 'Table',
            apiVersion: 'meta.k8s.io/v1',
            metadata: { resourceVersion: o.metadata.resourceVersion },
            columnDefinitions: first ? tableColumns(rt) : [],
            rows: [tableRow(rt, o, includeObject)],
          };
        },
        res,
        onStatus: (code) => (entry.status = code),
        failWith: this.faults.streamFailure('GET', entry.path, `${entry.path}?${entry.query}`),
      },
      this.watches,
    );
  }
}
