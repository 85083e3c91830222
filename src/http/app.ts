import express, { type Express } from 'express';
import type { HttpContext } from './context.js';
import { errorHandler, notFoundHandler } from './errors.js';
import { authenticate } from './middleware/auth.js';
import { requestContext } from './middleware/request-context.js';
import { authRoutes } from './routes/auth.js';
import { consumerGroupRoutes } from './routes/consumer-groups.js';
import { messageRoutes } from './routes/messages.js';
import { reaperRoutes } from './routes/reapers.js';
import { replayRoutes } from './routes/replay.js';
import { serviceRoutes } from './routes/service.js';
import { topicAdminRoutes } from './routes/topic-admin.js';
import { topicConfigRoutes } from './routes/topic-configs.js';
import { userRoutes } from './routes/users.js';

/** Bodies of up to 1,000 messages (EnqueueBatch) may be large; everything else stays near one payload. */
const BATCH_BODY_LIMIT = 64 * 1024 * 1024;

/** A payload is counted in bytes after JSON decoding, so escaping may double its size on the wire. */
export function singleBodyLimit(config: HttpContext['config']): number {
  return config.queue.max_payload_bytes * 2 + 64 * 1024;
}

export function createApp(ctx: HttpContext): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', ctx.config.server.trust_proxy);
  app.set('query parser', 'simple');
  app.use(requestContext(ctx.logger, ctx.metrics));
  // Before body parsing, so anonymous callers cost no parsing; every route sees req.principal.
  app.use(authenticate(ctx));
  // JSON whatever the Content-Type says: `curl -d` sends form encoding by default, and nothing here takes forms.
  const singleLimit = singleBodyLimit(ctx.config);
  app.use('/api/messages/batch', express.json({ limit: BATCH_BODY_LIMIT, type: () => true }));
  app.use(express.json({ limit: singleLimit, type: () => true }));
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
  app.use(notFoundHandler);
  app.use(errorHandler());
  return app;
}
