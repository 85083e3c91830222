import type { z } from 'zod';
import type { AuditEntry } from '../../queue/audit.js';
import { iso } from '../format.js';
import { ADMIN, operation, type Operation } from '../operation.js';
import * as R from '../openapi/responses.js';
import { sendJson } from '../respond.js';
import { auditLogQuery } from '../validation.js';

const auditEntryJson = (e: AuditEntry) => ({
  id: e.id,
  at: iso(e.at),
  actor: e.actor,
  action: e.action,
  topic: e.topic,
  target: e.target,
  result: e.result,
  status: e.status,
  details: e.details,
});

/** The audit trail, newest first (docs/security.md, "Audit log"); admin only, like users and grants. */
export const auditLogOperations: Operation[] = [
  operation({
    method: 'GET',
    path: '/api/audit-log',
    operationId: 'listAuditLog',
    summary: 'The audit trail (extension)',
    description: 'Newest first.',
    tag: 'audit',
    access: ADMIN,
    query: auditLogQuery,
    success: { status: 200, schema: R.AuditLogPage, description: 'A page of audit records.' },
    errors: [400],
    handler: async (ctx, req, res) => {
      const { limit, offset, topic, actor } = req.query as unknown as z.output<typeof auditLogQuery>;
      const page = await ctx.maintenance.audit.list({ topic, actor }, limit, offset);
      sendJson(res, 200, { items: page.items.map(auditEntryJson), total: page.total, limit, offset });
    },
  }),
];
