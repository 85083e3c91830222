import { isUtf8 } from 'node:buffer';
import protobuf from 'protobufjs';

/** Why a request's bytes were refused: the text of the INVALID_ARGUMENT status. */
export class RefusedRequest extends Error {}

const PROTO_KEY = '__proto__';

/**
 * proto3 strings are UTF-8, and protobufjs reads bytes that are not as U+FFFD, so two different keys, ids or
 * metadata values could arrive as one: this reader refuses them, as protobuf's own runtimes do. A string whose
 * length runs past the end of the message is refused too (protobufjs's Buffer reader cuts it short instead).
 */
class Utf8Reader extends protobuf.BufferReader {
  /** A string read was `__proto__`: a map key of that name vanishes in decoding (see protoKeyIn). */
  sawProtoKey = false;

  /** `replacing`: bytes that are not UTF-8 are read as U+FFFD instead of refused. */
  constructor(
    buffer: Buffer,
    private readonly replacing: boolean,
  ) {
    super(buffer);
  }

  override string(): string {
    const length = this.uint32();
    const start = this.pos;
    if (start + length > this.len) throw new RangeError('a string runs past the end of the message');
    this.pos += length;
    // A Node Buffer, which protobufjs's typings only know as Uint8Array.
    const buf = this.buf as Buffer;
    const text = buf.toString('utf8', start, this.pos);
    // Decoding turns every byte sequence that is not UTF-8 into U+FFFD, so only text holding one needs the
    // check (which a U+FFFD that was sent as such passes).
    if (!this.replacing && text.includes('\ufffd') && !isUtf8(buf.subarray(start, this.pos))) {
      throw new RefusedRequest('a string field holds bytes that are not UTF-8');
    }
    if (text === PROTO_KEY) this.sawProtoKey = true;
    return text;
  }
}

/**
 * The same message with every map field declared as what it is on the wire, repeated key/value entries: a map
 * decodes into a plain object, where assigning the key `__proto__` changes nothing, so the entry would be
 * dropped without a word. Reading the entries finds it, to refuse it as HTTP does.
 */
function entriesRoot(root: protobuf.Root): protobuf.Root {
  const rewrite = (node: protobuf.INamespace & { fields?: Record<string, protobuf.IField & { keyType?: string }> }) => {
    for (const [name, field] of Object.entries(node.fields ?? {})) {
      if (field.keyType === undefined) continue;
      const entry = `${name}__entry`;
      node.nested = { ...node.nested, [entry]: { fields: { key: { type: field.keyType, id: 1 }, value: { type: field.type, id: 2 } } } };
      node.fields![name] = { rule: 'repeated', type: entry, id: field.id };
    }
    for (const child of Object.values(node.nested ?? {})) rewrite(child as typeof node);
  };
  const json = structuredClone(root.toJSON()) as protobuf.INamespace;
  rewrite(json);
  return protobuf.Root.fromJSON(json);
}

/**
 * Whether a map entry of `message` (decoded by `type` of entriesRoot), or of a message it holds, has the key
 * `__proto__`: the field's name if so. `original` is the root entriesRoot was made from, which knows the maps.
 */
function protoKeyIn(original: protobuf.Root, type: protobuf.Type, message: Record<string, unknown>): string | undefined {
  for (const field of type.fieldsArray) {
    const value = message[field.name];
    if (value === undefined || value === null || !(field.resolvedType instanceof protobuf.Type)) continue;
    const items = (Array.isArray(value) ? value : [value]) as Array<Record<string, unknown>>;
    if (original.lookupType(type.fullName).fields[field.name]!.map) {
      if (items.some((entry) => entry.key === PROTO_KEY)) return field.name;
      continue;
    }
    for (const item of items) {
      const found = protoKeyIn(original, field.resolvedType, item);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/**
 * The most fields one request may hold, nested ones included. Every field costs at least 2 bytes on the wire
 * but a hundred or more once decoded, so a 64 MiB request of empty messages (a few KB of gzip) would decode
 * into gigabytes: beyond this the request is refused before it is decoded. Far above what a real request
 * holds (a batch of 1,000 messages with hundreds of metadata entries each).
 */
export const MAX_REQUEST_FIELDS = 1_000_000;

/** Counts the fields of a message and of the messages it holds, building nothing; throws past the budget. */
function countFields(type: protobuf.Type, reader: protobuf.Reader, end: number, budget: { left: number }): void {
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (--budget.left < 0) throw new RefusedRequest(`it holds more than ${MAX_REQUEST_FIELDS.toLocaleString('en-US')} fields, nested ones included`);
    const field = type.fieldsById[tag >>> 3];
    if ((tag & 7) === 2 && field !== undefined && !field.map && field.resolvedType instanceof protobuf.Type) {
      const length = reader.uint32();
      countFields(field.resolvedType, reader, reader.pos + length, budget);
    } else {
      reader.skipType(tag & 7);
    }
  }
}

/**
 * A decoder for one request type: protobufjs's, with the reader above, and with the same conversion options
 * as @grpc/proto-loader's (so handlers see what they saw before). It throws RefusedRequest for what the reader
 * refuses, for a map key `__proto__` and for more than MAX_REQUEST_FIELDS fields, protobufjs's own errors for
 * bytes that are no message of the type.
 * The types in `replacing` read bytes that are not UTF-8 as U+FFFD instead.
 */
export function requestDecoders(
  root: protobuf.Root,
  options: protobuf.IConversionOptions,
  replacing: ReadonlySet<string>,
): (typeName: string) => (bytes: Buffer) => object {
  const entries = entriesRoot(root);
  entries.resolveAll();
  return (typeName) => {
    const type = root.lookupType(typeName);
    const asEntries = entries.lookupType(typeName);
    const replace = replacing.has(typeName);
    return (bytes) => {
      // A field takes 2 bytes at least: only a request this large can hold too many.
      if (bytes.length > 2 * MAX_REQUEST_FIELDS) countFields(type, protobuf.Reader.create(bytes), bytes.length, { left: MAX_REQUEST_FIELDS });
      const reader = new Utf8Reader(bytes, replace);
      const message = type.decode(reader);
      if (reader.sawProtoKey) {
        const field = protoKeyIn(root, asEntries, asEntries.decode(bytes) as unknown as Record<string, unknown>);
        if (field !== undefined) throw new RefusedRequest(`${field} must not have the key "${PROTO_KEY}"`);
      }
      return type.toObject(message, options);
    };
  };
}
