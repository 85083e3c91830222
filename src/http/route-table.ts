import type { RequestHandler, Router } from 'express';
import { methodNotAllowed } from './errors.js';

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** Registers the handlers of one path and answers every other method with 405 and an Allow header. */
export function route(router: Router, path: string, handlers: Partial<Record<Method, RequestHandler | RequestHandler[]>>): void {
  const r = router.route(path);
  for (const [method, handler] of Object.entries(handlers) as Array<[Method, RequestHandler | RequestHandler[]]>) {
    const chain = Array.isArray(handler) ? handler : [handler];
    if (method === 'GET') r.get(...chain);
    else if (method === 'POST') r.post(...chain);
    else if (method === 'PUT') r.put(...chain);
    else r.delete(...chain);
  }
  r.all(methodNotAllowed(Object.keys(handlers)));
}
