import type { LoginAttempt } from '../../auth/authorizer.js';
import { clientAddress } from '../client-address.js';
import type { ApiRequest } from '../request.js';
import { sendJson } from '../respond.js';
import type { RouteTable } from '../router.js';
import type { HttpContext } from '../context.js';
import { route } from '../route-table.js';

/** Spec Authentication: status and login need no token; refresh needs a still-valid one. */
export function authRoutes(ctx: HttpContext, router: RouteTable): void {
  route(ctx, router, '/api/auth/status', { GET: async (req, res) => sendJson(res, 200, await ctx.auth.status(req.headers.authorization)) });
  // Each login request is one attempt, counted before its body is read (contract §8: every attempt counts,
  // whatever its outcome): a body the pipeline refuses (malformed JSON, an unknown field, too large) counts
  // too, and beyond the limit the 429 comes before any of those checks. The login uses the attempt counted.
  const attempts = new WeakMap<ApiRequest, LoginAttempt>();
  route(ctx, router, '/api/auth/login', {
    POST: {
      beforeBody: [
        async (req, _res, next) => {
          attempts.set(req, await ctx.auth.countLoginAttempt(clientAddress(req, ctx.config.server.trust_proxy)));
          next();
        },
      ],
      handlers: async (req, res) => {
        const body = (req.body ?? {}) as Record<string, unknown>;
        const token = await ctx.auth.login(attempts.get(req)!, body.username, body.password);
        sendJson(res, 200, { token });
      },
    },
  });
  route(ctx, router, '/api/auth/refresh', { POST: async (req, res) => sendJson(res, 200, { token: await ctx.auth.refresh(req.principal) }) });
}
