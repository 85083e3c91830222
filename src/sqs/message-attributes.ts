import { z } from 'zod';
import { SqsError } from './errors.js';
import type { MessageAttribute } from './digests.js';

/**
 * Message attributes are a message's metadata: each attribute's name is a metadata key and its value the
 * text (base64 for Binary). The data types other than plain `String` are kept in one more metadata entry,
 * TYPES_KEY, a JSON object of name → type, so that a message sent through SQS reads back with the same types
 * and digest, and metadata set through the HTTP API or gRPC reads as String attributes.
 */
export const TYPES_KEY = 'sqs.attribute_types';
/** A FIFO message's deduplication id, kept in its metadata to be read back as a system attribute. */
export const DEDUP_KEY = 'sqs.deduplication_id';
const RESERVED = new Set([TYPES_KEY, DEDUP_KEY]);

export const MAX_ATTRIBUTES = 10;

export const messageAttributeSchema = z.object({
  DataType: z.string(),
  StringValue: z.string().optional(),
  BinaryValue: z.string().optional(),
  StringListValues: z.array(z.string()).optional(),
  BinaryListValues: z.array(z.string()).optional(),
});

const NAME = /^(?!\.)(?!.*\.\.)(?!.*\.$)[A-Za-z0-9_.-]{1,256}$/;
const TYPE = /^(String|Number|Binary)(\.[^\s]{1,250})?$/;

const invalidAttribute = (message: string) => new SqsError('InvalidParameterValue', message);

/** Checks attributes as SQS does and turns them into metadata. */
export function metadataOf(attributes: Record<string, z.output<typeof messageAttributeSchema>> | undefined): Record<string, string> | undefined {
  if (!attributes) return undefined;
  const names = Object.keys(attributes);
  if (names.length === 0) return undefined;
  if (names.length > MAX_ATTRIBUTES) throw invalidAttribute(`Number of message attributes [${names.length}] exceeds the allowed maximum [${MAX_ATTRIBUTES}].`);
  const metadata: Record<string, string> = {};
  const types: Record<string, string> = {};
  for (const name of names) {
    const { DataType, StringValue, BinaryValue } = attributes[name];
    if (!NAME.test(name) || /^(aws\.|amazon\.)/i.test(name) || RESERVED.has(name)) throw invalidAttribute(`Message attribute name '${name}' is invalid.`);
    if (!TYPE.test(DataType)) throw invalidAttribute(`Message attribute '${name}' has an invalid data type '${DataType}'.`);
    if (DataType.startsWith('Binary')) {
      if (BinaryValue === undefined || BinaryValue === '') throw invalidAttribute(`Message attribute '${name}' must contain a non-empty binary value.`);
      metadata[name] = BinaryValue;
    } else {
      if (StringValue === undefined || StringValue === '') throw invalidAttribute(`Message attribute '${name}' must contain a non-empty message attribute value for message attribute type '${DataType}'.`);
      if (DataType.startsWith('Number') && !/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(StringValue)) throw invalidAttribute(`Message attribute '${name}' has an invalid Number value.`);
      metadata[name] = StringValue;
    }
    if (DataType !== 'String') types[name] = DataType;
  }
  if (Object.keys(types).length > 0) metadata[TYPES_KEY] = JSON.stringify(types);
  return metadata;
}

/** A message's metadata as attributes, the data types restored. */
export function attributesOf(metadata: Record<string, string>): Record<string, MessageAttribute> {
  let types: Record<string, unknown> = {};
  if (metadata[TYPES_KEY] !== undefined) {
    try {
      const parsed = JSON.parse(metadata[TYPES_KEY]) as unknown;
      if (parsed && typeof parsed === 'object') types = parsed as Record<string, unknown>;
    } catch {
      types = {};
    }
  }
  const attributes: Record<string, MessageAttribute> = {};
  for (const [name, value] of Object.entries(metadata)) {
    if (RESERVED.has(name) || typeof value !== 'string') continue;
    const type = typeof types[name] === 'string' ? (types[name] as string) : 'String';
    attributes[name] = type.startsWith('Binary') ? { DataType: type, BinaryValue: value } : { DataType: type, StringValue: value };
  }
  return attributes;
}

/** The attributes MessageAttributeNames asks for: `All`, `.*`, names, and `prefix.*`. */
export function selectAttributes(all: Record<string, MessageAttribute>, names: string[] | undefined): Record<string, MessageAttribute> {
  if (!names || names.length === 0) return {};
  if (names.includes('All') || names.includes('.*')) return all;
  const chosen: Record<string, MessageAttribute> = {};
  for (const [name, attribute] of Object.entries(all)) {
    if (names.some((n) => n === name || (n.endsWith('.*') && name.startsWith(n.slice(0, -1))))) chosen[name] = attribute;
  }
  return chosen;
}

