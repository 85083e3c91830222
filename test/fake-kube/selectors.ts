// Label and field selectors (k8s.io/apimachinery/pkg/labels and pkg/fields syntax).
import { badRequest } from './errors.js';

type LabelReq =
  | { key: string; op: 'eq' | 'neq'; value: string }
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | 'notexists' };

export type Matcher = (obj: any) => boolean;

function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  return parts.map((p) => p.trim()).filter((p) => p.length > 0);
}

function parseLabelRequirement(part: string): LabelReq {
  let m = /^!\s*([A-Za-z0-9._/-]+)$/.exec(part);
  if (m) return { key: m[1], op: 'notexists' };
  m = /^([A-Za-z0-9._/-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(part);
  if (m) {
    const values = m[3]
      .split(',')
      .map((v) => v.trim())
      .filter((v, i, all) => v.length > 0 || all.length === 1);
    return { key: m[1], op: m[2] as 'in' | 'notin', values };
  }
  m = /^([A-Za-z0-9._/-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)$/.exec(part);
  if (m) return { key: m[1], op: m[2] === '!=' ? 'neq' : 'eq', value: m[3] };
  m = /^([A-Za-z0-9._/-]+)$/.exec(part);
  if (m) return { key: m[1], op: 'exists' };
  throw badRequest(`unable to parse requirement: found '${part}', expected: in, notin, =, ==, !=, gt, lt`);
}

export function parseLabelSelector(selector: string | null | undefined): Matcher {
  if (!selector || !selector.trim()) return () => true;
  const reqs = splitTopLevel(selector).map(parseLabelRequirement);
  return (obj) => {
    const labels: Record<string, string> = obj?.metadata?.labels ?? {};
    return reqs.every((r) => {
      const has = Object.prototype.hasOwnProperty.call(labels, r.key);
      const v = labels[r.key];
      switch (r.op) {
        case 'eq':
          return has && v === r.value;
        case 'neq':
          return !has || v !== r.value;
        case 'in':
          return has && r.values.includes(v);
        case 'notin':
          return !has || !r.values.includes(v);
        case 'exists':
          return has;
        case 'notexists':
          return !has;
      }
    });
  };
}

/** Value of a dotted field path (`metadata.name`, `spec.topic`, `involvedObject.kind`) as the field selector sees it. */
function fieldValue(obj: any, path: string): string {
  let cur = obj;
  for (const p of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return '';
    cur = cur[p];
  }
  if (cur === undefined || cur === null) return '';
  return typeof cur === 'object' ? JSON.stringify(cur) : String(cur);
}

/**
 * Parse a field selector. `allowed` lists the fields the resource supports (the real server refuses
 * others with 400); `metadata.name` and `metadata.namespace` are always allowed.
 */
export function parseFieldSelector(selector: string | null | undefined, allowed: string[] = []): Matcher {
  if (!selector || !selector.trim()) return () => true;
  const supported = ['metadata.name', 'metadata.namespace', ...allowed];
  const reqs = splitTopLevel(selector).map((part) => {
    const m = /^([^=!]+?)\s*(==|=|!=)\s*(.*)$/.exec(part);
    if (!m) throw badRequest(`invalid selector: '${selector}'; can't understand '${part}'`);
    const field = m[1].trim();
    if (!supported.includes(field))
      throw badRequest(
        `${JSON.stringify(field)} is not a known field selector: only ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
      );
    return { field, neq: m[2] === '!=', value: m[3].trim() };
  });
  return (obj) =>
    reqs.every((r) => {
      const v = fieldValue(obj, r.field);
      return r.neq ? v !== r.value : v === r.value;
    });
}
