/**
 * Typed domain errors. Transports map `code` to a status in one table each
 * (src/http/errors.ts, src/grpc/errors.ts); the message is safe to show a client.
 */
export type DomainErrorCode =
  | 'invalid_argument'
  | 'payload_too_large'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'schema_violation'
  | 'topic_not_registered'
  | 'failed_precondition'
  | 'queue_full'
  | 'rate_limited'
  | 'unavailable';

export class DomainError extends Error {
  constructor(
    readonly code: DomainErrorCode,
    message: string,
    readonly details: { retryAfterSeconds?: number } = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const invalid = (message: string) => new DomainError('invalid_argument', message);
export const notFound = (message: string) => new DomainError('not_found', message);
export const conflict = (message: string) => new DomainError('conflict', message);
export const failedPrecondition = (message: string) => new DomainError('failed_precondition', message);
export const messageNotFound = () => notFound('message not found');
