// Custom resource schema handling as the apiextensions-apiserver does it, for one CRD version:
// pruning of unknown fields, structural defaulting, OpenAPI v3 validation (ajv, errors mapped to the
// kube-openapi / field.Error messages), x-kubernetes-validations (CEL), validation ratcheting on update.
import _Ajv from 'ajv';
import _addFormats from 'ajv-formats';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { compileRule, celErrorText, type CompiledRule } from './cel.js';
import {
  fieldForbidden,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  fieldTooLong,
  fieldTooMany,
  fieldTypeInvalid,
  formatFieldError,
  type FieldError,
  type FieldErrorType,
} from './errors.js';

// ajv and ajv-formats are CommonJS: under NodeNext the default import is module.exports, whose `default`
// property is the real export.
const Ajv = ((_Ajv as any).default ?? _Ajv) as typeof _Ajv.default;
const addFormats = ((_addFormats as any).default ?? _addFormats) as typeof _addFormats.default;

export type Schema = Record<string, any>;

/** Fields of metav1.ObjectMeta; anything else under metadata is dropped (and is an unknown field). */
export const OBJECT_META_FIELDS = new Set([
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);

export const clone = <T>(v: T): T => (v === undefined ? v : structuredClone(v));

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => deepEqual(v, bb[i]));
  }
  const ka = Object.keys(a as object).filter((k) => (a as any)[k] !== undefined);
  const kb = Object.keys(b as object).filter((k) => (b as any)[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => deepEqual((a as any)[k], (b as any)[k]));
}

const isObj = (v: unknown): v is Record<string, any> => v !== null && typeof v === 'object' && !Array.isArray(v);
const child = (path: string, key: string) => (path ? `${path}.${key}` : key);
const index = (path: string, i: number) => `${path}[${i}]`;

// ---------------------------------------------------------------------------------------------
// Pruning

/**
 * Remove fields the schema does not know (x-kubernetes-preserve-unknown-fields keeps them), in place.
 * The paths of removed fields are pushed to `unknown` (they are what strict field validation reports).
 */
