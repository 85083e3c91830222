import { checkDatabaseReady, NodeNotReady } from '../../store/galera-checks.js';
import { VERSION } from '../../version.js';
import { sendError } from '../errors.js';
import { operation, OPEN, TOKEN, type Operation } from '../operation.js';
import * as R from '../openapi/responses.js';
import { sendJson, sendJsonText } from '../respond.js';

const READINESS_TIMEOUT_MS = 2000;

/** Health, readiness, version, metrics, and the OpenAPI document of every operation (`openApiText`). */
export const serviceOperations = (openApiText: () => string): Operation[] => [
  operation({
    method: 'GET',
    path: '/healthz',
    operationId: 'getHealth',
    summary: 'Liveness',
    tag: 'service',
    access: OPEN,
    success: { status: 200, schema: R.Health, description: 'Always, while the process serves.' },
    handler: (_ctx, _req, res) => sendJson(res, 200, { status: 'ok' }),
  }),
  operation({
    method: 'GET',
    path: '/readyz',
    operationId: 'getReadiness',
    summary: 'Readiness (extension)',
    description: 'Ready while the database answers (and, on Galera, while its node is ready); 503 otherwise.',
    tag: 'service',
    access: OPEN,
    success: { status: 200, schema: R.Health, description: 'Ready.' },
    // A pod that lost its database leaves the Service; on a Galera cluster also one whose node is not ready for
    // application use (wsrep_ready, src/store/galera-checks.ts).
    handler: async (ctx, _req, res) => {
      const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), READINESS_TIMEOUT_MS).unref());
      try {
        await Promise.race([checkDatabaseReady(ctx.db), timeout]);
        sendJson(res, 200, { status: 'ok' });
      } catch (err) {
        sendError(res, 503, err instanceof NodeNotReady ? err.message : 'database unavailable');
      }
    },
  }),
  operation({
    method: 'GET',
    path: '/api/version',
    operationId: 'getVersion',
    summary: 'Service version',
    tag: 'service',
    access: OPEN,
    success: { status: 200, schema: R.Version, description: 'The version.' },
    handler: (_ctx, _req, res) => sendJson(res, 200, { version: VERSION }),
  }),
  operation({
    method: 'GET',
    path: '/api/openapi.json',
    operationId: 'getOpenApiDocument',
    summary: 'This OpenAPI document',
    tag: 'service',
    // Open like /api/version: it describes the API, not its data.
    access: OPEN,
    success: { status: 200, schema: R.OpenApiDocument, description: 'The OpenAPI 3.1 document of the HTTP API.' },
    handler: (_ctx, _req, res) => sendJsonText(res, 200, openApiText()),
  }),
  operation({
    method: 'GET',
    path: '/metrics',
    operationId: 'getMetrics',
    summary: 'Prometheus metrics',
    tag: 'service',
    access: TOKEN,
    success: { status: 200, schema: 'text', description: 'Prometheus text exposition format.' },
    handler: (ctx, req, res) => ctx.metrics.handle(req, res),
  }),
];
