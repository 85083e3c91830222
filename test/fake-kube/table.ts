// meta.k8s.io/v1 Table output (what `kubectl get` asks for), from a CRD's additionalPrinterColumns.
import type { ResourceType, PrinterColumn } from './resources.js';

type Token =
  | { t: 'field'; name: string }
  | { t: 'index'; i: number }
  | { t: 'all' }
  | { t: 'filter'; path: string[]; op: '==' | '!='; value: unknown };

/** Parse the simple JSONPath printer columns use: `.a.b`, `.a[0]`, `.a[*].b`, `.a[?(@.type=="Ready")].status`, `['x.y']`. */
export function parseJsonPath(expr: string): Token[] {
  let s = expr.trim();
  if (s.startsWith('{') && s.endsWith('}')) s = s.slice(1, -1);
  if (s.startsWith('$')) s = s.slice(1);
  const out: Token[] = [];
  let i = 0;
  while (i < s.length) {
    if (s[i] === '.') {
      i++;
      let name = '';
      while (i < s.length && s[i] !== '.' && s[i] !== '[') {
        if (s[i] === '\\' && i + 1 < s.length) i++;
        name += s[i++];
      }
      if (name) out.push({ t: 'field', name });
    } else if (s[i] === '[') {
      const end = s.indexOf(']', i);
      if (end < 0) throw new Error(`unclosed [ in ${expr}`);
      let inner = s.slice(i + 1, end);
      // filters may contain ']' inside quotes only rarely; keep it simple
      if (inner.startsWith('?(')) {
        const close = s.indexOf(')]', i);
        inner = s.slice(i + 1, close + 1);
        i = close + 2;
        const m = /^\?\(@((?:\.[A-Za-z0-9_-]+)+)\s*(==|!=)\s*(.+)\)$/.exec(inner);
        if (!m) throw new Error(`unsupported filter ${inner}`);
        let raw = m[3].trim();
        let value: unknown = raw;
        if (/^".*"$|^'.*'$/.test(raw)) value = raw.slice(1, -1);
        else if (raw === 'true' || raw === 'false') value = raw === 'true';
        else if (!Number.isNaN(Number(raw))) value = Number(raw);
        out.push({ t: 'filter', path: m[1].slice(1).split('.'), op: m[2] as '==' | '!=', value });
        continue;
      }
      i = end + 1;
      if (inner === '*') out.push({ t: 'all' });
      else if (/^-?\d+$/.test(inner)) out.push({ t: 'index', i: Number(inner) });
      else if (/^'.*'$|^".*"$/.test(inner)) out.push({ t: 'field', name: inner.slice(1, -1) });
      else throw new Error(`unsupported subscript [${inner}]`);
    } else throw new Error(`unexpected ${s[i]} in ${expr}`);
  }
  return out;
}

export function evalJsonPath(obj: unknown, expr: string): unknown[] {
  let cur: unknown[] = [obj];
  for (const tok of parseJsonPath(expr)) {
    const next: unknown[] = [];
    for (const v of cur) {
      if (v === null || v === undefined) continue;
      switch (tok.t) {
        case 'field':
          if (typeof v === 'object' && !Array.isArray(v) && tok.name in (v as object)) next.push((v as any)[tok.name]);
          break;
        case 'index':
          if (Array.isArray(v)) {
            const i = tok.i < 0 ? v.length + tok.i : tok.i;
            if (i >= 0 && i < v.length) next.push(v[i]);
          }
          break;
        case 'all':
          if (Array.isArray(v)) next.push(...v);
          else if (typeof v === 'object') next.push(...Object.values(v as object));
          break;
        case 'filter':
          if (Array.isArray(v))
            for (const e of v) {
              let x: any = e;
              for (const p of tok.path) x = x?.[p];
              if ((x === tok.value) === (tok.op === '==')) next.push(e);
            }
          break;
      }
    }
    cur = next;
  }
  return cur;
}

/** duration.HumanDuration of apimachinery. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.floor(hours / 24) % 365;
    return dy === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${dy}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

const NAME_DESCRIPTION =
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names';
const AGE_DESCRIPTION =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata';

const AGE_COLUMN: PrinterColumn = {
  name: 'Age',
  type: 'date',
  jsonPath: '.metadata.creationTimestamp',
  description: AGE_DESCRIPTION,
};

function columnsOf(rt: ResourceType): PrinterColumn[] {
  return rt.printerColumns && rt.printerColumns.length ? rt.printerColumns : [AGE_COLUMN];
}

function cell(col: PrinterColumn, obj: unknown): unknown {
  let results: unknown[];
  try {
    results = evalJsonPath(obj, col.jsonPath);
  } catch {
    return null;
  }
  if (!results.length || results[0] === undefined) return null;
  const v = results[0];
  switch (col.type) {
    case 'date': {
      const t = Date.parse(String(v));
      return Number.isNaN(t) ? '<unknown>' : humanDuration(Date.now() - t);
    }
    case 'integer':
      return typeof v === 'number' ? Math.trunc(v) : null;
    case 'number':
      return typeof v === 'number' ? v : null;
    case 'boolean':
      return typeof v === 'boolean' ? v : null;
    default:
      if (v === null) return null;
      return typeof v === 'object' ? JSON.stringify(v) : String(v);
  }
}

export function tableColumns(rt: ResourceType): any[] {
  return [
    { name: 'Name', type: 'string', format: 'name', description: NAME_DESCRIPTION, priority: 0 },
    ...columnsOf(rt).map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? '',
      description: c.description ?? '',
      priority: c.priority ?? 0,
    })),
  ];
}

export function tableRow(rt: ResourceType, obj: any, includeObject: string): any {
  const row: any = { cells: [obj.metadata?.name ?? '', ...columnsOf(rt).map((c) => cell(c, obj))] };
  if (includeObject === 'Object') row.object = obj;
  else if (includeObject !== 'None')
    row.object = { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata };
  return row;
}

export function toTable(
  rt: ResourceType,
  objs: any[],
  listMeta: Record<string, unknown>,
  includeObject = 'Metadata',
  withColumns = true,
): any {
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMeta,
    columnDefinitions: withColumns ? tableColumns(rt) : [],
    rows: objs.map((o) => tableRow(rt, o, includeObject)),
  };
}

/** The Accept header asks for a Table (`application/json;as=Table;v=v1;g=meta.k8s.io`). */
export const wantsTable = (accept: string | undefined): boolean =>
  !!accept && /as=Table/.test(accept) && /g=meta\.k8s\.io/.test(accept);
