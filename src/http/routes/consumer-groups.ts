import { sendEmpty, sendJson } from '../respond.js';
import type { RouteTable } from '../router.js';
import type { HttpContext } from '../context.js';
import { requireTopic } from '../middleware/auth.js';
import { route } from '../route-table.js';
import { consumerGroupBody, parseBody } from '../validation.js';

export function consumerGroupRoutes(ctx: HttpContext, router: RouteTable): void {
  // Contract §8: an `admin` grant on the topic covers its consumer groups (admins always).
  const topicAdmin = requireTopic(ctx, 'admin', (req) => req.params.topic);
  const groups = ctx.maintenance.consumerGroups;
  route(ctx, router, '/api/topics/:topic/consumer-groups', {
    GET: async (req, res) => sendJson(res, 200, { items: await groups.list(req.params.topic) }),
    POST: async (req, res) => {
      const { consumer_group } = parseBody(consumerGroupBody, req.body);
      await groups.register(req.params.topic, consumer_group);
      sendEmpty(res, 201);
    },
  }, topicAdmin);
  route(ctx, router, '/api/topics/:topic/consumer-groups/:group', {
    GET: async (req, res) => sendJson(res, 200, await groups.get(req.params.topic, req.params.group)),
    DELETE: async (req, res) => {
      await groups.unregister(req.params.topic, req.params.group);
      sendEmpty(res, 204);
    },
  }, topicAdmin);
}
