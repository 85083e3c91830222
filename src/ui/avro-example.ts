/**
 * A valid example payload for a topic's Avro schema, as the service checks payloads (src/queue/avro.ts):
 * the payload is plain JSON (not Avro's JSON encoding) validated by avsc with `wrapUnions: 'auto'` and no
 * logical-type implementations. So logical types are their underlying primitives (timestamp-millis is a
 * number of milliseconds, uuid a string), and a union is unwrapped unless avsc finds it ambiguous (two
 * branches of the same JavaScript kind), in which case a non-null value is `{"<branch name>": value}`.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type SchemaNode = string | SchemaNode[] | { [key: string]: unknown };

export interface AvroExample {
  /** The example, pretty-printed JSON text. */
  json: string;
  /** What the example could not make valid (bytes and fixed values), for the person reading it. */
  notes: string[];
}

const PRIMITIVES = new Set(['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string']);
const NAMED = new Set(['record', 'error', 'enum', 'fixed']);
const MAX_DEPTH = 32;
const EXAMPLE_UUID = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';

interface Resolved {
  /** The schema object (or primitive name) after following a named reference. */
  node: SchemaNode;
  /** The namespace names inside it are resolved against. */
  namespace: string;
  /** The full name of a named type, else undefined. */
  fullName?: string;
}

function fullNameOf(name: string, namespace: string): string {
  return name.includes('.') || namespace === '' ? name : `${namespace}.${name}`;
}

function namespaceOfDefinition(schema: { [key: string]: unknown }, enclosing: string): string {
  const name = String(schema.name);
  if (name.includes('.')) return name.slice(0, name.lastIndexOf('.'));
  return typeof schema.namespace === 'string' ? schema.namespace : enclosing;
}

class Generator {
  private readonly named = new Map<string, Resolved>();
  readonly notes = new Set<string>();

  constructor(root: SchemaNode) {
    // Every named type first: a union's first branch may skip the definition a later field refers to.
    this.register(root, '');
  }

