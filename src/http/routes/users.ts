import { Router } from 'express';
import type { Grant, User } from '../../auth/users.js';
import { invalid } from '../../queue/errors.js';
import type { HttpContext } from '../context.js';
import { iso } from '../format.js';
import { requireAdmin } from '../middleware/auth.js';
import { route } from '../route-table.js';

const userJson = (u: User) => ({ id: u.id, username: u.username, is_admin: u.is_admin, created_at: iso(u.created_at), updated_at: iso(u.updated_at) });

const grantJson = (g: Grant) => ({
  id: g.id,
  user_id: g.user_id,
  action: g.action,
  topic_pattern: g.topic_pattern,
  consumer_group: g.consumer_group,
  created_at: iso(g.created_at),
});

function objectBody(body: unknown): Record<string, unknown> {
  const value = body ?? {};
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid('request body must be a JSON object');
  return value as Record<string, unknown>;
}

/** Spec Users and Grants: admin only (spec Authorization 9); lists use the key `items` (contract §7). */
export function userRoutes(ctx: HttpContext): Router {
  const router = Router();
  const admin = requireAdmin(ctx);
  const users = ctx.users;
  route(router, '/api/users', {
    GET: [admin, async (_req, res) => void res.json({ items: (await users.list()).map(userJson) })],
    POST: [admin, async (req, res) => void res.status(201).json(userJson(await users.create(objectBody(req.body))))],
  });
  route(router, '/api/users/:id', {
    PUT: [admin, async (req, res) => void res.json(userJson(await users.update(String(req.params.id), objectBody(req.body))))],
    DELETE: [
      admin,
      async (req, res) => {
        await users.delete(String(req.params.id), req.principal?.userId ?? null);
        res.status(204).end();
      },
    ],
  });
  route(router, '/api/users/:id/grants', {
    GET: [admin, async (req, res) => void res.json({ items: (await users.grants(String(req.params.id))).map(grantJson) })],
    POST: [admin, async (req, res) => void res.status(201).json(grantJson(await users.addGrant(String(req.params.id), objectBody(req.body))))],
  });
  route(router, '/api/users/:id/grants/:grantId', {
    DELETE: [
      admin,
      async (req, res) => {
        await users.deleteGrant(String(req.params.id), String(req.params.grantId));
        res.status(204).end();
      },
    ],
  });
  route(router, '/api/users/:id/consumer-group-grants', {
    POST: [admin, async (req, res) => void res.status(201).json(grantJson(await users.addConsumeGrant(String(req.params.id), objectBody(req.body))))],
  });
  return router;
}
