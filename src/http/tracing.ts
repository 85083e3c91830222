import type { ServerResponse } from 'node:http';
import type { RequestTrace, Tracing } from '../tracing/tracing.js';
import type { ApiRequest } from './request.js';

/** Probes and scrapes: every few seconds from every kubelet and Prometheus, traces nobody reads. */
const UNTRACED = new Set(['/healthz', '/readyz', '/metrics']);

/** Whether a request gets a server span: all but probes and scrapes. */
export function isTraced(url: string | undefined): boolean {
  if (url === undefined) return true;
  const query = url.indexOf('?');
  return !UNTRACED.has(query === -1 ? url : url.slice(0, query));
}

const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/**
 * The server span of one HTTP request, the child of the caller's `traceparent` header when it sent one, named
 * and labelled with the route template when the answer is done (never the path or query, which may hold a
 * message key). Whatever the request's work starts runs in its context (app.ts), the access line included: it
 * is written when the answer's write completes, and that write began in the context.
 */
export function traceHttpRequest(tracing: Tracing, req: ApiRequest, res: ServerResponse): RequestTrace {
  const method = req.method ?? 'GET';
  const carrier = { traceparent: first(req.headers.traceparent), tracestate: first(req.headers.tracestate) };
  const requestTrace = tracing.startRequest(method, carrier, { 'http.request.method': method });
  req.trace = requestTrace;
  res.once('close', () => {
    const route = (req.route as { path?: string } | undefined)?.path;
    if (route !== undefined) requestTrace.span.updateName(`${method} ${route}`);
    const status = res.statusCode;
    const attributes = route === undefined ? { 'http.response.status_code': status } : { 'http.route': route, 'http.response.status_code': status };
    requestTrace.end(attributes, !res.writableFinished ? 'aborted' : status >= 500 ? String(status) : undefined);
  });
  return requestTrace;
}
