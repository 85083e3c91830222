import type { z } from 'zod';
import type { LogEntryRow } from '../../store/message-log.js';
import { number, short, topicParam } from '../audit-details.js';
import { iso } from '../format.js';
import { ADMIN, operation, type Operation } from '../operation.js';
import * as R from '../openapi/responses.js';
import { sendJson, sendJsonList } from '../respond.js';
import { messageLogDeleteQuery, messageLogQuery, replayBody } from '../validation.js';

function logEntryJson(entry: LogEntryRow) {
  return {
    id: entry.id,
    topic: entry.topic,
    key: entry.msg_key,
    ordering_key: entry.ordering_key,
    payload: entry.payload.toString('base64'),
    retry_count: entry.retry_count,
    original_topic: entry.original_topic,
    created_at: iso(entry.created_at),
    acked_at: iso(entry.acked_at),
  };
}

/** Replay and the archive log are admin-only (docs/consumer-groups-replay.md). */
export const replayOperations: Operation[] = [
  operation({
    method: 'GET',
    path: '/api/topics/:topic/message-log',
    operationId: 'listMessageLog',
    summary: "A replayable topic's archive log",
    tag: 'replay',
    access: ADMIN,
    query: messageLogQuery,
    success: { status: 200, schema: R.MessageLogPage, description: 'A page of archived messages, oldest first.' },
    errors: [400],
    handler: async (ctx, req, res) => {
      const { limit, offset } = req.query as unknown as z.output<typeof messageLogQuery>;
      const page = await ctx.maintenance.archive.list(req.params.topic, limit, offset);
      await sendJsonList(res, 200, page.items.map(logEntryJson), { total: page.total, limit, offset });
    },
  }),
  operation({
    method: 'DELETE',
    path: '/api/topics/:topic/message-log',
    operationId: 'deleteMessageLog',
    summary: 'Delete archived messages before a time',
    tag: 'replay',
    access: ADMIN,
    query: messageLogDeleteQuery,
    audit: {
      action: 'message_log.delete',
      topic: topicParam,
      details: (c) => (c.ok ? { before: short(c.query.before), deleted: number(c.response?.deleted) } : {}),
    },
    success: { status: 200, schema: R.Deleted, description: 'How many were deleted.' },
    errors: [400],
    handler: async (ctx, req, res) => {
      const { before } = req.query as unknown as z.output<typeof messageLogDeleteQuery>;
      sendJson(res, 200, { deleted: await ctx.maintenance.archive.deleteBefore(req.params.topic, before) });
    },
  }),
  operation({
    method: 'POST',
    path: '/api/topics/:topic/replay',
    operationId: 'replayTopic',
    summary: 'Enqueue archived messages again',
    description: '422 for a topic that is not replayable, or a from_time that is not RFC 3339 or lies before the window.',
    tag: 'replay',
    access: ADMIN,
    audit: {
      action: 'topic.replay',
      topic: topicParam,
      details: (c) => (c.ok ? { replayed_from: short(c.response?.replayed_from), enqueued: number(c.response?.enqueued) } : {}),
    },
    body: { name: 'ReplayRequest', schema: replayBody, optional: true },
    success: { status: 200, schema: R.ReplayResult, description: 'How many were enqueued.' },
    errors: [400, 422, 429],
    handler: async (ctx, req, res) => {
      const result = await ctx.maintenance.archive.replay(req.params.topic, req.body.from_time);
      // from_time is "" when the request had none; replayed_from (an extension) says where the replay began.
      sendJson(res, 200, { topic: result.topic, enqueued: result.enqueued, from_time: result.requestedFrom ?? '', replayed_from: result.replayedFrom });
    },
  }),
];