  private register(node: SchemaNode, namespace: string): void {
    if (Array.isArray(node)) {
      for (const branch of node) this.register(branch, namespace);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const type = node.type;
    if (typeof type === 'string' && NAMED.has(type) && typeof node.name === 'string') {
      const inner = namespaceOfDefinition(node, namespace);
      const fullName = fullNameOf(String(node.name).split('.').pop()!, inner);
      this.named.set(fullName, { node, namespace: inner, fullName });
      if (Array.isArray(node.fields)) for (const field of node.fields as Array<{ type: SchemaNode }>) this.register(field.type, inner);
      return;
    }
    if (type === 'array') this.register(node.items as SchemaNode, namespace);
    else if (type === 'map') this.register(node.values as SchemaNode, namespace);
    else if (typeof type === 'object' && type !== null) this.register(type as SchemaNode, namespace);
  }

  /** Follows names and `{"type": "<name>"}` wrappers to the definition. */
  resolve(node: SchemaNode, namespace: string): Resolved {
    if (typeof node === 'string') {
      if (PRIMITIVES.has(node)) return { node, namespace };
      const found = this.named.get(fullNameOf(node, namespace)) ?? this.named.get(node);
      if (!found) throw new Error(`the schema refers to an unknown type "${node}"`);
      return found;
    }
    if (!Array.isArray(node) && typeof node === 'object' && node !== null) {
      const type = node.type;
      if (typeof type === 'string' && NAMED.has(type) && typeof node.name === 'string') {
        const inner = namespaceOfDefinition(node, namespace);
        return { node, namespace: inner, fullName: fullNameOf(String(node.name).split('.').pop()!, inner) };
      }
      // `{"type": "long", "logicalType": ...}` keeps its attributes; `{"type": "Other"}` is a reference.
      if (typeof type === 'string' && !PRIMITIVES.has(type) && type !== 'array' && type !== 'map') return this.resolve(type, namespace);
      if (typeof type === 'object' && type !== null) return this.resolve(type as SchemaNode, namespace);
    }
    return { node, namespace };
  }

  private typeName(resolved: Resolved): string {
    const { node } = resolved;
    if (typeof node === 'string') return node;
    if (Array.isArray(node)) return 'union';
    return String(node.type);
  }

  /** avsc's grouping of union branches by the JavaScript value they take (lib/types.js, getTypeBucket). */
  private bucket(resolved: Resolved): string {
    const name = this.typeName(resolved);
    if (['int', 'long', 'float', 'double'].includes(name)) return 'number';
    if (name === 'bytes' || name === 'fixed') return 'buffer';
    if (name === 'enum') return 'string';
    if (name === 'map' || name === 'record' || name === 'error') return 'object';
    return name;
  }

  /** The key of a branch in a wrapped union: a named type's full name, else the type's name. */
  private branchName(resolved: Resolved): string {
    return resolved.fullName ?? this.typeName(resolved);
  }

  example(node: SchemaNode, namespace: string, depth: number): Json {
    if (depth > MAX_DEPTH) throw new Error('the schema is recursive with no way to end (no union with null on the cycle)');
    const resolved = this.resolve(node, namespace);
    const target = resolved.node;
    if (Array.isArray(target)) return this.union(target, resolved.namespace, depth);
    if (typeof target === 'string') return this.primitive(target, undefined);
    const type = String(target.type);
    const logical = typeof target.logicalType === 'string' ? target.logicalType : undefined;
    switch (type) {
      case 'record':
      case 'error': {
        const value: { [key: string]: Json } = {};
        for (const field of (target.fields ?? []) as Array<{ name: string; type: SchemaNode }>) value[field.name] = this.example(field.type, resolved.namespace, depth + 1);
        return value;
      }
      case 'enum': {
        const symbols = (target.symbols ?? []) as string[];
        return symbols[0] ?? '';
      }
      case 'array':
        return [this.example(target.items as SchemaNode, resolved.namespace, depth + 1)];
      case 'map':
        return { key: this.example(target.values as SchemaNode, resolved.namespace, depth + 1) };
      case 'fixed':
        this.notes.add(`"${resolved.fullName}" is fixed: the service validates payloads as plain JSON, where bytes cannot be written, so no payload with this field is accepted.`);
        return '\u0000'.repeat(Number(target.size) || 0);
      default:
        return this.primitive(type, logical);
    }
  }

  private union(branches: SchemaNode[], namespace: string, depth: number): Json {
    if (branches.length === 0) throw new Error('the schema has an empty union');
    const resolved = branches.map((b) => this.resolve(b, namespace));
    const buckets = resolved.map((r) => this.bucket(r));
    const wrapped = new Set(buckets).size !== buckets.length;
    const first = resolved[0];
    const value = this.example(first.node, first.namespace, depth + 1);
    if (!wrapped || value === null) return value;
    return { [this.branchName(first)]: value };
  }

  private primitive(type: string, logical: string | undefined): Json {
    const now = Date.now();
    switch (type) {
      case 'null':
        return null;
      case 'boolean':
        return true;
      case 'int':
        if (logical === 'date') return Math.floor(now / 86_400_000);
        if (logical === 'time-millis') return 12 * 3_600_000;
        return 42;
      case 'long':
        if (logical === 'timestamp-millis' || logical === 'local-timestamp-millis') return now;
        if (logical === 'timestamp-micros' || logical === 'local-timestamp-micros') return now * 1000;
        if (logical === 'time-micros') return 12 * 3_600_000_000;
        return 42;
      case 'float':
      case 'double':
        return 1.5;
      case 'string':
        return logical === 'uuid' ? EXAMPLE_UUID : 'example';
      case 'bytes':
        this.notes.add(`A bytes value${logical === 'decimal' ? ' (decimal)' : ''} cannot be written in a JSON payload, which is how the service validates payloads, so no payload with this field is accepted.`);
        return '';
      default:
        throw new Error(`the schema uses an unknown type "${type}"`);
    }
  }
}

/** An example payload for the Avro schema given as JSON text; throws with a reason when it cannot. */
export function avroExample(schemaJson: string): AvroExample {
  const root = JSON.parse(schemaJson) as SchemaNode;
  const generator = new Generator(root);
  const value = generator.example(root, '', 0);
  return { json: JSON.stringify(value, null, 2), notes: [...generator.notes] };
}
