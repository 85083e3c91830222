import { DEFAULT_PURGE_STATUSES, PURGEABLE_STATUSES } from '../../queue/topics.js';
import { number, topicParam } from '../audit-details.js';
import { ADMIN, operation, TOKEN, type Operation } from '../operation.js';
import * as R from '../openapi/responses.js';
import { sendJson } from '../respond.js';
import { listTopicsQuery, purgeBody } from '../validation.js';
import type { z } from 'zod';

/** Stats show non-admins only the topics they may read; maintenance is admin-only (docs/auth.md). */
export const topicAdminOperations: Operation[] = [
  operation({
    method: 'GET',
    path: '/api/topics',
    operationId: 'listTopics',
    summary: 'Every topic with its depth, groups and manager (extension)',
    description:
      'Every topic that has messages, a configuration, a schema or consumer groups, in name order; only topics the caller may read (all for admins).',
    tag: 'topics',
    access: TOKEN,
    query: listTopicsQuery,
    success: { status: 200, schema: R.TopicPage, description: 'A page of topics; `total` counts every topic the caller may read.' },
    errors: [400],
    handler: async (ctx, req, res) => {
      const { limit, offset } = req.query as unknown as z.output<typeof listTopicsQuery>;
      const page = await ctx.topics.listTopics((topics) => ctx.auth.visibleTopics(req.principal, 'read', topics), limit, offset);
      sendJson(res, 200, { items: page.items, total: page.total, limit, offset });
    },
  }),
  operation({
    method: 'GET',
    path: '/api/stats',
    operationId: 'getStats',
    summary: 'Message counts by topic and status',
    description: 'Only topics the caller may read (all for admins).',
    tag: 'topics',
    access: TOKEN,
    success: { status: 200, schema: R.Stats, description: 'The counts.' },
    handler: async (ctx, req, res) => {
      const { messages, deliveries, lines } = await ctx.topics.stats();
      const visible = new Set(ctx.auth.visibleTopics(req.principal, 'read', [...new Set([...messages, ...deliveries, ...lines].map((s) => s.topic))]));
      // `topics` counts messages; the groups' deliveries and the ordering keys' lines (extensions) are lists of their own.
      sendJson(res, 200, {
        topics: messages.filter((s) => visible.has(s.topic)),
        consumer_groups: deliveries.filter((s) => visible.has(s.topic)),
        ordering: lines.filter((s) => visible.has(s.topic)),
      });
    },
  }),
  operation({
    method: 'POST',
    path: '/api/topics/:topic/purge',
    operationId: 'purgeTopic',
    summary: "Delete a topic's messages by status",
    tag: 'topics',
    access: ADMIN,
    audit: {
      action: 'topic.purge',
      topic: topicParam,
      details: (c) => {
        if (!c.ok) return {};
        const asked = Array.isArray(c.body.statuses) ? c.body.statuses.filter((s) => (PURGEABLE_STATUSES as readonly unknown[]).includes(s)) : [];
        return { statuses: asked.length > 0 ? [...new Set(asked)] : DEFAULT_PURGE_STATUSES, deleted: number(c.response?.deleted) };
      },
    },
    body: { name: 'PurgeRequest', schema: purgeBody, optional: true },
    success: { status: 200, schema: R.Deleted, description: 'How many were deleted.' },
    errors: [400],
    handler: async (ctx, req, res) => sendJson(res, 200, { deleted: await ctx.topics.purge(req.params.topic, req.body.statuses) }),
  }),
  operation({
    method: 'DELETE',
    path: '/api/topics/:topic/messages/by-key/:key',
    operationId: 'deleteMessagesByKey',
    summary: 'Delete the messages holding a key',
    description: 'Whatever their status.',
    tag: 'topics',
    access: ADMIN,
    // The key is what the caller deletes by, and keys are never recorded: the topic and the count only.
    audit: { action: 'topic.delete_by_key', topic: topicParam, details: (c) => (c.ok ? { deleted: number(c.response?.deleted) } : {}) },
    success: { status: 200, schema: R.Deleted, description: 'How many were deleted.' },
    errors: [400],
    handler: async (ctx, req, res) => sendJson(res, 200, { deleted: await ctx.topics.deleteByKey(req.params.topic, req.params.key) }),
  }),
];
