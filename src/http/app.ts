import express, { type Express } from 'express';
import type { HttpContext } from './context.js';
import { errorHandler, notFoundHandler, sendError } from './errors.js';
import { requestContext } from './middleware/request-context.js';
import { authenticated } from './route-table.js';
import { auditLogRoutes } from './routes/audit-log.js';
import { authRoutes } from './routes/auth.js';
import { consumerGroupRoutes } from './routes/consumer-groups.js';
import { messageRoutes } from './routes/messages.js';
import { reaperRoutes } from './routes/reapers.js';
import { replayRoutes } from './routes/replay.js';
import { serviceRoutes } from './routes/service.js';
import { topicAdminRoutes } from './routes/topic-admin.js';
import { topicConfigRoutes } from './routes/topic-configs.js';
import { userRoutes } from './routes/users.js';
import { loadUiAssets } from './ui-assets.js';

export { BATCH_BODY_LIMIT, singleBodyLimit } from './body-limits.js';

/**
 * The HTTP API and the admin UI's files. Each route's chain runs the request pipeline itself
 * (route-table.ts: authentication, audit, body, grants, validation), so the only step in front of routing is
 * the request context (id, access log, duration metric), which every answer needs, 404s included.
 * server.ts puts the hot-route fast path (fast-path.ts) in front of this app.
 */
export function createApp(ctx: HttpContext): Express {
  const app = express();
  app.disable('x-powered-by');
  // Every answer is `Cache-Control: no-store` (security-headers.ts): an ETag, a hash of every body, buys nothing.
  app.set('etag', false);
  app.set('trust proxy', ctx.config.server.trust_proxy);
  app.set('query parser', 'simple');
  app.use(requestContext(ctx.logger, ctx.metrics));
  // The hot routes first: every router before them is walked, path by path, on every request.
  app.use(messageRoutes(ctx));
  app.use(authRoutes(ctx));
  app.use(serviceRoutes(ctx));
  app.use(topicConfigRoutes(ctx));
  app.use(topicAdminRoutes(ctx));
  app.use(consumerGroupRoutes(ctx));
  app.use(replayRoutes(ctx));
  app.use(reaperRoutes(ctx));
  app.use(userRoutes(ctx));
  app.use(auditLogRoutes(ctx));
  // The admin UI's files at `/`, after every API route: the API's paths are never shadowed by a file.
  const ui = loadUiAssets();
  app.use((req, res, next) => {
    if (ui.serve(req, res, req.path)) return;
    if (!ui.available && req.method === 'GET' && req.path === '/') return sendError(res, 404, 'the admin UI is not built; run npm run build');
    next();
  });
  app.use(authenticated(ctx), notFoundHandler);
  app.use(errorHandler());
  return app;
}
