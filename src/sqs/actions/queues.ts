import { z } from 'zod';
import { isValidTopicName } from '../../queue/topic-names.js';
import { sqsAction, type SqsAction } from '../action.js';
import { invalidParameter, SqsError } from '../errors.js';
import { readAttributes, settingsOf } from '../queue-attributes.js';

const attributeMap = z.record(z.string(), z.string());
const queueUrl = { QueueUrl: z.string() };
const MAX_LIST_RESULTS = 1000;

/** A queue name as CreateQueue takes it: a topic name, not a dead-letter topic's (`.dlq` names are reserved). */
function assertQueueName(name: string): void {
  if (!isValidTopicName(name) || name.endsWith('.dlq')) {
    throw invalidParameter('Can only include alphanumeric characters, hyphens, underscores or dots (1-200 characters, not ending in .dlq).');
  }
}

/** Queue management: names, URLs, attributes (on topic configuration), deletion. */
export const queueActions: SqsAction[] = [
  sqsAction({
    name: 'CreateQueue',
    summary: "Creates the topic's configuration from the attributes; the same attributes again answer the existing queue",
    access: { kind: 'grant', action: 'admin' },
    queue: 'QueueName',
    request: z.object({ QueueName: z.string(), Attributes: attributeMap.optional(), tags: z.record(z.string(), z.string()).optional() }),
    audit: { action: 'topic_config.set' },
    handler: async ({ ctx, body, queue, queues, urls }) => {
      assertQueueName(queue);
      const attributes = body.Attributes ?? {};
      if (queue.endsWith('.fifo') && attributes.FifoQueue !== 'true') throw new SqsError('InvalidParameterValue', 'a queue whose name ends in .fifo must be created with FifoQueue=true.');
      const settings = settingsOf(queue, attributes, ctx.config, ctx.config.sqs.account_id, true);
      // As SQS: a new FIFO queue created without ContentBasedDeduplication has it off.
      await queues.create(queue, settings, queue.endsWith('.fifo') ? { content_based_deduplication: false } : {});
      return { QueueUrl: urls.urlOf(queue) };
    },
  }),
  sqsAction({
    name: 'GetQueueUrl',
    summary: 'The URL of a queue by name',
    access: { kind: 'grant', action: 'read' },
    queue: 'QueueName',
    request: z.object({ QueueName: z.string(), QueueOwnerAWSAccountId: z.string().optional() }),
    audit: { notAudited: 'reads only' },
    handler: async ({ ctx, body, queue, queues, urls }) => {
      if (body.QueueOwnerAWSAccountId !== undefined && body.QueueOwnerAWSAccountId !== ctx.config.sqs.account_id) throw new SqsError('QueueDoesNotExist', 'The specified queue does not exist.');
      queues.assertExists(queue);
      return { QueueUrl: urls.urlOf(queue) };
    },
  }),
  sqsAction({
    name: 'ListQueues',
    summary: 'The queues the caller may read, by name prefix, a page at a time (MaxResults, NextToken)',
    access: { kind: 'token' },
    queue: 'none',
    request: z.object({ QueueNamePrefix: z.string().optional(), MaxResults: z.int().min(1).max(MAX_LIST_RESULTS).optional(), NextToken: z.string().optional() }),
    audit: { notAudited: 'reads only' },
    handler: async ({ ctx, body, principal, queues, urls }) => {
      const prefix = body.QueueNamePrefix ?? '';
      const names = ctx.auth.visibleTopics(principal, 'read', queues.list().filter((q) => q.startsWith(prefix)));
      // NextToken: the last name of the previous page, base64url; names sort, so a page starts after it.
      let after = '';
      if (body.NextToken !== undefined) {
        after = Buffer.from(body.NextToken, 'base64url').toString('utf8');
        if (!isValidTopicName(after)) throw invalidParameter('Invalid NextToken.');
      }
      const rest = names.filter((q) => q > after);
      const limit = body.MaxResults ?? MAX_LIST_RESULTS;
      const page = rest.slice(0, limit);
      const out: Record<string, unknown> = { QueueUrls: page.map(urls.urlOf) };
      if (body.MaxResults !== undefined && rest.length > limit) out.NextToken = Buffer.from(page[page.length - 1]).toString('base64url');
      return out;
    },
  }),
  sqsAction({
    name: 'DeleteQueue',
    summary: "Removes the topic's configuration and every message of the topic",
    access: { kind: 'admin' },
    queue: 'QueueUrl',
    request: z.object(queueUrl),
    audit: { action: 'topic_config.delete' },
    handler: async ({ queue, queues }) => {
      queues.assertExists(queue);
      await queues.delete(queue);
      return {};
    },
  }),
  sqsAction({
    name: 'GetQueueAttributes',
    summary: 'Attributes read from the topic configuration and the messages (see Attributes)',
    access: { kind: 'grant', action: 'read' },
    queue: 'QueueUrl',
    request: z.object({ ...queueUrl, AttributeNames: z.array(z.string()).optional() }),
    audit: { notAudited: 'reads only' },
    handler: async ({ ctx, body, queue, queues, urls }) => {
      queues.assertExists(queue);
      const row = ctx.topics.configOf(queue);
      return { Attributes: await readAttributes(queue, body.AttributeNames, row, queues, urls, ctx.config) };
    },
  }),
  sqsAction({
    name: 'SetQueueAttributes',
    summary: 'Changes the topic configuration fields the attributes map onto, keeping the others',
    access: { kind: 'grant', action: 'admin' },
    queue: 'QueueUrl',
    request: z.object({ ...queueUrl, Attributes: attributeMap }),
    audit: { action: 'topic_config.set' },
    handler: async ({ ctx, body, queue, queues }) => {
      queues.assertExists(queue);
      if (queue.endsWith('.dlq')) throw invalidParameter('a dead-letter queue has no attributes of its own to set.');
      await queues.update(queue, settingsOf(queue, body.Attributes, ctx.config, ctx.config.sqs.account_id, false));
      return {};
    },
  }),
  sqsAction({
    name: 'PurgeQueue',
    summary: 'Deletes every pending and in-flight message (as the HTTP purge with its default statuses)',
    access: { kind: 'admin' },
    queue: 'QueueUrl',
    request: z.object(queueUrl),
    audit: { action: 'topic.purge' },
    handler: async ({ ctx, queue, queues }) => {
      queues.assertExists(queue);
      await ctx.topics.purge(queue, undefined);
      return {};
    },
  }),
  sqsAction({
    name: 'ListDeadLetterSourceQueues',
    summary: 'The queue whose dead-letter queue this is, when its RedrivePolicy is set',
    access: { kind: 'grant', action: 'read' },
    queue: 'QueueUrl',
    request: z.object({ ...queueUrl, MaxResults: z.int().min(1).max(MAX_LIST_RESULTS).optional(), NextToken: z.string().optional() }),
    audit: { notAudited: 'reads only' },
    handler: async ({ ctx, queue, queues, urls, principal }) => {
      queues.assertExists(queue);
      return { queueUrls: ctx.auth.visibleTopics(principal, 'read', queues.deadLetterSources(queue)).map(urls.urlOf) };
    },
  }),
];
