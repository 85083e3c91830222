import { configChanges, configValues } from '../../queue/audit.js';
import { TOPIC_CONFIG_FIELDS, type TopicConfigValues } from '../../store/topic-configs.js';
import { currentConfig, fieldsSet, number, topicParam } from '../audit-details.js';
import type { HttpContext } from '../context.js';
import { topicConfigJson, topicSchemaJson } from '../format.js';
import type { AuditCall } from '../middleware/audit.js';
import { grantOnTopicParam, operation, TOKEN, type Operation, type OperationDocs } from '../operation.js';
import * as R from '../openapi/responses.js';
import { sendEmpty, sendJson } from '../respond.js';
import { schemaBody, topicConfigBody } from '../validation.js';

/** An `admin` grant on a topic covers its configuration and schema (docs/auth.md, Grants); admins always. */
const topicAdmin = grantOnTopicParam('admin');

/** A list of the topics' rows, narrowed to those the caller holds an admin grant on (all for admins, or with auth off). */
function listOperation(
  path: string,
  operationId: string,
  summary: string,
  success: OperationDocs['success'],
  rows: (ctx: HttpContext) => Array<{ topic: string; json: unknown }>,
  extra: (ctx: HttpContext) => Record<string, unknown> = () => ({}),
): Operation {
  return operation({
    method: 'GET',
    path,
    operationId,
    summary,
    description: 'Only topics the caller holds an admin grant on (all for admins).',
    tag: 'topics',
    access: TOKEN,
    success,
    handler: (ctx, req, res) => {
      const all = rows(ctx);
      const topics = new Set(ctx.auth.visibleTopics(req.principal, 'admin', all.map((r) => r.topic)));
      sendJson(res, 200, { items: all.filter((r) => topics.has(r.topic)).map((r) => r.json), ...extra(ctx) });
    },
  });
}

export const topicConfigOperations: Operation[] = [
  listOperation('/api/topic-configs', 'listTopicConfigs', 'List topic configurations', { status: 200, schema: R.TopicConfigList, description: 'The configurations, by topic name.' }, (ctx) =>
    ctx.topics.listConfigs().map((row) => ({ topic: row.topic, json: topicConfigJson(row) })),
    // What a null setting means here, so a form can say "empty: 3" rather than "empty: the server default".
    (ctx) => ({
      defaults: {
        max_retries: ctx.config.queue.max_retries,
        message_ttl_seconds: ctx.config.queue.message_ttl,
        retry_backoff_seconds: ctx.config.queue.retry_backoff_seconds,
        retry_backoff_max_seconds: ctx.config.queue.retry_backoff_max_seconds,
        visibility_timeout_seconds: ctx.config.queue.visibility_timeout,
      },
    }),
  ),
  operation({
    method: 'GET',
    path: '/api/topic-configs/:topic',
    operationId: 'getTopicConfig',
    summary: "A topic's configuration",
    tag: 'topics',
    access: topicAdmin,
    success: { status: 200, schema: R.TopicConfig, description: 'The configuration.' },
    errors: [400, 404],
    handler: (ctx, req, res) => sendJson(res, 200, topicConfigJson(ctx.topics.getConfig(req.params.topic))),
  }),
  operation({
    method: 'PUT',
    path: '/api/topic-configs/:topic',
    operationId: 'putTopicConfig',
    summary: "Set a topic's configuration",
    description: 'Replaces every setting: absent or null fields revert to the defaults. 409 while a Kubernetes resource manages it.',
    tag: 'topics',
    access: topicAdmin,
    audit: {
      action: 'topic_config.set',
      topic: topicParam,
      before: (params, ctx) => currentConfig(ctx, params.topic),
      details: (c: AuditCall<TopicConfigValues | null>) =>
        c.ok ? { changed: configChanges(c.state, c.response as TopicConfigValues) } : { fields: fieldsSet(c.body, TOPIC_CONFIG_FIELDS) },
    },
    // The topic service checks the body, after the topic's name, as it does for the controller's writes.
    body: { name: 'TopicConfigRequest', schema: topicConfigBody, parse: 'handler' },
    success: { status: 200, schema: R.TopicConfig, description: 'The stored configuration.' },
    errors: [400, 409],
    handler: async (ctx, req, res) => sendJson(res, 200, topicConfigJson(await ctx.topics.putConfig(req.params.topic, req.body ?? {}))),
  }),
  operation({
    method: 'DELETE',
    path: '/api/topic-configs/:topic',
    operationId: 'deleteTopicConfig',
    summary: "Remove a topic's configuration",
    tag: 'topics',
    access: topicAdmin,
    audit: {
      action: 'topic_config.delete',
      topic: topicParam,
      before: (params, ctx) => currentConfig(ctx, params.topic),
      details: (c: AuditCall<TopicConfigValues | null>) => (c.ok ? { previous: configValues(c.state) } : {}),
    },
    success: { status: 204, schema: 'empty', description: 'Removed (or there was none).' },
    errors: [400, 409],
    handler: async (ctx, req, res) => {
      await ctx.topics.deleteConfig(req.params.topic);
      sendEmpty(res, 204);
    },
  }),
  listOperation('/api/topic-schemas', 'listTopicSchemas', 'List topic schemas', { status: 200, schema: R.TopicSchemaList, description: 'The schemas, by topic name.' }, (ctx) =>
    ctx.topics.listSchemas().map((row) => ({ topic: row.topic, json: topicSchemaJson(row) })),
  ),
  operation({
    method: 'GET',
    path: '/api/topic-schemas/:topic',
    operationId: 'getTopicSchema',
    summary: "A topic's Avro schema",
    tag: 'topics',
    access: topicAdmin,
    success: { status: 200, schema: R.TopicSchema, description: 'The schema.' },
    errors: [400, 404],
    handler: async (ctx, req, res) => sendJson(res, 200, topicSchemaJson(await ctx.topics.getSchema(req.params.topic))),
  }),
  operation({
    method: 'PUT',
    path: '/api/topic-schemas/:topic',
    operationId: 'putTopicSchema',
    summary: "Set a topic's Avro schema",
    description: 'Every later enqueue to the topic must match it (422). 409 while a Kubernetes resource manages it.',
    tag: 'topics',
    access: topicAdmin,
    audit: { action: 'topic_schema.set', topic: topicParam, details: (c) => (c.ok ? { version: number(c.response?.version) } : {}) },
    body: { name: 'TopicSchemaRequest', schema: schemaBody },
    success: { status: 200, schema: R.TopicSchema, description: 'The stored schema, with its new version.' },
    errors: [400, 409],
    handler: async (ctx, req, res) => sendJson(res, 200, topicSchemaJson(await ctx.topics.putSchema(req.params.topic, req.body.schema_json))),
  }),
  operation({
    method: 'DELETE',
    path: '/api/topic-schemas/:topic',
    operationId: 'deleteTopicSchema',
    summary: "Remove a topic's schema",
    tag: 'topics',
    access: topicAdmin,
    audit: { action: 'topic_schema.delete', topic: topicParam },
    success: { status: 204, schema: 'empty', description: 'Removed (or there was none).' },
    errors: [400, 409],
    handler: async (ctx, req, res) => {
      await ctx.topics.deleteSchema(req.params.topic);
      sendEmpty(res, 204);
    },
  }),
];
