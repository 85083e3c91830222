import type { ApiRequest } from '../request.js';
import { sendEmpty, sendJson } from '../respond.js';
import type { RouteTable } from '../router.js';
import type { HttpContext } from '../context.js';
import { topicConfigJson, topicSchemaJson } from '../format.js';
import { requireTopic } from '../middleware/auth.js';
import { route } from '../route-table.js';
import { parseBody, schemaBody } from '../validation.js';

export function topicConfigRoutes(ctx: HttpContext, router: RouteTable): void {
  // An `admin` grant on a topic covers its configuration and schema (spec Authorization 6); lists are filtered to those topics.
  const topicAdmin = requireTopic(ctx, 'admin', (req) => req.params.topic);
  const visible = <T extends { topic: string }>(req: ApiRequest, rows: T[]) => {
    const topics = new Set(ctx.auth.visibleTopics(req.principal, 'admin', rows.map((r) => r.topic)));
    return rows.filter((r) => topics.has(r.topic));
  };
  route(ctx, router, '/api/topic-configs', { GET: (req, res) => sendJson(res, 200, { items: visible(req, ctx.topics.listConfigs()).map(topicConfigJson) }) });
  route(ctx, router, '/api/topic-configs/:topic', {
    GET: (req, res) => sendJson(res, 200, topicConfigJson(ctx.topics.getConfig(req.params.topic))),
    // The body is checked by the topic service against topicConfigBody, after the topic name (as the controller's writes).
    PUT: async (req, res) => sendJson(res, 200, topicConfigJson(await ctx.topics.putConfig(req.params.topic, req.body ?? {}))),
    DELETE: async (req, res) => {
      await ctx.topics.deleteConfig(req.params.topic);
      sendEmpty(res, 204);
    },
  }, topicAdmin);

  route(ctx, router, '/api/topic-schemas', { GET: (req, res) => sendJson(res, 200, { items: visible(req, ctx.topics.listSchemas()).map(topicSchemaJson) }) });
  route(ctx, router, '/api/topic-schemas/:topic', {
    GET: async (req, res) => sendJson(res, 200, topicSchemaJson(await ctx.topics.getSchema(req.params.topic))),
    PUT: async (req, res) => {
      const { schema_json } = parseBody(schemaBody, req.body);
      sendJson(res, 200, topicSchemaJson(await ctx.topics.putSchema(req.params.topic, schema_json)));
    },
    DELETE: async (req, res) => {
      await ctx.topics.deleteSchema(req.params.topic);
      sendEmpty(res, 204);
    },
  }, topicAdmin);
}
