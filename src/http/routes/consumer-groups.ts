import { group, topicParam } from '../audit-details.js';
import { grantOnTopicParam, operation, type Operation } from '../operation.js';
import * as R from '../openapi/responses.js';
import { sendEmpty, sendJson } from '../respond.js';
import { consumerGroupBody } from '../validation.js';

/** An `admin` grant on the topic covers its consumer groups (docs/auth.md, Grants); admins always. */
const topicAdmin = grantOnTopicParam('admin');

export const consumerGroupOperations: Operation[] = [
  operation({
    method: 'GET',
    path: '/api/topics/:topic/consumer-groups',
    operationId: 'listConsumerGroups',
    summary: "A topic's consumer groups",
    tag: 'consumer-groups',
    access: topicAdmin,
    success: { status: 200, schema: R.ConsumerGroupList, description: 'The group names.' },
    errors: [400],
    handler: async (ctx, req, res) => sendJson(res, 200, { items: await ctx.maintenance.consumerGroups.list(req.params.topic) }),
  }),
  operation({
    method: 'POST',
    path: '/api/topics/:topic/consumer-groups',
    operationId: 'registerConsumerGroup',
    summary: 'Register a consumer group',
    description: 'From then on every message enqueued to the topic is delivered to each group.',
    tag: 'consumer-groups',
    access: topicAdmin,
    audit: { action: 'consumer_group.register', topic: topicParam, details: (c) => ({ consumer_group: group(c.body.consumer_group) }) },
    body: { name: 'ConsumerGroupRequest', schema: consumerGroupBody },
    success: { status: 201, schema: 'empty', description: 'Registered.' },
    errors: [400, 409],
    handler: async (ctx, req, res) => {
      await ctx.maintenance.consumerGroups.register(req.params.topic, req.body.consumer_group);
      sendEmpty(res, 201);
    },
  }),
  operation({
    method: 'GET',
    path: '/api/topics/:topic/consumer-groups/:group',
    operationId: 'getConsumerGroup',
    summary: 'One consumer group (extension)',
    tag: 'consumer-groups',
    access: topicAdmin,
    success: { status: 200, schema: R.ConsumerGroup, description: 'The registration and who manages it.' },
    errors: [400, 404],
    handler: async (ctx, req, res) => sendJson(res, 200, await ctx.maintenance.consumerGroups.get(req.params.topic, req.params.group)),
  }),
  operation({
    method: 'DELETE',
    path: '/api/topics/:topic/consumer-groups/:group',
    operationId: 'unregisterConsumerGroup',
    summary: 'Unregister a consumer group',
    tag: 'consumer-groups',
    access: topicAdmin,
    audit: { action: 'consumer_group.unregister', topic: topicParam, details: (c) => ({ consumer_group: group(c.params.group) }) },
    success: { status: 204, schema: 'empty', description: 'Unregistered; its deliveries are gone.' },
    errors: [400, 404, 409],
    handler: async (ctx, req, res) => {
      await ctx.maintenance.consumerGroups.unregister(req.params.topic, req.params.group);
      sendEmpty(res, 204);
    },
  }),
];
