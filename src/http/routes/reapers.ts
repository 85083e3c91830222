import { reapReport } from '../../reapers/reapers.js';
import { reaperRun, short } from '../audit-details.js';
import { ADMIN, operation, type Operation } from '../operation.js';
import * as R from '../openapi/responses.js';
import { sendJson } from '../respond.js';
import { scheduleBody } from '../validation.js';

/** Manual runs wait this long for a run on another instance to finish, then do what is left. */
const MANUAL_RUN_WAIT_MS = 30_000;

export const reaperOperations: Operation[] = [
  operation({
    method: 'POST',
    path: '/api/admin/expiry-reaper/run',
    operationId: 'runExpiryReaper',
    summary: 'Mark expired messages now',
    tag: 'reapers',
    access: ADMIN,
    audit: reaperRun('expiry'),
    success: { status: 200, schema: R.ExpiryReaperRun, description: 'How many expired.' },
    handler: async (ctx, _req, res) => sendJson(res, 200, reapReport('expiry', await ctx.maintenance.reapers.run('expiry', MANUAL_RUN_WAIT_MS))),
  }),
  operation({
    method: 'POST',
    path: '/api/admin/delete-reaper/run',
    operationId: 'runDeleteReaper',
    summary: 'Delete expired messages now',
    tag: 'reapers',
    access: ADMIN,
    audit: reaperRun('delete'),
    success: { status: 200, schema: R.Deleted, description: 'How many were deleted.' },
    handler: async (ctx, _req, res) => sendJson(res, 200, reapReport('delete', await ctx.maintenance.reapers.run('delete', MANUAL_RUN_WAIT_MS))),
  }),
  operation({
    method: 'POST',
    path: '/api/admin/archive-reaper/run',
    operationId: 'runArchiveReaper',
    summary: 'Trim archive logs and the audit log now',
    tag: 'reapers',
    access: ADMIN,
    audit: reaperRun('archive'),
    success: { status: 200, schema: R.ArchiveReaperRun, description: 'How many archived messages and audit records were deleted.' },
    // Also trims the audit log to audit.retention_days: {deleted, audit_deleted}.
    handler: async (ctx, _req, res) => sendJson(res, 200, reapReport('archive', await ctx.maintenance.reapers.run('archive', MANUAL_RUN_WAIT_MS))),
  }),
  operation({
    method: 'GET',
    path: '/api/admin/delete-reaper/schedule',
    operationId: 'getDeleteReaperSchedule',
    summary: "The delete reaper's schedule",
    tag: 'reapers',
    access: ADMIN,
    success: { status: 200, schema: R.DeleteReaperSchedule, description: 'The schedule in force.' },
    handler: async (ctx, _req, res) => sendJson(res, 200, await ctx.maintenance.deleteSchedule.view()),
  }),
  operation({
    method: 'PUT',
    path: '/api/admin/delete-reaper/schedule',
    operationId: 'putDeleteReaperSchedule',
    summary: "Set the delete reaper's schedule",
    description: 'Stored in the database: every instance follows it, over queue.delete_reaper_schedule.',
    tag: 'reapers',
    access: ADMIN,
    audit: {
      action: (c) => (typeof c.body.schedule === 'string' && c.body.schedule.trim() === '' ? 'reaper_schedule.clear' : 'reaper_schedule.set'),
      target: () => 'delete',
      details: (c) => ({ schedule: c.ok ? short(c.response?.schedule) : short(c.body.schedule) }),
    },
    body: { name: 'ScheduleRequest', schema: scheduleBody },
    success: { status: 200, schema: R.DeleteReaperSchedule, description: 'The schedule now in force.' },
    errors: [400],
    handler: async (ctx, req, res) => sendJson(res, 200, await ctx.maintenance.deleteSchedule.put(req.body.schedule)),
  }),
];
