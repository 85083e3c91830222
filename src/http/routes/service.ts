import { sendJson, sendJsonText } from '../respond.js';
import type { RouteTable } from '../router.js';
import { checkDatabaseReady, NodeNotReady } from '../../store/galera-checks.js';
import { VERSION } from '../../version.js';
import type { HttpContext } from '../context.js';
import { sendError } from '../errors.js';
import { openApiDocument } from '../openapi/document.js';
import { route } from '../route-table.js';

const READINESS_TIMEOUT_MS = 2000;

export function serviceRoutes(ctx: HttpContext, router: RouteTable): void {
  route(ctx, router, '/healthz', { GET: (_req, res) => sendJson(res, 200, { status: 'ok' }) });
  // Extension: ready only while the database answers, so a pod that lost its database leaves the Service; on a
  // Galera cluster also only while its node is ready for application use (wsrep_ready, src/store/galera-checks.ts).
  route(ctx, router, '/readyz', {
    GET: async (_req, res) => {
      const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), READINESS_TIMEOUT_MS).unref());
      try {
        await Promise.race([checkDatabaseReady(ctx.db), timeout]);
        sendJson(res, 200, { status: 'ok' });
      } catch (err) {
        sendError(res, 503, err instanceof NodeNotReady ? err.message : 'database unavailable');
      }
    },
  });
  route(ctx, router, '/api/version', { GET: (_req, res) => sendJson(res, 200, { version: VERSION }) });
  // Open like /api/version: it describes the API, not its data. Built here, at start-up, once per process.
  const openApi = openApiDocument().text;
  route(ctx, router, '/api/openapi.json', { GET: (_req, res) => sendJsonText(res, 200, openApi) });
  // With auth on, the authenticate middleware has already demanded a valid token here (spec: access `token`).
  route(ctx, router, '/metrics', { GET: (req, res) => ctx.metrics.handle(req, res) });
}
