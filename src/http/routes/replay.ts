import { sendJson, sendJsonList } from '../respond.js';
import type { RouteTable } from '../router.js';
import type { HttpContext } from '../context.js';
import { iso } from '../format.js';
import { requireAdmin } from '../middleware/auth.js';
import { route } from '../route-table.js';
import { messageLogDeleteQuery, messageLogQuery, parseBody, parseQuery, replayBody } from '../validation.js';
import type { LogEntryRow } from '../../store/message-log.js';

function logEntryJson(entry: LogEntryRow) {
  return {
    id: entry.id,
    topic: entry.topic,
    key: entry.msg_key,
    payload: entry.payload.toString('base64'),
    retry_count: entry.retry_count,
    original_topic: entry.original_topic,
    created_at: iso(entry.created_at),
    acked_at: iso(entry.acked_at),
  };
}

export function replayRoutes(ctx: HttpContext, router: RouteTable): void {
  // Replay and the archive log are admin-only (spec: Replay and message log (admin)).
  const admin = requireAdmin(ctx);
  const archive = ctx.maintenance.archive;
  route(ctx, router, '/api/topics/:topic/message-log', {
    GET: async (req, res) => {
      const { limit, offset } = parseQuery(messageLogQuery, req.query);
      const page = await archive.list(req.params.topic, limit, offset);
      await sendJsonList(res, 200, page.items.map(logEntryJson), { total: page.total, limit, offset });
    },
    DELETE: async (req, res) => sendJson(res, 200, { deleted: await archive.deleteBefore(req.params.topic, parseQuery(messageLogDeleteQuery, req.query).before) }),
  }, admin);
  route(ctx, router, '/api/topics/:topic/replay', {
    POST: async (req, res) => {
      const { from_time } = parseBody(replayBody, req.body);
      const result = await archive.replay(req.params.topic, from_time);
      // The spec's from_time is "" when the request had none; replayed_from (an extension) says where it began.
      sendJson(res, 200, { topic: result.topic, enqueued: result.enqueued, from_time: result.requestedFrom ?? '', replayed_from: result.replayedFrom });
    },
  }, admin);
}
