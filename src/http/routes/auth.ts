import { clientAddress } from '../client-address.js';
import { sendJson } from '../respond.js';
import type { RouteTable } from '../router.js';
import type { HttpContext } from '../context.js';
import { route } from '../route-table.js';

/** Spec Authentication: status and login need no token; refresh needs a still-valid one. */
export function authRoutes(ctx: HttpContext, router: RouteTable): void {
  route(ctx, router, '/api/auth/status', { GET: async (req, res) => sendJson(res, 200, await ctx.auth.status(req.headers.authorization)) });
  route(ctx, router, '/api/auth/login', {
    POST: async (req, res) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const token = await ctx.auth.login(body.username, body.password, clientAddress(req, ctx.config.server.trust_proxy));
      sendJson(res, 200, { token });
    },
  });
  route(ctx, router, '/api/auth/refresh', { POST: async (req, res) => sendJson(res, 200, { token: await ctx.auth.refresh(req.principal) }) });
}
