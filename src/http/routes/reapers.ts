import { sendJson } from '../respond.js';
import type { RouteTable } from '../router.js';
import type { HttpContext } from '../context.js';
import { requireAdmin } from '../middleware/auth.js';
import { route } from '../route-table.js';
import { reapReport } from '../../reapers/reapers.js';
import { parseBody, scheduleBody } from '../validation.js';

/** Manual runs wait this long for a run on another instance to finish, then do what is left. */
const MANUAL_RUN_WAIT_MS = 30_000;

export function reaperRoutes(ctx: HttpContext, router: RouteTable): void {
  const admin = requireAdmin(ctx);
  const { reapers, deleteSchedule } = ctx.maintenance;
  route(ctx, router, '/api/admin/expiry-reaper/run', {
    POST: async (_req, res) => sendJson(res, 200, reapReport('expiry', await reapers.run('expiry', MANUAL_RUN_WAIT_MS))),
  }, admin);
  route(ctx, router, '/api/admin/delete-reaper/run', {
    POST: async (_req, res) => sendJson(res, 200, reapReport('delete', await reapers.run('delete', MANUAL_RUN_WAIT_MS))),
  }, admin);
  route(ctx, router, '/api/admin/archive-reaper/run', {
    // Also trims the audit log to audit.retention_days: {deleted, audit_deleted}.
    POST: async (_req, res) => sendJson(res, 200, reapReport('archive', await reapers.run('archive', MANUAL_RUN_WAIT_MS))),
  }, admin);
  route(ctx, router, '/api/admin/delete-reaper/schedule', {
    GET: async (_req, res) => sendJson(res, 200, await deleteSchedule.view()),
    PUT: async (req, res) => {
      const { schedule } = parseBody(scheduleBody, req.body);
      sendJson(res, 200, await deleteSchedule.put(schedule));
    },
  }, admin);
}
