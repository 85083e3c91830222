import { reapReport } from '../../reapers/reapers.js';
import { reaperRun, short } from '../audit-details.js';
import { ADMIN, operation, type Operation, type OperationDocs } from '../operation.js';
import * as R from '../openapi/responses.js';
import { sendJson } from '../respond.js';
import { scheduleBody } from '../validation.js';

/** Manual runs wait this long for a run on another instance to finish, then do what is left. */
const MANUAL_RUN_WAIT_MS = 30_000;

/** A manual run of a reaper: it waits for a run on another instance, then does what is left. */
const runOperation = (reaper: 'expiry' | 'delete' | 'archive', docs: Pick<OperationDocs, 'operationId' | 'summary' | 'success'>): Operation =>
  operation({
    method: 'POST',
    path: `/api/admin/${reaper}-reaper/run`,
    ...docs,
    tag: 'reapers',
    access: ADMIN,
    audit: reaperRun(reaper),
    handler: async (ctx, _req, res) => sendJson(res, 200, reapReport(reaper, await ctx.maintenance.reapers.run(reaper, MANUAL_RUN_WAIT_MS))),
  });

export const reaperOperations: Operation[] = [
  runOperation('expiry', { operationId: 'runExpiryReaper', summary: 'Mark expired messages now', success: { status: 200, schema: R.ExpiryReaperRun, description: 'How many expired.' } }),
  runOperation('delete', { operationId: 'runDeleteReaper', summary: 'Delete expired messages now', success: { status: 200, schema: R.Deleted, description: 'How many were deleted.' } }),
  // Also trims the audit log to audit.retention_days: {deleted, audit_deleted}.
  runOperation('archive', {
    operationId: 'runArchiveReaper',
    summary: 'Trim archive logs and the audit log now',
    success: { status: 200, schema: R.ArchiveReaperRun, description: 'How many archived messages and audit records were deleted.' },
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
