// The REST semantics of the generic registry: get/list/create/update/patch/delete with resourceVersion
// preconditions, generation, status subresource, finalizers, dry-run, strict field validation, and the
// side effects of CRDs (serving their kinds) and namespaces (deleting their contents).
import { randomUUID } from 'node:crypto';
import YAML from 'yaml';
import {
  ApiError,
  DecodeError,
  GoRaw,
  OPTIMISTIC_LOCK_MESSAGE,
  alreadyExists,
  badRequest,
  conflict,
  fieldInvalid,
  internalError,
  invalid,
  notFound,
  strictDecodingError,
  unsupportedMediaType,
  type FieldError,
} from './errors.js';
import { clone, deepEqual, OBJECT_META_FIELDS } from './crd-schema.js';
import { generateName, nowTime, validateFinalizerUpdate, validateObjectMeta } from './meta.js';
import { applyMerge, jsonPatch, mergePatch, strategicMerge } from './patch.js';
import { assertValidCrd, crdStatus, defaultCrd, type Registry, type ResourceType } from './resources.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import type { Store } from './store.js';

export const gv = (rt: { group: string; version: string }) => (rt.group ? `${rt.group}/${rt.version}` : rt.version);

export interface WriteOptions {
  dryRun?: boolean;
  /** fieldValidation query parameter: Strict | Warn | Ignore (the server default is Warn). */
  fieldValidation?: string;
  fieldManager?: string;
}

export interface Result {
  code: number;
  body: unknown;
  warnings?: string[];
}

const isObj = (v: unknown): v is Record<string, any> => v !== null && typeof v === 'object' && !Array.isArray(v);

export function parseBody(raw: string, contentType: string | undefined): unknown {
  const ct = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (ct === 'application/yaml' || ct === 'application/apply-patch+yaml') {
    try {
      return YAML.parse(raw);
    } catch (e) {
      throw badRequest(`error decoding YAML: ${(e as Error).message}`);
    }
  }
  try {
    return JSON.parse(raw);
  } catch (e) {
    throw badRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
  }
}

const CRD_STORAGE = 'apiextensions.k8s.io/customresourcedefinitions';
const NS_STORAGE = '/namespaces';

function normalizeMeta(md: any): void {
  for (const k of ['finalizers', 'ownerReferences'] as const) if (Array.isArray(md[k]) && !md[k].length) delete md[k];
  for (const k of ['labels', 'annotations'] as const) if (isObj(md[k]) && !Object.keys(md[k]).length) delete md[k];
  delete md.selfLink;
  delete md.managedFields;
}

/** Everything but metadata (and status, for kinds with a status subresource): what bumps generation. */
function specPart(obj: any, rt: ResourceType): any {
  const out: any = {};
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'metadata' || k === 'apiVersion' || k === 'kind') continue;
    if (k === 'status' && rt.statusSubresource) continue;
    out[k] = v;
  }
  return out;
}

const withoutRv = (obj: any) => {
  const c = clone(obj);
  delete c.metadata.resourceVersion;
  return c;
};

export class Api {
  /** Called when a CRD disappears, with the storage keys whose watches must end. */
  onStorageDropped: (storageKey: string) => void = () => {};

  constructor(
    readonly store: Store,
    readonly registry: Registry,
  ) {}

  /** An object as served at `rt`'s version: a copy, with apiVersion/kind and schema defaults applied. */
  render(rt: ResourceType, obj: any): any {
    const out = clone(obj);
    out.apiVersion = gv(rt);
    out.kind = rt.kind;
    if (rt.schema) rt.schema.applyDefaults(out);
    // keep apiVersion, kind, metadata first like the real server's encoding
    const { apiVersion, kind, metadata, ...rest } = out;
    return { apiVersion, kind, metadata, ...rest };
  }

  private key(rt: ResourceType, ns: string | undefined) {
    return rt.namespaced ? ns : undefined;
  }

  // ------------------------------------------------------------------------------------------- reads

  get(rt: ResourceType, ns: string | undefined, name: string): any {
    const obj = this.store.get(rt.storageKey, this.key(rt, ns), name);
    if (!obj) throw notFound(rt, name);
    return this.render(rt, obj);
  }

