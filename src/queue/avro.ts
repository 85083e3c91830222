import { isUtf8 } from 'node:buffer';
import avro from 'avsc';
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
  try {
    // Unions are unwrapped where avsc can tell the branches apart: ["null","string"] takes null or "x".
    return avro.Type.forSchema(parsed as avro.Schema, { wrapUnions: 'auto' });
  } catch (err) {
    throw invalid(`schema_json is not a valid Avro schema: ${(err as Error).message}`);
  }
}

const schemaViolation = (message: string) => new DomainError('schema_violation', message);

/** The payload must be JSON whose value the schema accepts, with no undeclared fields (contract §2). */
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
  let problem: string | undefined;
  let valid: boolean;
  try {
    valid = schema.isValid(value, {
      noUndeclaredFields: true,
      errorHook: (path, bad, type) => {
        problem ??= describeProblem(path, bad, type);
      },
    });
  } catch (err) {
    // avsc checks a value recursively: a payload nested thousands deep in a recursive schema overflows the stack.
    if (!(err instanceof RangeError)) throw err;
    throw schemaViolation('payload does not match the topic schema: the payload nests too deeply to check');
  }
  if (!valid) throw schemaViolation(`payload does not match the topic schema: ${problem ?? 'the payload value has the wrong type'}`);
}

function describeProblem(path: string[], bad: unknown, type: avro.Type): string {
  const name = (field: string[]) => `field "${field.join('.')}"`;
  if (type instanceof avro.types.RecordType && bad !== null && typeof bad === 'object' && !Array.isArray(bad)) {
    const declared = new Set(type.fields.map((f) => f.name));
    const undeclared = Object.keys(bad).find((key) => !declared.has(key));
    if (undeclared !== undefined) return `${name([...path, undeclared])} is not declared by the schema`;
  }
  if (path.length === 0) return 'the payload value has the wrong type';
  if (bad === undefined) return `${name(path)} is missing`;
  return `${name(path)} has the wrong type (expected ${type.typeName})`;
}
