import { sendEmpty, sendJson } from '../respond.js';
import type { RouteTable } from '../router.js';
import type { Grant, User } from '../../auth/users.js';
import type { HttpContext } from '../context.js';
import { iso } from '../format.js';
import { requireAdmin } from '../middleware/auth.js';
import { route } from '../route-table.js';
import { consumerGroupGrantBody, createUserBody, grantBody, parseBody, updateUserBody } from '../validation.js';

const userJson = (u: User) => ({ id: u.id, username: u.username, is_admin: u.is_admin, created_at: iso(u.created_at), updated_at: iso(u.updated_at) });

const grantJson = (g: Grant) => ({
  id: g.id,
  user_id: g.user_id,
  action: g.action,
  topic_pattern: g.topic_pattern,
  consumer_group: g.consumer_group,
  created_at: iso(g.created_at),
});

/** Spec Users and Grants: admin only (spec Authorization 9); lists use the key `items` (contract §7). */
export function userRoutes(ctx: HttpContext, router: RouteTable): void {
  const admin = requireAdmin(ctx);
  const users = ctx.users;
  route(ctx, router, '/api/users', {
    GET: [admin, async (_req, res) => sendJson(res, 200, { items: (await users.list()).map(userJson) })],
    POST: [admin, async (req, res) => sendJson(res, 201, userJson(await users.create(parseBody(createUserBody, req.body))))],
  });
  route(ctx, router, '/api/users/:id', {
    PUT: [admin, async (req, res) => sendJson(res, 200, userJson(await users.update(String(req.params.id), parseBody(updateUserBody, req.body))))],
    DELETE: [
      admin,
      async (req, res) => {
        await users.delete(String(req.params.id), req.principal?.userId ?? null);
        sendEmpty(res, 204);
      },
    ],
  });
  route(ctx, router, '/api/users/:id/grants', {
    GET: [admin, async (req, res) => sendJson(res, 200, { items: (await users.grants(String(req.params.id))).map(grantJson) })],
    POST: [admin, async (req, res) => sendJson(res, 201, grantJson(await users.addGrant(String(req.params.id), parseBody(grantBody, req.body))))],
  });
  route(ctx, router, '/api/users/:id/grants/:grantId', {
    DELETE: [
      admin,
      async (req, res) => {
        await users.deleteGrant(String(req.params.id), String(req.params.grantId));
        sendEmpty(res, 204);
      },
    ],
  });
  route(ctx, router, '/api/users/:id/consumer-group-grants', {
    POST: [admin, async (req, res) => sendJson(res, 201, grantJson(await users.addConsumeGrant(String(req.params.id), parseBody(consumerGroupGrantBody, req.body))))],
  });
}
