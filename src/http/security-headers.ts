import type { RequestListener, ServerResponse } from 'node:http';

/**
 * On every answer of the API port and the metrics port, whoever writes it (the route table's pipeline,
 * the metrics exporter, node-server.ts's own error answers):
 * - `X-Content-Type-Options: nosniff`: a browser never runs a JSON body (which may hold a payload someone
 *   enqueued) as HTML or script;
 * - `Referrer-Policy: no-referrer`: nothing served here sends its URL on to another site;
 * - `Cache-Control: no-store`: answers carry tokens, payloads and live state (even /healthz and /metrics are
 *   only true for a moment) so no browser or proxy keeps a copy of any of them (the admin UI's own files, ui-assets.ts, say otherwise for themselves).
 */
const SECURITY_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'no-referrer'],
  ['Cache-Control', 'no-store'],
];

/** Before the response is written: headers passed to writeHead later are merged with these. */
export function setSecurityHeaders(res: ServerResponse): void {
  for (const [name, value] of SECURITY_HEADERS) res.setHeader(name, value);
}

/** The same headers as header lines (each ending in CRLF), for answers written straight to a socket. */
export const RAW_SECURITY_HEADERS = SECURITY_HEADERS.map(([name, value]) => `${name}: ${value}\r\n`).join('');

/** A listener whose every response carries the headers (the metrics port, which has no node-server.ts in front). */
export function withSecurityHeaders(listener: RequestListener): RequestListener {
  return (req, res) => {
    setSecurityHeaders(res);
    listener(req, res);
  };
}
