import type express from 'express';
import type { HttpContext } from '../http/context.js';
import { expressSteps } from '../http/request.js';
import { sqsEndpoint } from './endpoint.js';

/**
 * The SQS-compatible API on the HTTP app: `POST /` (where SDKs send every action) and `POST /<account
 * id>/<queue>` (a queue URL's path, where some send theirs). Neither collides with the HTTP API (under
 * /api) or the admin UI (GET). Mounted after the API's operations, and not part of the OpenAPI document: it
 * is another protocol, documented in docs/sqs.md.
 */
export function mountSqs(app: express.Express, ctx: HttpContext): void {
  const sqs = ctx.config.sqs;
  if (!sqs?.enabled) return;
  const endpoint = expressSteps([sqsEndpoint(ctx)]);
  app.post('/', ...endpoint);
  app.post(`/${sqs.account_id}/:queue`, ...endpoint);
}
