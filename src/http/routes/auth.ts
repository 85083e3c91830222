import { Router } from 'express';
import type { HttpContext } from '../context.js';
import { route } from '../route-table.js';

/** Spec Authentication: status and login need no token; refresh needs a still-valid one. */
export function authRoutes(ctx: HttpContext): Router {
  const router = Router();
  route(ctx, router, '/api/auth/status', { GET: async (req, res) => void res.json(await ctx.auth.status(req.get('authorization'))) });
  route(ctx, router, '/api/auth/login', {
    POST: async (req, res) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      // req.ip is the socket address unless server.trust_proxy is on (express 'trust proxy', set in app.ts).
      const token = await ctx.auth.login(body.username, body.password, req.ip ?? req.socket.remoteAddress ?? 'unknown');
      res.json({ token });
    },
  });
  route(ctx, router, '/api/auth/refresh', { POST: async (req, res) => void res.json({ token: await ctx.auth.refresh(req.principal) }) });
  return router;
}
