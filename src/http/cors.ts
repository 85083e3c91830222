import type { RequestListener, ServerResponse } from 'node:http';

/** Every method an operation of the API answers (operations.ts), plus HEAD for GET routes. */
const ALLOW_METHODS = 'GET, HEAD, POST, PUT, DELETE';
/** What a browser client needs to send: a bearer token, a JSON or compressed body, its own request id. */
const ALLOW_HEADERS = 'Authorization, Content-Type, Content-Encoding, X-Request-Id';
/** Response headers a script may read besides the safelisted ones (Content-Type, Content-Length, ...). */
const EXPOSE_HEADERS = 'Retry-After, X-Request-Id, Allow';
/** How long a browser may reuse a preflight's answer (browsers cap it at 2 hours or less anyway). */
const MAX_AGE_SECONDS = '600';

const REFUSED = JSON.stringify({ error: 'cross-origin request from an origin not in server.cors_allowed_origins' });

function refusePreflight(res: ServerResponse): void {
  res.writeHead(403, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(REFUSED) });
  res.end(REFUSED);
}

/**
 * CORS for the HTTP API, in front of the route table, so that a preflight is answered before
 * authentication (a browser sends no token with it) and every route gets the same headers.
 *
 * With no allowed origins (the default) no response carries an Access-Control-* header, so browsers keep
 * pages of other sites from reading any answer. A request whose Origin is in the list gets
 * Access-Control-Allow-Origin with that origin (never `*`, never Allow-Credentials: tokens are bearer
 * headers, not cookies). Every preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered
 * here: 204 with the allowed methods and headers for a listed origin, 403 `{"error"}` without any CORS header
 * for any other, so that no route's 401 or 405 is mistaken for an answer to it.
 */
export function withCors(allowedOrigins: readonly string[], listener: RequestListener): RequestListener {
  const allowed = new Set(allowedOrigins);
  return (req, res) => {
    const origin = req.headers.origin;
    const preflight = req.method === 'OPTIONS' && origin !== undefined && req.headers['access-control-request-method'] !== undefined;
    const permitted = origin !== undefined && allowed.has(origin);
    // The answer depends on Origin once CORS is on: a cache must not hand one origin's answer to another.
    if (allowed.size > 0) res.setHeader('Vary', 'Origin');
    if (preflight && !permitted) return refusePreflight(res);
    if (permitted) res.setHeader('Access-Control-Allow-Origin', origin);
    if (preflight) {
      res.setHeader('Access-Control-Allow-Methods', ALLOW_METHODS);
      res.setHeader('Access-Control-Allow-Headers', ALLOW_HEADERS);
      res.setHeader('Access-Control-Max-Age', MAX_AGE_SECONDS);
      res.writeHead(204).end();
      return;
    }
    if (permitted) res.setHeader('Access-Control-Expose-Headers', EXPOSE_HEADERS);
    listener(req, res);
  };
}
