import { Router } from 'express';
import type { HttpContext } from '../context.js';
import { requireTopic } from '../middleware/auth.js';
import { route } from '../route-table.js';
import { consumerGroupBody, parseBody } from '../validation.js';

export function consumerGroupRoutes(ctx: HttpContext): Router {
  const router = Router();
  // Contract §8: an `admin` grant on the topic covers its consumer groups (admins always).
  const topicAdmin = requireTopic(ctx, 'admin', (req) => req.params.topic);
  const groups = ctx.maintenance.consumerGroups;
  route(ctx, router, '/api/topics/:topic/consumer-groups', {
    GET: async (req, res) => void res.json({ items: await groups.list(req.params.topic) }),
    POST: async (req, res) => {
      const { consumer_group } = parseBody(consumerGroupBody, req.body);
      await groups.register(req.params.topic, consumer_group);
      res.status(201).end();
    },
  }, topicAdmin);
  route(ctx, router, '/api/topics/:topic/consumer-groups/:group', {
    GET: async (req, res) => void res.json(await groups.get(req.params.topic, req.params.group)),
    DELETE: async (req, res) => {
      await groups.unregister(req.params.topic, req.params.group);
      res.status(204).end();
    },
  }, topicAdmin);
  return router;
}
