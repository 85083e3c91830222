import { status as Status, type ServiceError, Metadata } from '@grpc/grpc-js';
import { DomainError, type DomainErrorCode } from '../queue/errors.js';
import { DATABASE_BUSY_MESSAGE, DATABASE_UNAVAILABLE_MESSAGE, DatabaseBusy, DatabaseUnavailable } from '../store/errors.js';

/** The one table from domain errors to gRPC status codes (docs/grpc.md, Status codes). */
const CODE_OF: Record<DomainErrorCode, Status> = {
  invalid_argument: Status.INVALID_ARGUMENT,
  payload_too_large: Status.INVALID_ARGUMENT,
  schema_violation: Status.INVALID_ARGUMENT,
  unauthenticated: Status.UNAUTHENTICATED,
  forbidden: Status.PERMISSION_DENIED,
  not_found: Status.NOT_FOUND,
  conflict: Status.ALREADY_EXISTS,
  topic_not_registered: Status.FAILED_PRECONDITION,
  failed_precondition: Status.FAILED_PRECONDITION,
  queue_full: Status.RESOURCE_EXHAUSTED,
  rate_limited: Status.RESOURCE_EXHAUSTED,
  unavailable: Status.UNAVAILABLE,
};

export type GrpcError = Partial<ServiceError> & { code: Status; details: string };

export function grpcError(code: Status, details: string): GrpcError {
  return { code, details, message: details, metadata: new Metadata() };
}

/**
 * A domain error keeps its safe message; a busy or unavailable database (the store's typed errors,
 * src/store/errors.ts) is UNAVAILABLE; anything else is INTERNAL with a fixed text, because driver messages
 * can carry SQL and schema names. `log` receives what was hidden, at the
 * level HTTP logs it at (a busy database, which the client is told to retry: warn).
 */
export function toGrpcError(err: unknown, log: (err: unknown, what: string, level: 'warn' | 'error') => void): GrpcError {
  if (err instanceof DomainError) return grpcError(CODE_OF[err.code], err.message);
  if (err instanceof DatabaseBusy) {
    log(err, 'database busy', 'warn');
    return grpcError(Status.UNAVAILABLE, DATABASE_BUSY_MESSAGE);
  }
  if (err instanceof DatabaseUnavailable) {
    log(err, 'database unavailable', 'error');
    return grpcError(Status.UNAVAILABLE, DATABASE_UNAVAILABLE_MESSAGE);
  }
  log(err, 'unhandled error', 'error');
  return grpcError(Status.INTERNAL, 'internal error');
}

/** Prometheus label for a status code, e.g. NOT_FOUND. */
export function codeName(code: Status): string {
  return Status[code] ?? String(code);
}
