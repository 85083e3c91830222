import { isUtf8 } from 'node:buffer';
import avro from 'avsc';
import { findMisfit, type Misfit } from './avro-check.js';
import { DomainError, invalid } from './errors.js';

export type CompiledSchema = avro.Type;

/** Compiles an Avro schema given as JSON text; 400 with avsc's reason when it is not valid Avro. */
export function compileSchema(schemaJson: unknown): CompiledSchema {
  if (typeof schemaJson !== 'string' || schemaJson.trim() === '') throw invalid('schema_json must be a non-empty string of Avro schema JSON');
  let parsed: unknown;
  try {
    parsed = JSON.parse(schemaJson);
  } catch {
    throw invalid('schema_json is not valid JSON');
  }
  let reserved: { what: string; name: string } | undefined;
  try {
    reserved = reservedName(parsed);
  } catch {
    // A stack overflow: avsc would meet the same one.
    throw invalid('schema_json nests too deeply');
  }
  if (reserved !== undefined) {
    throw invalid(`schema_json names ${reserved.what} "${reserved.name}", a property every JavaScript object has, which the Avro library cannot keep apart from it: choose another name`);
  }
  let type: unknown;
  try {
    // avsc wraps a union whose branches it cannot tell apart (["int","double"]); payloads may then use the
    // wrapped form {"int": 1} as well as a bare value (src/queue/avro-check.ts). A registry without a
    // prototype: with avsc's default `{}`, the type name "toString" found Object.prototype.toString.
    type = avro.Type.forSchema(parsed as avro.Schema, { wrapUnions: 'auto', registry: Object.create(null) as Record<string, avro.Type> });
  } catch (err) {
    throw invalid(`schema_json is not a valid Avro schema: ${(err as Error).message}`);
  }
  if (!avro.Type.isType(type)) throw invalid('schema_json is not a valid Avro schema');
  return type as avro.Type;
}

/**
 * A field, enum symbol or type named like a property of Object.prototype (`constructor`, `toString`,
 * `__proto__`, ...): avsc keeps fields, symbols and union branches in plain objects, where such a name is
 * always "present", so it refuses the schema with a misleading "duplicate" or takes it and checks nothing.
 */
function reservedName(schema: unknown): { what: string; name: string } | undefined {
  const taken = (name: unknown) => typeof name === 'string' && name.split('.').some((part) => part in Object.prototype);
  if (Array.isArray(schema)) {
    for (const branch of schema) {
      const found = reservedName(branch);
      if (found) return found;
    }
    return undefined;
  }
  if (schema === null || typeof schema !== 'object') return undefined;
  const node = schema as Record<string, unknown>;
  if (taken(node.name)) return { what: 'a type', name: String(node.name) };
  if (Array.isArray(node.symbols)) {
    const symbol = node.symbols.find(taken);
    if (symbol !== undefined) return { what: 'an enum symbol', name: String(symbol) };
  }
  if (Array.isArray(node.fields)) {
    for (const field of node.fields as Array<Record<string, unknown>>) {
      if (field !== null && typeof field === 'object' && taken(field.name)) return { what: 'a field', name: String(field.name) };
      const found = reservedName(field?.type);
      if (found) return found;
    }
  }
  for (const key of ['type', 'items', 'values']) {
    const found = reservedName(node[key]);
    if (found) return found;
  }
  return undefined;
}

const schemaViolation = (message: string) => new DomainError('schema_violation', message);

/** The payload must be JSON whose value the schema accepts, with no undeclared fields. */
export function validatePayload(schema: CompiledSchema, payload: Buffer): void {
  const text = payload.toString('utf8');
  // Bytes that are not UTF-8 (possible over gRPC, whose payload is bytes) decode to U+FFFD and would then
  // pass as JSON: refused, as JSON must be UTF-8 and a strict consumer's parser would refuse it.
  if (text.includes('\ufffd') && !isUtf8(payload)) throw schemaViolation('payload does not match the topic schema: payload is not valid JSON (its bytes are not UTF-8)');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw schemaViolation('payload does not match the topic schema: payload is not valid JSON');
  }
  let misfit: Misfit | undefined;
  try {
    misfit = findMisfit(schema, value);
  } catch (err) {
    // The check is recursive: a payload nested thousands deep in a recursive schema overflows the stack.
    if (!(err instanceof RangeError)) throw err;
    throw schemaViolation('payload does not match the topic schema: the payload nests too deeply to check');
  }
  if (misfit) throw schemaViolation(`payload does not match the topic schema: ${describeMisfit(misfit)}`);
}

function describeMisfit({ path, kind, expected }: Misfit): string {
  const field = `field "${path.join('.')}"`;
  if (kind === 'undeclared') return `${field} is not declared by the schema`;
  if (kind === 'missing') return `${field} is missing`;
  return `${path.length === 0 ? 'the payload value' : field} has the wrong type (expected ${expected})`;
}
