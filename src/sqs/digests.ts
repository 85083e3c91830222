import { createHash } from 'node:crypto';

/** A message attribute as the SQS API carries it (BinaryValue is base64 in the JSON protocol). */
export interface MessageAttribute {
  DataType: string;
  StringValue?: string;
  BinaryValue?: string;
}

/** MD5OfMessageBody: the hex MD5 of the body's UTF-8 bytes. */
export const md5OfBody = (body: string) => createHash('md5').update(body, 'utf8').digest('hex');

function lengthPrefixed(hash: ReturnType<typeof createHash>, bytes: Buffer): void {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  hash.update(length).update(bytes);
}

/**
 * MD5OfMessageAttributes as SQS computes it: for each attribute in name order, the name, the data type (each
 * as a 4-byte big-endian length and the UTF-8 bytes), a transport byte (1 for String and Number values, 2 for
 * Binary) and the value (length-prefixed: the UTF-8 text, or the binary bytes). Undefined without attributes.
 */
export function md5OfAttributes(attributes: Record<string, MessageAttribute>): string | undefined {
  const names = Object.keys(attributes).sort();
  if (names.length === 0) return undefined;
  const hash = createHash('md5');
  for (const name of names) {
    const attribute = attributes[name];
    lengthPrefixed(hash, Buffer.from(name, 'utf8'));
    lengthPrefixed(hash, Buffer.from(attribute.DataType, 'utf8'));
    if (attribute.BinaryValue !== undefined && attribute.DataType.startsWith('Binary')) {
      hash.update(Buffer.from([2]));
      lengthPrefixed(hash, Buffer.from(attribute.BinaryValue, 'base64'));
    } else {
      hash.update(Buffer.from([1]));
      lengthPrefixed(hash, Buffer.from(attribute.StringValue ?? '', 'utf8'));
    }
  }
  return hash.digest('hex');
}
