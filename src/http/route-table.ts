import type { RequestHandler, Router } from 'express';
import { methodNotAllowed } from './errors.js';
import { assertKnownFields } from './validation.js';

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** Refuses body fields the route does not read (validation.ts, BODY_FIELDS), after the route's grant checks. */
function knownFields(route: string): RequestHandler {
  return (req, _res, next) => {
    assertKnownFields(route, req.body);
    next();
  };
}

/**
 * Registers the handlers of one path and answers every other method with 405 and an Allow header. The last
 * handler of each chain is the route's own; the unknown-field check runs right before it.
 */
export function route(router: Router, path: string, handlers: Partial<Record<Method, RequestHandler | RequestHandler[]>>): void {
  const r = router.route(path);
  for (const [method, handler] of Object.entries(handlers) as Array<[Method, RequestHandler | RequestHandler[]]>) {
    const chain = Array.isArray(handler) ? [...handler] : [handler];
    chain.splice(chain.length - 1, 0, knownFields(`${method} ${path}`));
    if (method === 'GET') r.get(...chain);
    else if (method === 'POST') r.post(...chain);
    else if (method === 'PUT') r.put(...chain);
    else r.delete(...chain);
  }
  r.all(methodNotAllowed(Object.keys(handlers)));
}
