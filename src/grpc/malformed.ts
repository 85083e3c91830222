import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';

const MALFORMED = Symbol('malformed request');

/** What a method's handler receives instead of a request whose bytes are not a valid message of its type. */
export interface MalformedRequest {
  readonly [MALFORMED]: string;
}

export function isMalformed(request: unknown): request is MalformedRequest {
  return typeof request === 'object' && request !== null && MALFORMED in request;
}

/** The request type a malformed request was meant to be, for the error message, e.g. `queue.AckRequest`. */
export const malformedType = (request: MalformedRequest) => request[MALFORMED];

/**
 * The service with request decoders that never throw. grpc-js answers a request it cannot decode (cut short,
 * a wrong wire type, a length running past the end) with INTERNAL, a server fault by its meaning; a client
 * that sends bytes that are no message of the method's type gets INVALID_ARGUMENT instead: the decoder hands
 * the handler a marker, and the handler answers it (queue-service.ts).
 */
export function withTolerantDecoders(service: ServiceDefinition, requestTypes: Record<string, string>): ServiceDefinition {
  const tolerant: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(service)) {
    const decode = method.requestDeserialize;
    const type = requestTypes[name] ?? 'request';
    tolerant[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return decode(bytes);
        } catch {
          return { [MALFORMED]: type } satisfies MalformedRequest;
        }
      },
    };
  }
  return tolerant;
}
