import { sendJson } from '../respond.js';
import type { RouteTable } from '../router.js';
import type { AuditEntry } from '../../queue/audit.js';
import type { HttpContext } from '../context.js';
import { iso } from '../format.js';
import { requireAdmin } from '../middleware/auth.js';
import { route } from '../route-table.js';
import { auditLogQuery, parseQuery } from '../validation.js';

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

/** The audit trail, newest first (docs/http-api.md); admin only, like users and grants. */
export function auditLogRoutes(ctx: HttpContext, router: RouteTable): void {
  route(ctx, router, '/api/audit-log', {
    GET: [
      requireAdmin(ctx),
      async (req, res) => {
        const { limit, offset, topic, actor } = parseQuery(auditLogQuery, req.query);
        const filter = { topic, actor };
        const page = await ctx.maintenance.audit.list(filter, limit, offset);
        sendJson(res, 200, { items: page.items.map(auditEntryJson), total: page.total, limit, offset });
      },
    ],
  });
}
