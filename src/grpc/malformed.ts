import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { RefusedRequest } from './request-decoder.js';

const MALFORMED = Symbol('malformed request');

/** What a method's handler receives instead of a request whose bytes are refused. */
export interface MalformedRequest {
  readonly [MALFORMED]: string;
}

export function isMalformed(request: unknown): request is MalformedRequest {
  return typeof request === 'object' && request !== null && MALFORMED in request;
}

/** Why the request was refused, e.g. `the request is not a valid queue.AckRequest message`. */
export const malformedReason = (request: MalformedRequest) => request[MALFORMED];

/**
 * The service with request decoders that never throw. grpc-js answers a request it cannot decode (cut short,
 * a wrong wire type, a length running past the end) with INTERNAL, a server fault by its meaning; a client
 * that sends bytes that are no message of the method's type, or a message the decoder refuses (a string that
 * is not UTF-8, a map key `__proto__`), gets INVALID_ARGUMENT instead: the decoder hands the handler a marker,
 * and the handler answers it (queue-service.ts).
 */
export function withTolerantDecoders(
  service: ServiceDefinition,
  requestTypes: Record<string, string>,
  decoderOf: (typeName: string) => (bytes: Buffer) => object,
): ServiceDefinition {
  const tolerant: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(service)) {
    const type = requestTypes[name]!;
    const decode = decoderOf(type);
    tolerant[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return decode(bytes);
        } catch (err) {
          const reason = `the request is not a valid ${type} message${err instanceof RefusedRequest ? `: ${err.message}` : ''}`;
          return { [MALFORMED]: reason } satisfies MalformedRequest;
        }
      },
    };
  }
  return tolerant;
}