export function prune(value: any, schema: Schema | undefined, path: string, unknown: string[], root = false): void {
  if (!schema) return;
  if (Array.isArray(value)) {
    if (schema.items) value.forEach((v, i) => prune(v, schema.items, index(path, i), unknown));
    return;
  }
  if (!isObj(value)) return;
  const embedded = root || schema['x-kubernetes-embedded-resource'] === true;
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;
  const props: Record<string, Schema> | undefined = schema.properties;
  const addl = isObj(schema.additionalProperties) ? (schema.additionalProperties as Schema) : undefined;
  for (const key of Object.keys(value)) {
    if (embedded && (key === 'apiVersion' || key === 'kind')) continue;
    if (embedded && key === 'metadata') {
      if (isObj(value.metadata)) {
        for (const mk of Object.keys(value.metadata))
          if (!OBJECT_META_FIELDS.has(mk)) {
            delete value.metadata[mk];
            unknown.push(child(child(path, 'metadata'), mk));
          }
      }
      continue;
    }
    if (props && key in props) prune(value[key], props[key], child(path, key), unknown);
    else if (addl) prune(value[key], addl, child(path, key), unknown);
    else if (preserve || schema.additionalProperties === true) continue;
    else {
      delete value[key];
      unknown.push(child(path, key));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Defaulting

/** Structural defaulting, in place: nulls of non-nullable fields are dropped, then absent fields get their default. */
export function applyDefaults(value: any, schema: Schema | undefined): void {
  if (!schema) return;
  if (Array.isArray(value)) {
    if (schema.items) for (const v of value) applyDefaults(v, schema.items);
    return;
  }
  if (!isObj(value)) return;
  const props: Record<string, Schema> | undefined = schema.properties;
  if (props) {
    for (const [key, ps] of Object.entries(props)) {
      if (value[key] === null && !ps.nullable) delete value[key];
      if (value[key] === undefined && ps.default !== undefined) value[key] = clone(ps.default);
      if (value[key] !== undefined) applyDefaults(value[key], ps);
    }
  }
  if (isObj(schema.additionalProperties)) {
    for (const key of Object.keys(value)) {
      if (props && key in props) continue;
      if (value[key] === null && !schema.additionalProperties.nullable) delete value[key];
      else applyDefaults(value[key], schema.additionalProperties);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// OpenAPI validation with ajv

let ajvInstance: InstanceType<typeof Ajv> | undefined;
function ajv(): InstanceType<typeof Ajv> {
  if (ajvInstance) return ajvInstance;
  const a = new Ajv({ allErrors: true, strict: false, verbose: true, validateFormats: true, allowUnionTypes: true });
  addFormats(a);
  // Formats as kube-openapi's strfmt registry knows them (Go durations, lenient URIs, ...).
  a.addFormat('duration', /^[-+]?(0|(\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))([-+]?(\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))*$/);
  a.addFormat('uri', (s: string) => {
    try {
      new URL(s, 'http://relative.invalid/');
      return true;
    } catch {
      return false;
    }
  });
  a.addFormat('datetime', a.formats['date-time'] as any);
  a.addFormat('cidr', /^(\d{1,3}(\.\d{1,3}){3}\/\d{1,2}|[0-9a-fA-F:]+\/\d{1,3})$/);
  a.addFormat('mac', /^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$/);
  a.addFormat('uuid3', /^[0-9a-f]{8}-[0-9a-f]{4}-3[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
  a.addFormat('uuid4', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i);
  a.addFormat('uuid5', /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i);
  a.addFormat('hexcolor', /^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/);
  a.addFormat('bsonobjectid', /^[0-9a-fA-F]{24}$/);
  for (const f of ['isbn', 'isbn10', 'isbn13', 'creditcard', 'ssn', 'rgbcolor', 'int-or-string', 'quantity'])
    a.addFormat(f, true);
  ajvInstance = a;
  return a;
}

/** Kubernetes structural schema -> JSON schema that ajv understands. */
function toAjvSchema(s: Schema): Schema {
  if (!isObj(s)) return {};
  let out: Schema = {};
  if (s['x-kubernetes-int-or-string']) out.type = ['integer', 'string'];
  else if (s.type) out.type = s.type;
  for (const k of [
    'required',
    'enum',
    'minLength',
    'maxLength',
    'pattern',
    'minItems',
    'maxItems',
    'uniqueItems',
    'multipleOf',
    'minProperties',
    'maxProperties',
    'format',
  ])
    if (s[k] !== undefined) out[k] = s[k];
  if (s.minimum !== undefined) {
    if (s.exclusiveMinimum === true) out.exclusiveMinimum = s.minimum;
    else out.minimum = s.minimum;
  }
  if (s.maximum !== undefined) {
    if (s.exclusiveMaximum === true) out.exclusiveMaximum = s.maximum;
    else out.maximum = s.maximum;
  }
  if (isObj(s.properties))
    out.properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, toAjvSchema(v as Schema)]));
  if (isObj(s.additionalProperties)) out.additionalProperties = toAjvSchema(s.additionalProperties);
  if (isObj(s.items)) out.items = toAjvSchema(s.items);
  for (const k of ['allOf', 'anyOf', 'oneOf'])
    if (Array.isArray(s[k])) out[k] = (s[k] as Schema[]).map((x) => toAjvSchema(x));
  if (isObj(s.not)) out.not = toAjvSchema(s.not);
  // kube-openapi skips every other check for a null value when the schema is nullable.
  if (s.nullable) out = { if: { type: 'null' }, then: true, else: out };
  return out;
}

function pointerSegments(pointer: string): string[] {
  if (!pointer) return [];
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** JSON pointer -> Kubernetes field path (`spec.items[0].name`), following `data` to tell arrays from maps. */
function pointerToPath(data: unknown, segments: string[]): string {
  let path = '';
  let cur: any = data;
  for (const seg of segments) {
    if (Array.isArray(cur)) path = index(path, Number(seg));
    else path = child(path, seg);
    cur = cur?.[seg];
  }
  return path;
}

function lookup(data: unknown, segments: string[]): { found: boolean; value: unknown } {
  let cur: any = data;
  for (const seg of segments) {
    if (cur === null || typeof cur !== 'object' || !(seg in cur)) return { found: false, value: undefined };
    cur = cur[seg];
  }
  return { found: true, value: cur };
}

/** go-openapi's name for the JSON type of a value. */
function swaggerType(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'string') return 'string';
  return 'object';
}

const goNumber = (n: unknown) => String(n);

interface MappedError {
  err: FieldError;
  segments: string[];
}

function mapAjvError(e: ErrorObject, data: unknown): MappedError | undefined {
  const segs = pointerSegments(e.instancePath);
  const path = pointerToPath(data, segs);
  const value = e.data;
  const p = e.params as Record<string, any>;
  const ps = (e.parentSchema ?? {}) as Schema;
  switch (e.keyword) {
    case 'required': {
      const s = [...segs, p.missingProperty as string];
      return { err: fieldRequired(child(path, p.missingProperty)), segments: s };
    }
    case 'type': {
      const expected = Array.isArray(ps.type) ? ps.type.filter((t: string) => t !== 'null').join(',') : ps.type;
      const actual = swaggerType(value);
      return {
        err: fieldTypeInvalid(path, actual, `${path} in body must be of type ${expected}: ${JSON.stringify(actual)}`),
        segments: segs,
      };
    }
    case 'enum': {
      const values = (p.allowedValues as unknown[]).map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
      return { err: fieldNotSupported(path, value, values), segments: segs };
    }
    case 'minimum':
      return { err: fieldInvalid(path, value, `${path} in body should be greater than or equal to ${goNumber(p.limit)}`), segments: segs };
    case 'exclusiveMinimum':
      return { err: fieldInvalid(path, value, `${path} in body should be greater than ${goNumber(p.limit)}`), segments: segs };
    case 'maximum':
      return { err: fieldInvalid(path, value, `${path} in body should be less than or equal to ${goNumber(p.limit)}`), segments: segs };
    case 'exclusiveMaximum':
      return { err: fieldInvalid(path, value, `${path} in body should be less than ${goNumber(p.limit)}`), segments: segs };
    case 'multipleOf':
      return { err: fieldInvalid(path, value, `${path} in body should be a multiple of ${goNumber(p.multipleOf)}`), segments: segs };
    case 'minLength':
      return { err: fieldInvalid(path, value, `${path} in body should be at least ${p.limit} chars long`), segments: segs };
    case 'maxLength':
      return { err: fieldTooLong(path, value, p.limit), segments: segs };
    case 'pattern':
      return { err: fieldInvalid(path, value, `${path} in body should match '${p.pattern}'`), segments: segs };
    case 'format':
      return {
        err: fieldTypeInvalid(path, value, `${path} in body must be of type ${p.format}: ${JSON.stringify(value)}`),
        segments: segs,
      };
    case 'minItems':
      return {
        err: fieldInvalid(path, Array.isArray(value) ? value.length : '', `${path} in body should have at least ${p.limit} items`),
        segments: segs,
      };
    case 'maxItems':
      return { err: fieldTooMany(path, Array.isArray(value) ? value.length : -1, p.limit), segments: segs };
    case 'uniqueItems':
      return { err: fieldInvalid(path, '', `${path} in body shouldn't contain duplicates`), segments: segs };
    case 'minProperties':
      return {
        err: fieldInvalid(path, isObj(value) ? Object.keys(value).length : '', `${path} in body should have at least ${p.limit} properties`),
        segments: segs,
      };
    case 'maxProperties':
      return { err: fieldTooMany(path, isObj(value) ? Object.keys(value).length : -1, p.limit), segments: segs };
    case 'anyOf':
      return { err: fieldInvalid(path, '', `${path} in body must validate at least one schema (anyOf)`), segments: segs };
    case 'oneOf':
      return { err: fieldInvalid(path, '', `${path} in body must validate one and only one schema (oneOf)`), segments: segs };
    case 'not':
      return { err: fieldInvalid(path, '', `${path} in body shouldn't validate the schema (not)`), segments: segs };
    case 'if':
    case 'allOf':
      return undefined; // wrappers; the real error is reported by the inner keyword
    default:
      return { err: fieldInvalid(path, value ?? '', `${path} ${e.message ?? 'is invalid'}`), segments: segs };
  }
}

// ---------------------------------------------------------------------------------------------
// CEL

const typeOfSchema = (s: Schema): string => (s['x-kubernetes-int-or-string'] ? '' : (s.type ?? ''));

/** JSON value -> CEL value, typed by the schema (integers become int (bigint), date-time strings timestamps). */
function toCel(v: unknown, s: Schema | undefined): unknown {
  if (v === null || v === undefined) return v;
  if (s && (s.type === 'integer' || s['x-kubernetes-int-or-string'])) {
    return typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : v;
  }
  if (s && s.type === 'number') return v;
  if (s && s.type === 'string') {
    if ((s.format === 'date-time' || s.format === 'datetime') && typeof v === 'string') {
      const d = new Date(v);
      return Number.isNaN(d.getTime()) ? v : d;
    }
    return v;
  }
  if (Array.isArray(v)) return v.map((x) => toCel(x, s?.items));
  if (isObj(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const ps = s?.properties?.[k] ?? (isObj(s?.additionalProperties) ? s!.additionalProperties : undefined);
      if (s && s.properties && !ps && !s['x-kubernetes-preserve-unknown-fields']) continue;
      out[k] = toCel(x, ps);
    }
    return out;
  }
  if (typeof v === 'number' && !s) return Number.isInteger(v) ? BigInt(v) : v;
  return v;
}

function relativeFieldPath(base: string, fieldPath: string): string {
  // fieldPath is a JSONPath relative to self: `.spec.x`, `.x['y.z']`, `.list[0]`
  let out = base;
  const re = /\.([A-Za-z0-9_$-]+)|\['([^']*)'\]|\[(\d+)\]/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(fieldPath))) {
    if (m[1] !== undefined) out = child(out, m[1]);
    else if (m[2] !== undefined) out = child(out, m[2]);
    else out = index(out, Number(m[3]));
  }
  return out;
}

function ruleErrorString(r: CompiledRule): string {
  return (r.message && r.message.trim()) || r.rule.trim();
}

function celFieldError(path: string, s: Schema, r: CompiledRule, detail: string): FieldError {
  const field = r.fieldPath ? relativeFieldPath(path, r.fieldPath) : path || '<nil>';
  const type = typeOfSchema(s);
  switch (r.reason as FieldErrorType | undefined) {
    case 'FieldValueForbidden':
      return fieldForbidden(field, detail);
    case 'FieldValueRequired':
      return fieldRequired(field, detail);
    case 'FieldValueDuplicate':
      return { type: 'FieldValueDuplicate', field, value: type, detail };
    default:
      return fieldInvalid(field, type, detail);
  }
}

// ---------------------------------------------------------------------------------------------
// Compiled schema

export interface CompiledSchema {
  readonly schema: Schema;
  /** Prune unknown fields in place; returns the pruned paths. */
  prune(obj: any): string[];
  applyDefaults(obj: any): void;
  /** Schema (ajv) + CEL validation of the whole object; `old` for updates (transition rules, ratcheting). */
  validate(obj: any, old?: any): FieldError[];
}

/** Errors of the schema itself (CEL rules that do not compile, a schema ajv cannot compile). */
export class SchemaCompileError extends Error {
  constructor(readonly errors: FieldError[]) {
    super(errors.map(formatFieldError).join(', '));
  }
}

const BLOCKING: FieldErrorType[] = [
  'FieldValueNotSupported',
  'FieldValueRequired',
  'FieldValueTooLong',
  'FieldValueTooMany',
  'FieldValueTypeInvalid',
];

/**
 * Compile the `openAPIV3Schema` of a CRD version. `schemaPath` is the field path of that schema in the CRD
 * (for compile errors), e.g. `spec.versions[0].schema.openAPIV3Schema`.
 */
export function compileSchema(schema: Schema, schemaPath = 'openAPIV3Schema'): CompiledSchema {
  const rules = new WeakMap<Schema, CompiledRule[]>();
  const compileErrors: FieldError[] = [];
  const walk = (s: Schema, p: string) => {
    if (!isObj(s)) return;
    const xv = s['x-kubernetes-validations'];
    if (Array.isArray(xv)) {
      const compiled: CompiledRule[] = [];
      xv.forEach((r: any, i: number) => {
        try {
          compiled.push(compileRule(r));
        } catch (e) {
          compileErrors.push(
            fieldInvalid(`${p}.x-kubernetes-validations[${i}].rule`, r?.rule ?? '', (e as Error).message),
          );
        }
      });
      rules.set(s, compiled);
    }
    if (isObj(s.properties)) for (const [k, v] of Object.entries(s.properties)) walk(v as Schema, `${p}.properties[${k}]`);
    if (isObj(s.additionalProperties)) walk(s.additionalProperties, `${p}.additionalProperties`);
    if (isObj(s.items)) walk(s.items, `${p}.items`);
  };
  walk(schema, schemaPath);

  let validateFn: ValidateFunction;
  try {
    validateFn = ajv().compile(toAjvSchema(schema));
  } catch (e) {
    compileErrors.push(fieldInvalid(schemaPath, '', (e as Error).message));
  }
  if (compileErrors.length) throw new SchemaCompileError(compileErrors);

  const celValidate = (
    value: unknown,
    s: Schema,
    path: string,
    old: unknown,
    hasOld: boolean,
    out: FieldError[],
  ) => {
    if (value === undefined || value === null || !isObj(s)) return;
    const rs = rules.get(s);
    if (rs && rs.length) {
      const self = toCel(value, s);
      const oldSelf = hasOld ? toCel(old, s) : undefined;
      const unchanged = hasOld && deepEqual(value, old);
      for (const r of rs) {
        if (r.usesOldSelf && !hasOld) continue;
        if (!r.usesOldSelf && unchanged) continue; // ratcheting: unchanged values are not re-validated
        const vars = r.usesOldSelf ? { self, oldSelf } : { self };
        let result: unknown;
        try {
          result = r.evaluate(vars);
        } catch (e) {
          out.push(celFieldError(path, s, { ...r, fieldPath: undefined, reason: undefined }, `${celErrorText(e)} evaluating rule: ${ruleErrorString(r)}`));
          continue;
        }
        if (result === true) continue;
        let msg = r.message?.trim() ? r.message.trim() : `failed rule: ${ruleErrorString(r)}`;
        if (r.evaluateMessage) {
          try {
            const m = r.evaluateMessage(vars);
            if (typeof m === 'string' && m.trim() && !m.includes('\n')) msg = m.trim();
          } catch {
            /* fall back to message */
          }
        }
        out.push(celFieldError(path, s, r, msg));
      }
    }
    if (Array.isArray(value)) {
      if (!isObj(s.items)) return;
      const listType = s['x-kubernetes-list-type'];
      const keys: string[] = s['x-kubernetes-list-map-keys'] ?? [];
      value.forEach((item, i) => {
        let o: unknown;
        let found = false;
        if (hasOld && Array.isArray(old)) {
          if (listType === 'map' && keys.length && isObj(item)) {
            o = old.find((x) => isObj(x) && keys.every((k) => deepEqual(x[k], item[k])));
            found = o !== undefined;
          } else if (listType === 'set') {
            found = old.some((x) => deepEqual(x, item));
            o = item;
          }
        }
        celValidate(item, s.items, index(path, i), o, found, out);
      });
      return;
    }
    if (isObj(value)) {
      const props: Record<string, Schema> = isObj(s.properties) ? s.properties : {};
      for (const [k, v] of Object.entries(value)) {
        if (!path && (k === 'metadata' || k === 'apiVersion' || k === 'kind')) continue;
        const ps = props[k] ?? (isObj(s.additionalProperties) ? s.additionalProperties : undefined);
        if (!ps) continue;
        const oldHas = hasOld && isObj(old) && k in old;
        celValidate(v, ps, child(path, k), oldHas ? (old as any)[k] : undefined, oldHas, out);
      }
    }
  };

  return {
    schema,
    prune(obj) {
      const unknown: string[] = [];
      prune(obj, schema, '', unknown, true);
      return unknown;
    },
    applyDefaults(obj) {
      applyDefaults(obj, schema);
    },
    validate(obj, old) {
      // ajv must not see metadata it has no schema for beyond name/generateName
      const subject = { ...obj };
      validateFn(subject);
      const errs: FieldError[] = [];
      for (const e of validateFn.errors ?? []) {
        const m = mapAjvError(e, subject);
        if (!m) continue;
        if (old !== undefined) {
          // validation ratcheting (CRDValidationRatcheting, on by default since 1.30): errors on values
          // that the update did not change are dropped.
          const segs = m.err.type === 'FieldValueRequired' ? m.segments.slice(0, -1) : m.segments;
          const a = lookup(subject, segs);
          const b = lookup(old, segs);
          if (a.found && b.found && deepEqual(a.value, b.value) && m.err.type !== 'FieldValueRequired') continue;
          if (m.err.type === 'FieldValueRequired' && !lookup(old, m.segments).found && b.found && deepEqual(a.value, b.value))
            continue;
        }
        errs.push(m.err);
      }
      if (errs.some((e) => BLOCKING.includes(e.type))) {
        errs.push(
          fieldInvalid(
            '<nil>',
            null,
            'some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
          ),
        );
        return errs;
      }
      celValidate(obj, schema, '', old, old !== undefined, errs);
      return errs;
    },
  };
}
