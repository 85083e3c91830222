import { sendJson } from '../respond.js';
import type { RouteTable } from '../router.js';
import type { HttpContext } from '../context.js';
import { requireAdmin } from '../middleware/auth.js';
import { route } from '../route-table.js';
import { parseBody, purgeBody } from '../validation.js';

export function topicAdminRoutes(ctx: HttpContext, router: RouteTable): void {
  // Maintenance is admin-only; stats show non-admins only the topics they may read (contract §8).
  const admin = requireAdmin(ctx);
  route(ctx, router, '/api/stats', {
    GET: async (req, res) => {
      const { messages, deliveries } = await ctx.topics.stats();
      const visible = new Set(ctx.auth.visibleTopics(req.principal, 'read', [...new Set([...messages, ...deliveries].map((s) => s.topic))]));
      // `topics` is the spec's list; the groups' deliveries (an extension) are a list of their own.
      sendJson(res, 200, { topics: messages.filter((s) => visible.has(s.topic)), consumer_groups: deliveries.filter((s) => visible.has(s.topic)) });
    },
  });
  route(ctx, router, '/api/topics/:topic/purge', {
    POST: [admin, async (req, res) => {
      const { statuses } = parseBody(purgeBody, req.body);
      sendJson(res, 200, { deleted: await ctx.topics.purge(req.params.topic, statuses) });
    }],
  });
  route(ctx, router, '/api/topics/:topic/messages/by-key/:key', {
    DELETE: [admin, async (req, res) => sendJson(res, 200, { deleted: await ctx.topics.deleteByKey(req.params.topic, String(req.params.key)) })],
  });
}
