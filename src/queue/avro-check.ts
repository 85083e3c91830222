import avro from 'avsc';

/** Where and how a JSON value does not fit an Avro type. */
export interface Misfit {
  /** Field names and array indexes from the payload's root to the offending value; empty for the root. */
  path: string[];
  kind: 'undeclared' | 'missing' | 'wrong type';
  /** What the type wanted there (for 'wrong type'). */
  expected?: string;
}

const FLOAT_MAX = 3.4028234663852886e38;
const INT_MIN = -(2 ** 31);
const INT_MAX = 2 ** 31 - 1;

/**
 * Checks a parsed JSON value against a compiled type, field by field in the payload's own order, and returns
 * the first misfit. Written here rather than left to avsc's isValid, which looks names up in plain objects:
 * there a field, enum symbol or union branch named `constructor` or `toString` was found on every object's
 * prototype (undeclared fields and unknown symbols accepted, a wrapped union thrown into a TypeError), an array
 * passed as a record and `["A"]` as the enum symbol "A".
 *
 * The rules (docs/http-api.md, Messaging rules, Schemas): records are JSON objects with no undeclared field (a missing field is
 * allowed only when it has a default), unions take a value of any branch as it is (`["null","string"]` takes
 * `null` or `"x"`; where avsc would wrap the union, its wrapped form `{"int": 1}` is taken too), numbers
 * must fit their type (int 32-bit, long a safe integer, float and double finite), and bytes and fixed, which
 * JSON cannot carry, take nothing.
 */
export function findMisfit(type: avro.Type, value: unknown): Misfit | undefined {
  return check(type, value, [], new WeakMap());
}

/**
 * What was found for a JSON object or array against a union's branch: a union tries each branch, and a payload
 * that fits none of two recursive branches would otherwise be walked again at every level, twice as often per
 * level. A node of the payload sits at one path, so what was found for it holds wherever it is asked again.
 * Only union values are remembered, so a large payload of plain records costs no memory here.
 */
type Found = WeakMap<object, Map<avro.Type, Misfit | undefined>>;

function checkBranch(type: avro.Type, value: unknown, path: string[], found: Found): Misfit | undefined {
  if (value === null || typeof value !== 'object') return check(type, value, path, found);
  let byType = found.get(value);
  if (byType === undefined) found.set(value, (byType = new Map()));
  if (byType.has(type)) return byType.get(type);
  const misfit = check(type, value, path, found);
  byType.set(type, misfit);
  return misfit;
}

function check(type: avro.Type, value: unknown, path: string[], found: Found): Misfit | undefined {
  if (type instanceof avro.types.RecordType) return recordMisfit(type, value, path, found);
  if (type instanceof avro.types.ArrayType) {
    if (!Array.isArray(value)) return wrong(type, path);
    for (let i = 0; i < value.length; i++) {
      const misfit = check(type.itemsType, value[i], [...path, String(i)], found);
      if (misfit) return misfit;
    }
    return undefined;
  }
  if (type instanceof avro.types.MapType) {
    if (!isObject(value)) return wrong(type, path);
    for (const key of Object.keys(value)) {
      const misfit = check(type.valuesType, value[key], [...path, key], found);
      if (misfit) return misfit;
    }
    return undefined;
  }
  if (type instanceof avro.types.UnwrappedUnionType || type instanceof avro.types.WrappedUnionType) return unionMisfit(type, value, path, found);
  return fitsPrimitive(type, value) ? undefined : wrong(type, path);
}

function recordMisfit(type: avro.types.RecordType, value: unknown, path: string[], found: Found): Misfit | undefined {
  if (!isObject(value)) return wrong(type, path);
  const fields = new Map(type.fields.map((field) => [field.name, field]));
  for (const key of Object.keys(value)) {
    const field = fields.get(key);
    if (field === undefined) return { path: [...path, key], kind: 'undeclared' };
    const misfit = check(field.type, value[key], [...path, key], found);
    if (misfit) return misfit;
  }
  for (const field of type.fields) {
    if (!Object.hasOwn(value, field.name) && field.defaultValue() === undefined) return { path: [...path, field.name], kind: 'missing' };
  }
  return undefined;
}

function unionMisfit(type: avro.types.UnwrappedUnionType | avro.types.WrappedUnionType, value: unknown, path: string[], found: Found): Misfit | undefined {
  const branches = type.types;
  if (branches.some((branch) => checkBranch(branch, value, path, found) === undefined)) return undefined;
  if (type instanceof avro.types.WrappedUnionType && isObject(value)) {
    const keys = Object.keys(value);
    const branch = keys.length === 1 ? branches.find((b) => b.branchName === keys[0]) : undefined;
    if (branch !== undefined && checkBranch(branch, value[keys[0]], [...path, keys[0]], found) === undefined) return undefined;
  }
  // One branch of the value's JSON kind (a record for an object, say): its own misfit says more.
  const alike = branches.filter((branch) => sameKind(branch, value));
  if (alike.length === 1) return checkBranch(alike[0], value, path, found);
  return { path, kind: 'wrong type', expected: `one of ${branches.map(describe).join(', ')}` };
}

function fitsPrimitive(type: avro.Type, value: unknown): boolean {
  switch (type.typeName) {
    case 'null':
      return value === null;
    case 'boolean':
      return typeof value === 'boolean';
    case 'int':
      return Number.isInteger(value) && (value as number) >= INT_MIN && (value as number) <= INT_MAX;
    case 'long':
      return Number.isSafeInteger(value);
    case 'float':
      return typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= FLOAT_MAX;
    case 'double':
      return typeof value === 'number' && Number.isFinite(value);
    case 'string':
      return typeof value === 'string';
    case 'enum':
      return typeof value === 'string' && (type as avro.types.EnumType).symbols.includes(value);
    default:
      // bytes and fixed: JSON has no binary value.
      return false;
  }
}

/** Whether a value of this JSON kind could be of the type at all. */
function sameKind(type: avro.Type, value: unknown): boolean {
  if (value === null) return type.typeName === 'null';
  if (Array.isArray(value)) return type instanceof avro.types.ArrayType;
  switch (typeof value) {
    case 'object':
      return type instanceof avro.types.RecordType || type instanceof avro.types.MapType;
    case 'string':
      return type.typeName === 'string' || type.typeName === 'enum';
    case 'number':
      return ['int', 'long', 'float', 'double'].includes(type.typeName);
    case 'boolean':
      return type.typeName === 'boolean';
    default:
      return false;
  }
}

const wrong = (type: avro.Type, path: string[]): Misfit => ({ path, kind: 'wrong type', expected: describe(type) });

/** `int`, `record Order`, `enum Color`, `array`, `map`. */
function describe(type: avro.Type): string {
  return type.name === undefined ? type.typeName : `${type.typeName} ${type.name}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
