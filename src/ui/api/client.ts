import createClient, { type Middleware } from 'openapi-fetch';
import { session } from '../auth/session';
import { setReachable } from './connectivity';
import type { paths } from './openapi';

/** An answer other than 2xx: the service's own `{"error": ...}` message and the status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/**
 * The service's address: the directory the page was loaded from. Behind an Ingress that serves the service
 * under `/conveyor/`, requests go to `/conveyor/api/...`; nothing here assumes the service sits at `/`.
 */
export const baseUrl = new URL('.', document.baseURI).href.replace(/\/$/, '');

let forbidden: (() => void) | undefined;
/** Called on every 403: the user's rights may have changed since the tab learnt them (an admin demoted). */
export function onForbidden(handler: () => void): void {
  forbidden = handler;
}

const middleware: Middleware = {
  onRequest({ request }) {
    const token = session.token();
    if (token) request.headers.set('Authorization', `Bearer ${token}`);
    return request;
  },
  onResponse({ response }) {
    setReachable(response.status !== 502 && response.status !== 504);
    if (response.status === 401) session.expired();
    if (response.status === 403) forbidden?.();
    return response;
  },
  onError() {
    setReachable(false);
  },
};

/** The typed client of the HTTP API (types generated from the service's OpenAPI document). */
export const api = createClient<paths>({ baseUrl });
api.use(middleware);

/** The data of a successful call, else an ApiError with the service's message (for TanStack Query). */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok) return data as T;
  const message = typeof error === 'object' && error !== null && 'error' in error ? String((error as { error: unknown }).error) : response.statusText || `HTTP ${response.status}`;
  throw new ApiError(response.status, message);
}

/** Non-JSON endpoints (`/metrics`): same token, same 401 and reachability handling. */
export async function fetchText(path: string): Promise<string> {
  const headers = new Headers();
  const token = session.token();
  if (token) headers.set('Authorization', `Bearer ${token}`);
  let response: Response;
  try {
    response = await fetch(`${baseUrl}${path}`, { headers });
  } catch (err) {
    setReachable(false);
    throw err;
  }
  setReachable(response.status !== 502 && response.status !== 504);
  if (response.status === 401) session.expired();
  if (!response.ok) throw new ApiError(response.status, response.statusText);
  return response.text();
}
