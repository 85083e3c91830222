// A fake Kubernetes API server for tests: plain HTTP on 127.0.0.1, spoken to by the real
// @kubernetes/client-node and the real kubectl. See the files beside this one for each concern.
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { ApiError } from './errors.js';
import type { FailRule, RequestMatch } from './faults.js';
import { Api } from './handlers.js';
import { runKubectl, writeKubeconfig, type KubectlResult } from './kubectl.js';
import { Registry, type ResourceType } from './resources.js';
import { FakeKubeServer, type RequestLogEntry } from './server.js';
import { Store } from './store.js';

export type { FailRule, RequestMatch, RequestLogEntry, KubectlResult };

export interface ObjectRef {
  group: string;
  version: string;
  plural: string;
  namespace?: string;
}

export interface FakeKube {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  /** Write a kubeconfig (server=url, a user with a dummy token, a context, current-context); returns its path. */
  writeKubeconfig(dir?: string): string;
  /** Run the real kubectl against the fake (fresh --cache-dir each time); never throws on a non-zero exit. */
  kubectl(args: string[], opts?: { input?: string }): Promise<KubectlResult>;
  /** A deep copy of a stored object as served at that version (schema defaults applied), or undefined. */
  get(path: ObjectRef & { name: string }): any | undefined;
  /** Deep copies of the stored objects of a resource (of one namespace when given). */
  list(ref: ObjectRef): any[];
  /** End every open watch cleanly ('close') or destroy their sockets abruptly ('destroy', the default). */
  dropWatches(mode?: 'close' | 'destroy'): void;
  /**
   * Forget the event history: a watch resuming from any resourceVersion handed out so far gets an HTTP 200
   * and one ERROR event with a 410 Expired Status (the global resourceVersion moves on by one first, so an
   * up-to-date informer is affected too).
   */
  compact(): void;
  /** Stop listening and destroy every socket: clients get ECONNREFUSED until comeBack(). */
  goAway(): Promise<void>;
  /** Listen again on the same port. */
  comeBack(): Promise<void>;
  /** Answer matching requests with a metav1.Status error of `status`; returns a remover. */
  failRequests(rule: FailRule): () => void;
  /** Accept matching watches, then send one ERROR event with a Status of `status` and end them; returns a remover. */
  failWatchStreams(rule: FailRule): () => void;
  /**
   * Never answer matching requests while the rule is in place; the remover destroys the sockets of the
   * requests it held (their callers see a connection error such as "socket hang up").
   */
  hangRequests(rule: RequestMatch): () => void;
  /** Every request received, in order. */
  requests: RequestLogEntry[];
  close(): Promise<void>;
}

export interface FakeKubeOptions {
  /** Port to listen on (default: a free one). */
  port?: number;
  /** Interval of BOOKMARK events on watches that allow them (default 1000 ms). */
  bookmarkIntervalMs?: number;
  /** Events kept per resource for watch resumption (default 1000); older resourceVersions get 410. */
  historyLimit?: number;
}

function typeOf(server: FakeKubeServer, ref: ObjectRef): ResourceType | undefined {
  return server.registry.find(ref.group, ref.version, ref.plural);
}

export async function startFakeKube(options: FakeKubeOptions = {}): Promise<FakeKube> {
  const server = new FakeKubeServer(options);
  await server.listen(options.port ?? 0);
  const port = server.port;
  const url = `http://127.0.0.1:${port}`;
  const kubeconfigs: string[] = [];
  let defaultKubeconfig: string | undefined;
  const fake: FakeKube = {
    url,
    port,
    writeKubeconfig(dir) {
      const file = writeKubeconfig(url, dir);
      if (!dir) kubeconfigs.push(dirname(file));
      return file;
    },
    kubectl(args, opts) {
      defaultKubeconfig ??= fake.writeKubeconfig();
      return runKubectl(defaultKubeconfig, args, opts);
    },
    get(path) {
      const rt = typeOf(server, path);
      if (!rt) return undefined;
      const obj = server.store.get(rt.storageKey, rt.namespaced ? path.namespace : undefined, path.name);
      return obj ? server.api.render(rt, obj) : undefined;
    },
    list(ref) {
      const rt = typeOf(server, ref);
      if (!rt) return [];
      return server.store.list(rt.storageKey, rt.namespaced ? ref.namespace : undefined).map((o) => server.api.render(rt, o));
    },
    dropWatches: (mode) => server.dropWatches(mode),
    compact: () => server.store.compact(),
    goAway: () => server.stop(),
    comeBack: () => server.listen(port),
    failRequests: (rule) => server.faults.addFail(rule),
    failWatchStreams: (rule) => server.faults.addStreamFail(rule),
    hangRequests: (rule) => server.faults.addHang(rule),
    requests: server.requests,
    async close() {
      server.faults.clear();
      await server.stop();
      for (const d of kubeconfigs) rmSync(d, { recursive: true, force: true });
    },
  };
  return fake;
}

/**
 * Request options for client-node's generated `patch*` methods that make them send a JSON merge patch
 * (they send JSON Patch by default), e.g.
 * `api.patchNamespacedCustomObjectStatus({ ..., body: { status } }, mergePatch())`.
 */
export const mergePatch = () => setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** Same for server-side apply (add `fieldManager` to the request). */
export const applyPatch = () => setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

/**
 * Validate objects against CRDs offline, with the server's own code path (a dry-run create, or a dry-run
 * update from `old`, with fieldValidation=Strict as kubectl sends it). Returns the API server's error
 * messages: one `field: detail` string per cause of a 422 Invalid, else the Status message; [] when valid.
 */
export function crdValidator(crds: object[]): (obj: object, old?: object) => string[] {
  const registry = new Registry();
  const setup = new Api(new Store(10), registry);
  const crdType = registry.find('apiextensions.k8s.io', 'v1', 'customresourcedefinitions')!;
  for (const crd of crds) {
    try {
      setup.create(crdType, undefined, crd, { fieldValidation: 'Strict' });
    } catch (e) {
      if (e instanceof ApiError) throw new Error(`invalid CRD: ${e.status.message}`);
      throw e;
    }
  }
  const messages = (e: unknown): string[] => {
    if (!(e instanceof ApiError)) throw e;
    const causes = e.status.details?.causes;
    if (e.status.reason === 'Invalid' && causes?.length)
      return causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
    return [e.status.message ?? e.status.reason ?? 'invalid'];
  };
  return (obj, old) => {
    const o: any = obj;
    const [group, version] = String(o?.apiVersion ?? '').includes('/') ? String(o.apiVersion).split('/') : ['', String(o?.apiVersion ?? '')];
    const rt = registry.all().find((t) => t.crdName && t.group === group && t.version === version && t.kind === o?.kind);
    if (!rt) return [`no matches for kind ${JSON.stringify(o?.kind)} in version ${JSON.stringify(o?.apiVersion)}`];
    const api = new Api(new Store(10), registry);
    const ns = rt.namespaced ? (o.metadata?.namespace ?? 'default') : undefined;
    try {
      if (old) {
        const created: any = api.create(rt, ns, old, {}).body;
        const next = structuredClone(o);
        next.metadata = { ...(next.metadata ?? {}), resourceVersion: created.metadata.resourceVersion };
        api.update(rt, ns, created.metadata.name, next, { dryRun: true, fieldValidation: 'Strict' });
      } else api.create(rt, ns, o, { dryRun: true, fieldValidation: 'Strict' });
      return [];
    } catch (e) {
      return messages(e);
    }
  };
}
