import { invalid } from './errors.js';

export const MAX_KEY_CHARACTERS = 255;

/**
 * A key is 1-255 characters counted as Unicode code points, as VARCHAR(255) counts them (an emoji is one
 * character, not two UTF-16 units). The same rule for enqueue and delete-by-key, so no key can be named
 * that could never have been stored.
 */
export function keyError(key: string): Error | undefined {
  let length = 0;
  for (const _ of key) if (++length > MAX_KEY_CHARACTERS) break;
  return length < 1 || length > MAX_KEY_CHARACTERS ? invalid(`key must be 1-${MAX_KEY_CHARACTERS} characters`) : undefined;
}

/** The most bytes of UTF-8 in an ordering key. */
export const MAX_ORDERING_KEY_BYTES = 255;

/** An ordering key is 1-255 bytes of UTF-8 (text, well-formed like every request string). */
export function orderingKeyError(key: unknown): Error | undefined {
  if (typeof key !== 'string') return invalid('ordering_key must be a string');
  const bytes = Buffer.byteLength(key);
  return bytes < 1 || bytes > MAX_ORDERING_KEY_BYTES ? invalid(`ordering_key must be 1-${MAX_ORDERING_KEY_BYTES} bytes of UTF-8`) : undefined;
}

export function assertKey(key: string): string {
  const error = keyError(key);
  if (error) throw error;
  return key;
}
