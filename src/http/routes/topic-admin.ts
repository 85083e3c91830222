import { Router } from 'express';
import type { HttpContext } from '../context.js';
import { route } from '../route-table.js';
import { parseBody, purgeBody } from '../validation.js';

export function topicAdminRoutes(ctx: HttpContext): Router {
  const router = Router();
  route(router, '/api/stats', { GET: async (_req, res) => void res.json({ topics: await ctx.topics.stats() }) });
  route(router, '/api/topics/:topic/purge', {
    POST: async (req, res) => {
      const { statuses } = parseBody(purgeBody, req.body);
      res.json({ deleted: await ctx.topics.purge(req.params.topic, statuses) });
    },
  });
  route(router, '/api/topics/:topic/messages/by-key/:key', {
    DELETE: async (req, res) => void res.json({ deleted: await ctx.topics.deleteByKey(req.params.topic, String(req.params.key)) }),
  });
  return router;
}