  list(
    rt: ResourceType,
    ns: string | undefined,
    q: { labelSelector?: string | null; fieldSelector?: string | null; limit?: string | null; continue?: string | null },
  ): { items: any[]; metadata: Record<string, unknown> } {
    const labels = parseLabelSelector(q.labelSelector);
    const fields = parseFieldSelector(q.fieldSelector, rt.fieldSelectors);
    const rv = String(this.store.currentRv());
    let entries = this.store
      .list(rt.storageKey, rt.namespaced ? ns : undefined)
      .map((o) => this.render(rt, o))
      .filter((o) => labels(o) && fields(o));
    const keyOf = (o: any) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    if (q.continue) {
      let start: string;
      try {
        start = JSON.parse(Buffer.from(q.continue, 'base64').toString('utf8')).start;
      } catch {
        throw badRequest('continue key is not valid: illegal base64 data at input byte 0');
      }
      entries = entries.filter((o) => keyOf(o) >= start);
    }
    const metadata: Record<string, unknown> = { resourceVersion: rv };
    const limit = q.limit ? Number(q.limit) : 0;
    if (limit > 0 && entries.length > limit) {
      const next = entries[limit];
      metadata.continue = Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: Number(rv), start: keyOf(next) })).toString('base64');
      metadata.remainingItemCount = entries.length - limit;
      entries = entries.slice(0, limit);
    }
    return { items: entries, metadata };
  }

  listObject(rt: ResourceType, ns: string | undefined, q: Parameters<Api['list']>[2]): any {
    const { items, metadata } = this.list(rt, ns, q);
    return { apiVersion: gv(rt), kind: rt.listKind, metadata, items };
  }

  // ------------------------------------------------------------------------------------------ writes

  private checkTypeMeta(rt: ResourceType, obj: any, raw: unknown): void {
    if (!isObj(obj)) throw badRequest(`the object provided is unrecognized (must be of type ${rt.kind})`);
    if (rt.crdName && !obj.kind)
      throw badRequest(`Object 'Kind' is missing in '${typeof raw === 'string' ? raw : JSON.stringify(raw)}'`);
    if (obj.apiVersion !== undefined && obj.apiVersion !== gv(rt))
      throw badRequest(`the API version in the data (${obj.apiVersion}) does not match the expected API version (${gv(rt)})`);
    if (obj.kind !== undefined && obj.kind !== rt.kind)
      throw badRequest(`the kind in the data (${obj.kind}) does not match the expected kind (${rt.kind})`);
    if (obj.metadata !== undefined && !isObj(obj.metadata))
      throw badRequest(`${rt.kind} in version ${JSON.stringify(rt.version)} cannot be handled as a ${rt.kind}: metadata must be an object`);
  }

  /** Decode-time work: typed-field checks, pruning of unknown fields (and strict field validation). */
  private decode(rt: ResourceType, obj: any, opts: WriteOptions, patched?: () => string): string[] {
    const strict = opts.fieldValidation === 'Strict';
    const unknown: string[] = [];
    try {
      rt.decode?.(obj);
    } catch (e) {
      if (!(e instanceof DecodeError)) throw e;
      if (patched) throw invalid({ group: '', kind: '' }, '', [fieldInvalid('patch', patched(), e.message)]);
      throw badRequest(`${rt.kind} in version ${JSON.stringify(rt.version)} cannot be handled as a ${rt.kind}: ${e.message}`);
    }
    if (rt.schema) unknown.push(...rt.schema.prune(obj));
    else if (isObj(obj.metadata))
      for (const k of Object.keys(obj.metadata))
        if (!OBJECT_META_FIELDS.has(k)) {
          unknown.push(`metadata.${k}`);
          delete obj.metadata[k];
        }
    if (unknown.length && strict) {
      if (patched)
        throw invalid({ group: '', kind: '' }, '', [
          fieldInvalid('patch', patched(), `strict decoding error: ${unknown.map((f) => `unknown field ${JSON.stringify(f)}`).join(', ')}`),
        ]);
      throw strictDecodingError(rt.kind, rt.version, unknown);
    }
    return unknown.length && opts.fieldValidation !== 'Ignore' ? unknown.map((f) => `unknown field ${JSON.stringify(f)}`) : [];
  }

  private validate(rt: ResourceType, obj: any, old?: any): FieldError[] {
    const errs = validateObjectMeta(obj, rt.nameKind);
    if (rt.schema) errs.push(...rt.schema.validate(obj, old ? this.render(rt, old) : undefined));
    return errs;
  }

  create(rt: ResourceType, ns: string | undefined, body: unknown, opts: WriteOptions): Result {
    const obj: any = clone(body);
    this.checkTypeMeta(rt, obj, body);
    obj.apiVersion = gv(rt);
    obj.kind = rt.kind;
    const md = (obj.metadata ??= {});
    if (rt.namespaced) {
      if (md.namespace && md.namespace !== ns)
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      md.namespace = ns;
    } else delete md.namespace;
    const warnings = this.decode(rt, obj, opts);
    if (md.resourceVersion) throw internalError('resourceVersion should not be set on objects to be created');
    if (!md.name && md.generateName) md.name = generateName(String(md.generateName));
    delete md.deletionTimestamp;
    delete md.deletionGracePeriodSeconds;
    normalizeMeta(md);
    md.uid = randomUUID();
    md.creationTimestamp = nowTime();
    md.generation = 1;
    if (rt.statusSubresource) delete obj.status;
    if (rt.schema) rt.schema.applyDefaults(obj);
    const errs = this.validate(rt, obj);
    if (errs.length) throw invalid(rt, md.name ?? '', errs);
    if (rt.storageKey === CRD_STORAGE) {
      defaultCrd(obj);
      assertValidCrd(obj);
      obj.status = crdStatus(obj);
    }
    if (rt.storageKey === NS_STORAGE) {
      obj.spec = { finalizers: ['kubernetes'], ...(obj.spec ?? {}) };
      obj.status = { phase: 'Active' };
    }
    if (this.store.get(rt.storageKey, this.key(rt, ns), md.name)) throw alreadyExists(rt, md.name);
    if (opts.dryRun) return { code: 201, body: this.render(rt, obj), warnings };
    const rv = this.store.nextRv();
    md.resourceVersion = String(rv);
    this.store.put(rt.storageKey, obj, rv);
    if (rt.storageKey === CRD_STORAGE) this.registry.setCrd(obj);
    return { code: 201, body: this.render(rt, obj), warnings };
  }

  update(
    rt: ResourceType,
    ns: string | undefined,
    name: string,
    body: unknown,
    opts: WriteOptions,
    sub?: 'status',
    patched?: () => string,
  ): Result {
    const cur = this.store.get(rt.storageKey, this.key(rt, ns), name);
    if (!cur) throw notFound(rt, name);
    const obj: any = clone(body);
    this.checkTypeMeta(rt, obj, body);
    obj.apiVersion = gv(rt);
    obj.kind = rt.kind;
    const md = (obj.metadata ??= {});
    if (md.name !== name)
      throw badRequest(`the name of the object (${md.name ?? ''}) does not match the name on the URL (${name})`);
    if (rt.namespaced) {
      if (md.namespace && md.namespace !== ns)
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      md.namespace = ns;
    } else delete md.namespace;
    const warnings = this.decode(rt, obj, opts, patched);

    const curMd = cur.metadata;
    if (md.resourceVersion !== undefined && md.resourceVersion !== '') {
      if (String(md.resourceVersion) !== curMd.resourceVersion) throw conflict(rt, name, OPTIMISTIC_LOCK_MESSAGE);
    } else if (!rt.allowUnconditionalUpdate && !patched) {
      throw invalid(rt, name, [fieldInvalid('metadata.resourceVersion', new GoRaw('0x0'), 'must be specified for an update')]);
    }
    if (md.uid && md.uid !== curMd.uid)
      throw conflict(rt, name, `Precondition failed: UID in precondition: ${md.uid}, UID in object meta: ${curMd.uid}`);

    let next: any;
    if (sub === 'status') {
      next = clone(cur);
      next.apiVersion = gv(rt);
      next.kind = rt.kind;
      if (obj.status === undefined) delete next.status;
      else next.status = obj.status;
    } else {
      next = obj;
      if (rt.statusSubresource) {
        if (cur.status === undefined) delete next.status;
        else next.status = clone(cur.status);
      }
    }
    const nmd = next.metadata;
    nmd.uid = curMd.uid;
    nmd.creationTimestamp = curMd.creationTimestamp;
    nmd.generation = curMd.generation;
    for (const k of ['deletionTimestamp', 'deletionGracePeriodSeconds'] as const) {
      if (curMd[k] === undefined) delete nmd[k];
      else nmd[k] = curMd[k];
    }
    normalizeMeta(nmd);
    if (rt.schema) rt.schema.applyDefaults(next);
    const errs = [...validateFinalizerUpdate(cur, next), ...this.validate(rt, next, cur)];
    if (errs.length) throw invalid(rt, name, errs);
    if (rt.storageKey === CRD_STORAGE) {
      defaultCrd(next);
      assertValidCrd(next);
      if (sub !== 'status') next.status = crdStatus(next, cur);
    }
    if (!deepEqual(specPart(next, rt), specPart(this.render(rt, cur), rt))) nmd.generation = (curMd.generation ?? 1) + 1;

    nmd.resourceVersion = curMd.resourceVersion;
    if (deepEqual(withoutRv(next), withoutRv(this.render(rt, cur)))) return { code: 200, body: this.render(rt, cur), warnings };
    if (opts.dryRun) return { code: 200, body: this.render(rt, next), warnings };

    const rv = this.store.nextRv();
    nmd.resourceVersion = String(rv);
    if (nmd.deletionTimestamp && !(nmd.finalizers?.length)) {
      // like the generic registry: the update is stored (MODIFIED), then the object is deleted (DELETED)
      this.store.put(rt.storageKey, next, rv);
      const last = clone(next);
      const rv2 = this.store.nextRv();
      last.metadata.resourceVersion = String(rv2);
      this.store.remove(rt.storageKey, last, rv2);
      this.afterRemove(rt, last);
      return { code: 200, body: this.render(rt, next), warnings };
    }
    this.store.put(rt.storageKey, next, rv);
    if (rt.storageKey === CRD_STORAGE) this.registry.setCrd(next);
    return { code: 200, body: this.render(rt, next), warnings };
  }

  patch(
    rt: ResourceType,
    ns: string | undefined,
    name: string,
    contentType: string | undefined,
    raw: string,
    opts: WriteOptions & { force?: boolean },
    sub?: 'status',
  ): Result {
    const ct = (contentType ?? '').split(';')[0].trim().toLowerCase();
    const accepted = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'];
    if (!rt.crdName) accepted.splice(2, 0, 'application/strategic-merge-patch+json');
    if (!accepted.includes(ct)) throw unsupportedMediaType(accepted);
    const cur = this.store.get(rt.storageKey, this.key(rt, ns), name);
    if (ct === 'application/apply-patch+yaml') {
      if (!opts.fieldManager) throw badRequest('PATCH request must have fieldManager set for apply');
      const applied: any = parseBody(raw, ct);
      if (!isObj(applied)) throw badRequest('error decoding YAML: the applied configuration must be an object');
      if (!cur) {
        if (sub === 'status') throw notFound(rt, name);
        if (isObj(applied.metadata) && applied.metadata.name && applied.metadata.name !== name)
          throw badRequest(`the name of the object (${applied.metadata.name}) does not match the name on the URL (${name})`);
        const obj = { ...applied, metadata: { ...(applied.metadata ?? {}), name } };
        return this.create(rt, ns, obj, opts);
      }
      const merged = applyMerge(this.render(rt, cur), applied);
      return this.update(rt, ns, name, merged, opts, sub, () => JSON.stringify(merged));
    }
    if (!cur) throw notFound(rt, name);
    const base = this.render(rt, cur);
    const body = parseBody(raw, 'application/json');
    let patchedObj: any;
    if (ct === 'application/json-patch+json') patchedObj = jsonPatch(base, body);
    else if (ct === 'application/merge-patch+json') patchedObj = mergePatch(base, body);
    else patchedObj = strategicMerge(base, body);
    if (!isObj(patchedObj)) throw badRequest('the patched object is not an object');
    return this.update(rt, ns, name, patchedObj, opts, sub, () => JSON.stringify(patchedObj));
  }

  delete(
    rt: ResourceType,
    ns: string | undefined,
    name: string,
    options: any,
    opts: { dryRun?: boolean },
  ): Result {
    const cur = this.store.get(rt.storageKey, this.key(rt, ns), name);
    if (!cur) throw notFound(rt, name);
    const pre = isObj(options) ? options.preconditions : undefined;
    if (isObj(pre)) {
      if (pre.uid && pre.uid !== cur.metadata.uid)
        throw conflict(rt, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${cur.metadata.uid}`);
      if (pre.resourceVersion && pre.resourceVersion !== cur.metadata.resourceVersion)
        throw conflict(
          rt,
          name,
          `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${cur.metadata.resourceVersion}`,
        );
    }
    const dryRun = opts.dryRun || (isObj(options) && Array.isArray(options.dryRun) && options.dryRun.includes('All'));
    if (cur.metadata.finalizers?.length) {
      if (cur.metadata.deletionTimestamp || dryRun) return { code: 200, body: this.render(rt, cur) };
      const next = clone(cur);
      next.metadata.deletionTimestamp = nowTime();
      next.metadata.deletionGracePeriodSeconds = 0;
      next.metadata.generation = (cur.metadata.generation ?? 1) + 1;
      const rv = this.store.nextRv();
      next.metadata.resourceVersion = String(rv);
      this.store.put(rt.storageKey, next, rv);
      return { code: 200, body: this.render(rt, next) };
    }
    if (dryRun) return { code: 200, body: rt.returnDeletedObject ? this.render(rt, cur) : this.successStatus(rt, cur) };
    const last = clone(cur);
    const rv = this.store.nextRv();
    last.metadata.resourceVersion = String(rv);
    this.store.remove(rt.storageKey, last, rv);
    this.afterRemove(rt, last, isObj(options) && options.propagationPolicy === 'Orphan');
    return { code: 200, body: rt.returnDeletedObject ? this.render(rt, last) : this.successStatus(rt, last) };
  }

  deleteCollection(rt: ResourceType, ns: string | undefined, q: Parameters<Api['list']>[2], opts: { dryRun?: boolean }): Result {
    const { items } = this.list(rt, ns, { labelSelector: q.labelSelector, fieldSelector: q.fieldSelector });
    const deleted = items.map((o) => this.delete(rt, o.metadata.namespace, o.metadata.name, undefined, opts).body);
    if (rt.returnDeletedObject)
      return { code: 200, body: { apiVersion: gv(rt), kind: rt.listKind, metadata: {}, items: deleted } };
    return { code: 200, body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' } };
  }

  /**
   * The garbage collector's part, done at once instead of moments later: objects whose ownerReferences name
   * the removed owner's uid lose that reference; those left with no owner that still exists are deleted
   * (background propagation, which is also what a foreground deletion ends in), unless the owner was deleted
   * with propagationPolicy Orphan. Owners are namespace-local: a namespaced owner has dependents in its own
   * namespace only. (The real collector also deletes objects created with a reference to a uid that never
   * existed; this fake leaves those alone.)
   */
  private collectDependents(ownerType: ResourceType, owner: any, orphan: boolean): void {
    const uid = owner.metadata.uid;
    if (!uid) return;
    const exists = (ownerUid: string) =>
      this.registry.all().some((t) => this.store.list(t.storageKey).some((o) => o.metadata.uid === ownerUid));
    const seen = new Set<string>();
    for (const t of this.registry.all()) {
      if (seen.has(t.storageKey)) continue;
      seen.add(t.storageKey);
      if (ownerType.namespaced && !t.namespaced) continue;
      const ns = ownerType.namespaced && t.namespaced ? owner.metadata.namespace : undefined;
      for (const dependent of this.store.list(t.storageKey, ns)) {
        const refs: any[] = dependent.metadata.ownerReferences ?? [];
        if (!refs.some((r) => r?.uid === uid)) continue;
        const remaining = refs.filter((r) => r?.uid !== uid);
        try {
          if (!orphan && !remaining.some((r) => exists(r.uid))) {
            this.delete(t, dependent.metadata.namespace, dependent.metadata.name, undefined, {});
          } else {
            const next = clone(dependent);
            next.metadata.ownerReferences = remaining;
            this.update(t, dependent.metadata.namespace, dependent.metadata.name, this.render(t, next), {});
          }
        } catch (e) {
          if (!(e instanceof ApiError)) throw e;
        }
      }
    }
  }

  private successStatus(rt: ResourceType, obj: any): any {
    const details: any = { name: obj.metadata.name, kind: rt.plural, uid: obj.metadata.uid };
    if (rt.group) details.group = rt.group;
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details };
  }

  /** Side effects of an object really going away. */
  private afterRemove(rt: ResourceType, obj: any, orphan = false): void {
    this.collectDependents(rt, obj, orphan);
    if (rt.storageKey === CRD_STORAGE) {
      const types = this.registry.removeCrd(obj.metadata.name);
      const keys = new Set(types.map((t) => t.storageKey));
      for (const k of keys) {
        this.store.drop(k);
        this.onStorageDropped(k);
      }
    }
    if (rt.storageKey === NS_STORAGE) {
      const ns = obj.metadata.name;
      const seen = new Set<string>();
      for (const t of this.registry.all()) {
        if (!t.namespaced || seen.has(t.storageKey)) continue;
        seen.add(t.storageKey);
        for (const o of this.store.list(t.storageKey, ns)) {
          try {
            this.delete(t, ns, o.metadata.name, undefined, {});
          } catch (e) {
            if (!(e instanceof ApiError)) throw e;
          }
        }
      }
    }
  }
}
