import type { IncomingMessage } from 'node:http';
import type { HttpContext } from './context.js';

/**
 * The client's address for the login rate limit: the socket's peer, or, with server.trust_proxy on, the
 * first (client-most) address of X-Forwarded-For, as the proxy in front recorded it. Only behind a proxy
 * that sets the header: anyone can send one, so trusting it otherwise lets a client pick its own address.
 */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const header = req.headers['x-forwarded-for'];
    const first = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',').map((a) => a.trim()).find((a) => a !== '');
    if (first !== undefined) return first;
  }
  return req.socket.remoteAddress ?? 'unknown';
}

/** The same as a function of the request alone, made once per server: what the authorizer asks of a failed access key. */
export function clientAddressOf(ctx: Pick<HttpContext, 'config'>): (req: IncomingMessage) => string {
  const trustProxy = ctx.config.server.trust_proxy;
  return (req) => clientAddress(req, trustProxy);
}
