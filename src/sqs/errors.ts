import { DomainError } from '../queue/errors.js';
import { BodyError } from '../http/body-errors.js';

/**
 * An error as the SQS API answers it: its code (the `__type` after `com.amazonaws.sqs#`), the HTTP status and
 * a message safe to show a client. SDKs pick the exception class from the code.
 */
export class SqsError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
    this.name = 'SqsError';
  }
}

/** The code of the older Query protocol, which `x-amzn-query-error` carries (SDKs fill `error.Code` from it). */
const QUERY_CODES: Record<string, string> = {
  QueueDoesNotExist: 'AWS.SimpleQueueService.NonExistentQueue',
  QueueNameExists: 'QueueAlreadyExists',
  TooManyEntriesInBatchRequest: 'AWS.SimpleQueueService.TooManyEntriesInBatchRequest',
  EmptyBatchRequest: 'AWS.SimpleQueueService.EmptyBatchRequest',
  BatchEntryIdsNotDistinct: 'AWS.SimpleQueueService.BatchEntryIdsNotDistinct',
  InvalidBatchEntryId: 'AWS.SimpleQueueService.InvalidBatchEntryId',
  MessageNotInflight: 'AWS.SimpleQueueService.MessageNotInflight',
  UnsupportedOperation: 'AWS.SimpleQueueService.UnsupportedOperation',
  PurgeQueueInProgress: 'AWS.SimpleQueueService.PurgeQueueInProgress',
};

export const queryCodeOf = (code: string) => QUERY_CODES[code] ?? code;

export const invalidParameter = (message: string) => new SqsError('InvalidParameterValue', message);
export const missingParameter = (name: string) => new SqsError('MissingParameter', `the request must contain the parameter ${name}`);
export const queueDoesNotExist = () => new SqsError('QueueDoesNotExist', 'The specified queue does not exist.');
export const receiptHandleInvalid = () => new SqsError('ReceiptHandleIsInvalid', 'The input receipt handle is invalid.');
export const accessDenied = (message: string) => new SqsError('AccessDenied', message, 403);

/** The one table from domain errors (and anything else thrown) to SQS errors. */
export function sqsErrorOf(err: unknown): SqsError {
  if (err instanceof SqsError) return err;
  if (err instanceof BodyError) return new SqsError(err.status === 413 ? 'RequestEntityTooLarge' : 'SerializationException', err.message, err.status === 415 ? 400 : err.status);
  if (err instanceof DomainError) {
    switch (err.code) {
      case 'invalid_argument':
      case 'schema_violation':
        return invalidParameter(err.message);
      case 'payload_too_large':
        return invalidParameter(err.message);
      case 'unauthenticated':
        return new SqsError('InvalidClientTokenId', 'The security token included in the request is invalid.', 403);
      case 'forbidden':
        return accessDenied(err.message);
      case 'not_found':
      case 'topic_not_registered':
        return queueDoesNotExist();
      case 'conflict':
        return new SqsError('QueueNameExists', err.message);
      case 'failed_precondition':
        return new SqsError('MessageNotInflight', err.message);
      case 'queue_full':
        return new SqsError('OverLimit', err.message, 403);
      case 'rate_limited':
        return new SqsError('RequestThrottled', err.message);
      case 'unavailable':
        return new SqsError('ServiceUnavailable', err.message, 503);
    }
  }
  return new SqsError('InternalFailure', 'internal error', 500);
}
