import { ApiError } from '../api/client';

/** What went wrong, as text (never HTML): the service's own message, with a plain reading of the status. */
export function errorText(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 403) return `Permission denied: ${error.message}. Ask an administrator for a grant.`;
    if (error.status === 401) return 'Your session has ended; sign in again.';
    return error.message;
  }
  if (error instanceof TypeError) return 'The service could not be reached.';
  return error instanceof Error ? error.message : String(error);
}

export function ErrorMessage(props: { error: unknown }) {
  if (props.error === null || props.error === undefined) return null;
  return (
    <p className="error" role="alert">
      {errorText(props.error)}
    </p>
  );
}
