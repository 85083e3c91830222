// Patch formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902), a strategic merge patch good enough
// for what kubectl sends for built-in kinds, and a simplified server-side apply merge.
import { unprocessable, badRequest } from './errors.js';

const isObj = (v: unknown): v is Record<string, any> => v !== null && typeof v === 'object' && !Array.isArray(v);
const clone = <T>(v: T): T => (v === undefined ? v : structuredClone(v));

// ---------------------------------------------------------------------------------------------
// RFC 7386

export function mergePatch(target: any, patch: any): any {
  if (!isObj(patch)) return clone(patch);
  const out: Record<string, any> = isObj(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// RFC 6902 (error texts as gopkg.in/evanphx/json-patch.v4 words them; the API server answers 422)

interface Op {
  op: string;
  path?: string;
  from?: string;
  value?: unknown;
}

function parsePointer(p: string): string[] {
  if (p === '') return [];
  if (!p.startsWith('/')) throw unprocessable(`invalid JSON pointer: ${JSON.stringify(p)}`);
  return p
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parent(doc: any, segs: string[]): { con: any; key: string } | undefined {
  let cur = doc;
  for (const s of segs.slice(0, -1)) {
    if (Array.isArray(cur)) {
      const i = Number(s);
      if (!/^\d+$/.test(s) || i >= cur.length) return undefined;
      cur = cur[i];
    } else if (isObj(cur)) {
      if (!(s in cur)) return undefined;
      cur = cur[s];
    } else return undefined;
  }
  if (!Array.isArray(cur) && !isObj(cur)) return undefined;
  return { con: cur, key: segs[segs.length - 1] };
}

function getAt(doc: any, segs: string[]): { ok: boolean; value?: unknown } {
  if (!segs.length) return { ok: true, value: doc };
  const p = parent(doc, segs);
  if (!p) return { ok: false };
  if (Array.isArray(p.con)) {
    const i = Number(p.key);
    if (!/^\d+$/.test(p.key) || i >= p.con.length) return { ok: false };
    return { ok: true, value: p.con[i] };
  }
  if (!(p.key in p.con)) return { ok: false };
  return { ok: true, value: p.con[p.key] };
}

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((x, i) => jsonEqual(x, (b as unknown[])[i]));
  const ka = Object.keys(a as object);
  const kb = Object.keys(b as object);
  return ka.length === kb.length && ka.every((k) => jsonEqual((a as any)[k], (b as any)[k]));
}

export function jsonPatch(doc: any, ops: unknown): any {
  if (!Array.isArray(ops)) throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  let root = clone(doc);
  const add = (segs: string[], value: unknown, path: string) => {
    if (!segs.length) {
      root = clone(value);
      return;
    }
    const p = parent(root, segs);
    if (!p) throw unprocessable(`add operation does not apply: doc is missing path: ${JSON.stringify(path)}: missing value`);
    if (Array.isArray(p.con)) {
      const i = p.key === '-' ? p.con.length : Number(p.key);
      if (!(p.key === '-' || /^\d+$/.test(p.key)) || i > p.con.length)
        throw unprocessable(`Unable to access invalid index: ${p.key}: invalid index referenced`);
      p.con.splice(i, 0, clone(value));
    } else p.con[p.key] = clone(value);
  };
  const remove = (segs: string[], path: string, opName = 'remove') => {
    const p = segs.length ? parent(root, segs) : undefined;
    const missing = () =>
      unprocessable(`${opName} operation does not apply: doc is missing path: ${JSON.stringify(path)}: missing value`);
    if (!p) throw missing();
    if (Array.isArray(p.con)) {
      const i = Number(p.key);
      if (!/^\d+$/.test(p.key) || i >= p.con.length) throw missing();
      return p.con.splice(i, 1)[0];
    }
    if (!(p.key in p.con)) throw missing();
    const v = p.con[p.key];
    delete p.con[p.key];
    return v;
  };
  for (const raw of ops as Op[]) {
    if (!isObj(raw)) throw badRequest('invalid JSON patch operation');
    const path = raw.path ?? '';
    const segs = parsePointer(path);
    switch (raw.op) {
      case 'add':
        add(segs, raw.value, path);
        break;
      case 'remove':
        remove(segs, path);
        break;
      case 'replace': {
        const cur = getAt(root, segs);
        if (!cur.ok)
          throw unprocessable(`replace operation does not apply: doc is missing key: ${path}: missing value`);
        if (!segs.length) root = clone(raw.value);
        else {
          const p = parent(root, segs)!;
          if (Array.isArray(p.con)) p.con[Number(p.key)] = clone(raw.value);
          else p.con[p.key] = clone(raw.value);
        }
        break;
      }
      case 'move': {
        const from = raw.from ?? '';
        const v = remove(parsePointer(from), from, 'move');
        add(segs, v, path);
        break;
      }
      case 'copy': {
        const from = raw.from ?? '';
        const v = getAt(root, parsePointer(from));
        if (!v.ok) throw unprocessable(`copy operation does not apply: doc is missing from path: ${from}: missing value`);
        add(segs, v.value, path);
        break;
      }
      case 'test': {
        const v = getAt(root, segs);
        if (!v.ok || !jsonEqual(v.value ?? null, raw.value ?? null))
          throw unprocessable(`testing value ${path} failed: test failed`);
        break;
      }
      default:
        throw unprocessable(`Unexpected kind: ${String(raw.op)}`);
    }
  }
  return root;
}

// ---------------------------------------------------------------------------------------------
// Strategic merge patch (built-in kinds only). Without the Go types' patch metadata, lists of objects are
// merged by a well-known merge key when the field is one of the usual ones, every other list is replaced.

const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  env: 'name',
  volumes: 'name',
  imagePullSecrets: 'name',
  ports: 'containerPort',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  conditions: 'type',
  hostAliases: 'ip',
  ownerReferences: 'uid',
  tolerations: 'key',
};

function mergeList(field: string, target: unknown, patch: unknown[], strategic: boolean): unknown[] {
  const key = MERGE_KEYS[field];
  if (!key || !Array.isArray(target) || !patch.every((e) => isObj(e) && (key in e || e.$patch === 'delete'))) {
    return patch.filter((e) => !(isObj(e) && e.$patch === 'delete')).map((e) => (isObj(e) ? strip(e) : clone(e)));
  }
  const out: any[] = target.map((e) => clone(e));
  for (const pe of patch as Record<string, any>[]) {
    const idx = out.findIndex((e) => isObj(e) && e[key] === pe[key]);
    if (pe.$patch === 'delete') {
      if (idx >= 0) out.splice(idx, 1);
    } else if (idx >= 0) out[idx] = strategic ? strategicMerge(out[idx], pe) : applyMerge(out[idx], pe);
    else out.push(strip(pe));
  }
  return out;
}

/** Remove every `$...` directive from a value that is stored as is. */
function strip(v: any): any {
  if (Array.isArray(v)) return v.map(strip);
  if (!isObj(v)) return v;
  const out: Record<string, any> = {};
  for (const [k, x] of Object.entries(v)) if (!k.startsWith('$')) out[k] = strip(x);
  return out;
}

export function strategicMerge(target: any, patch: any): any {
  if (!isObj(patch)) return clone(patch);
  if (patch.$patch === 'delete') return undefined;
  if (patch.$patch === 'replace') return strip(patch);
  let out: Record<string, any> = isObj(target) ? { ...target } : {};
  if (Array.isArray(patch.$retainKeys)) {
    const keep = new Set<string>(patch.$retainKeys);
    out = Object.fromEntries(Object.entries(out).filter(([k]) => keep.has(k)));
  }
  const orders: Record<string, unknown[]> = {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$setElementOrder/')) {
      orders[k.slice('$setElementOrder/'.length)] = v as unknown[];
      continue;
    }
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const f = k.slice('$deleteFromPrimitiveList/'.length);
      if (Array.isArray(out[f])) out[f] = out[f].filter((x: unknown) => !(v as unknown[]).includes(x));
      continue;
    }
    if (k.startsWith('$')) continue;
    if (v === null) delete out[k];
    else if (Array.isArray(v)) out[k] = mergeList(k, out[k], v, true);
    else if (isObj(v)) {
      const merged = strategicMerge(out[k], v);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else out[k] = v;
  }
  for (const [f, order] of Object.entries(orders)) {
    const key = MERGE_KEYS[f];
    if (!Array.isArray(out[f]) || !Array.isArray(order)) continue;
    const list = out[f] as any[];
    const pos = (e: any) => {
      const i = order.findIndex((o) => (key && isObj(o) && isObj(e) ? o[key] === e[key] : jsonEqual(o, e)));
      return i < 0 ? order.length : i;
    };
    out[f] = [...list].sort((a, b) => pos(a) - pos(b));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Server-side apply, simplified: the applied configuration is merged into the live object (maps merged,
// lists with a well-known merge key merged by key, other lists replaced). Fields a manager stops applying
// are not removed (no managedFields tracking).

export function applyMerge(live: any, applied: any): any {
  if (!isObj(applied)) return clone(applied);
  const out: Record<string, any> = isObj(live) ? { ...live } : {};
  for (const [k, v] of Object.entries(applied)) {
    if (v === null) delete out[k];
    else if (Array.isArray(v)) out[k] = mergeList(k, out[k], v, false);
    else if (isObj(v)) out[k] = applyMerge(out[k], v);
    else out[k] = v;
  }
  return out;
}
