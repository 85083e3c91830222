import express, { type Express, type RequestHandler } from 'express';
import { AUDITED_ROUTES } from './audited-routes.js';
import type { HttpContext } from './context.js';
import { errorHandler, notFoundHandler } from './errors.js';
import { auditTrail } from './middleware/audit.js';
import { authenticate } from './middleware/auth.js';
import { requestContext } from './middleware/request-context.js';
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
import { assertObjectBody } from './validation.js';

/** Bodies of up to 1,000 messages (EnqueueBatch) may be large; everything else stays near one payload. */
export const BATCH_BODY_LIMIT = 64 * 1024 * 1024;

/** What JSON escaping can make of one payload byte on the wire: a control character becomes `\u0001`. */
export const JSON_ESCAPE_FACTOR = 6;
/** Room for everything in a single-message body besides the payload: topic, key, metadata, whitespace. */
export const BODY_HEADROOM_BYTES = 64 * 1024;

/**
 * Request bodies other than batches (bytes on the wire, after decompression). A payload is counted in bytes
 * after JSON decoding (queue.max_payload_bytes, 413 beyond), while the body carries it JSON-escaped: a
 * quote or backslash takes 2 bytes, a 2-byte UTF-8 character written as `\u00e9` 3 per byte, an emoji as a
 * surrogate pair (`\ud83d\ude00`) 3 per byte, and a control character (`\u0001`) 6. So the limit is
 * 6 x max_payload_bytes + 64 KiB: any payload the payload check accepts fits, however it is escaped
 * (6,356,992 bytes with the default 1 MiB).
 */
export function singleBodyLimit(config: HttpContext['config']): number {
  return config.queue.max_payload_bytes * JSON_ESCAPE_FACTOR + BODY_HEADROOM_BYTES;
}

/**
 * A request with a body that can no longer be read is not served. body-parser takes a request whose
 * connection has gone for one whose body was read already and passes it on without a body; with auth on (a
 * step that waits before parsing) a `POST /api/topics/t/purge {"statuses":["failed"]}` whose client hung up
 * right after sending it, or whose chunked body was malformed, ran with no body: a purge of the default
 * statuses. Checked right before parsing, in the same tick. A request without a body is served as before.
 */
const readableBodies: RequestHandler = (req, _res, next) => {
  const length = req.headers['content-length'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (hasBody && (req.destroyed || !req.socket || !req.socket.readable)) {
    next(Object.assign(new Error('request aborted'), { type: 'request.aborted', status: 400 }));
    return;
  }
  next();
};

/** Every body is a JSON object or nothing (validation.ts); runs once for all routes, right after parsing. */
const objectBodies: RequestHandler = (req, _res, next) => {
  assertObjectBody(req.body);
  next();
};

export function createApp(ctx: HttpContext): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', ctx.config.server.trust_proxy);
  app.set('query parser', 'simple');
  app.use(requestContext(ctx.logger, ctx.metrics));
  // Before body parsing, so anonymous callers cost no parsing; every route sees req.principal.
  app.use(authenticate(ctx));
  // Administrative changes are recorded whatever refuses them later (grants, bodies, managed rows).
  app.use(auditTrail(ctx, AUDITED_ROUTES));
  // JSON whatever the Content-Type says: `curl -d` sends form encoding by default, and nothing here takes forms.
  // Not strict: `null`, `"x"` or `5` parse, so objectBodies can say what is wrong with them (not an object)
  // instead of body-parser calling valid JSON malformed.
  const singleLimit = singleBodyLimit(ctx.config);
  app.use(readableBodies);
  app.use('/api/messages/batch', express.json({ limit: BATCH_BODY_LIMIT, type: () => true, strict: false }));
  app.use(express.json({ limit: singleLimit, type: () => true, strict: false }));
  app.use(objectBodies);
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
  app.use(notFoundHandler);
  app.use(errorHandler());
  return app;
}
