/**
 * The errors of reading a request body (body-reader.ts): each has a stable code, the status it is answered
 * with and the message the client reads. Every one is the client's doing, so none is ever a 500; the messages
 * are ours, never the text of the underlying zlib or stream error (which can quote the body or name internals).
 */
/**
 * The most objects and arrays one body may hold. `{}` is 2 bytes on the wire and far more once parsed, so a
 * 64 MiB batch body of empty objects (a few dozen KB of gzip) would parse into gigabytes: beyond this the body
 * is refused before it is parsed. Far above what a real body holds (1,000 messages with their metadata).
 */
export const MAX_JSON_CONTAINERS = 1_000_000;

const BODY_ERRORS = {
  BODY_MALFORMED_JSON: [400, 'malformed JSON body'],
  BODY_NOT_UTF8: [400, 'request body is not valid UTF-8'],
  BODY_ABORTED: [400, 'request aborted'],
  BODY_SIZE_MISMATCH: [400, 'request body size does not match Content-Length'],
  BODY_NOT_DECOMPRESSED: [400, 'request body could not be decompressed; check Content-Encoding'],
  BODY_TOO_LARGE: [413, 'request body too large'],
  BODY_TOO_COMPLEX: [413, `request body holds more than ${MAX_JSON_CONTAINERS.toLocaleString('en-US')} objects and arrays`],
  BODY_ENCODING_UNSUPPORTED: [415, 'unsupported Content-Encoding; send the body as identity, gzip, deflate or br'],
  BODY_CHARSET_UNSUPPORTED: [415, 'unsupported charset; send UTF-8 JSON'],
} as const satisfies Record<string, readonly [number, string]>;

export type BodyErrorCode = keyof typeof BODY_ERRORS;

export class BodyError extends Error {
  readonly status: number;

  constructor(
    readonly code: BodyErrorCode,
    options?: { cause?: unknown },
  ) {
    super(BODY_ERRORS[code][1], options);
    this.name = 'BodyError';
    this.status = BODY_ERRORS[code][0];
  }
}
