import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Knex } from 'knex';
import { startAuth } from './auth/setup.js';
import type { Config } from './config/schema.js';
import { authorizerGuard } from './grpc/auth.js';
import { startGrpcServer } from './grpc/server.js';
import { createApp } from './http/app.js';
import { createHttpServer } from './http/node-server.js';
import { applyHttpLimits, httpLimitsOf } from './http/limits.js';
import { withCors } from './http/cors.js';
import { withSecurityHeaders } from './http/security-headers.js';
import { parseAllowedOrigins } from './config/origins.js';
import type { HttpContext } from './http/context.js';
import { createLogger, type Logger } from './log/logger.js';
import { MetricsRegistry } from './metrics/registry.js';
import { Catalog } from './queue/catalog.js';
import { MessageService } from './queue/messages.js';
import { QueueGauges } from './queue/queue-gauges.js';
import { TopicService } from './queue/topics.js';
import { TopicSignals } from './queue/topic-signals.js';
import { LongPoll } from './queue/long-poll.js';
import { LongPollTallies } from './metrics/long-poll-metrics.js';
import { startMaintenance } from './maintenance.js';
import { RedisPeerRelay } from './pubsub/redis-peer-relay.js';
import { startDatabaseClock, type Clock } from './store/database-clock.js';
import { createDb, describeDb, migrate } from './store/db.js';
import { capabilities, capabilitiesOf } from './store/capabilities.js';
import { checkClusterSchema } from './store/galera-checks.js';
import { checkPacketSize } from './store/packet-size.js';
import { observeRetries } from './store/retry.js';
import { readTraceContexts } from './store/messages/trace-context.js';
import { DbRetryMetrics } from './metrics/db-retry-metrics.js';
import { CertificateFiles, httpTls, tlsPaths } from './tls/certificate-files.js';
import { VERSION } from './version.js';
import { ExpirySpans } from './tracing/expiry-spans.js';
import { Tracing } from './tracing/tracing.js';
import { traceStatements } from './tracing/statement-spans.js';

export interface ServerOptions {
  logger?: Logger;
  /** Injected clock (tests); otherwise the database's (src/store/database-clock.ts). */
  now?: () => number;
  /** Aborted when the process is asked to stop during start-up: ends a wait for another pod's migrations. */
  signal?: AbortSignal;
}

export interface RunningServer {
  httpPort: number;
  grpcPort: number;
  metricsPort?: number;
  db: Knex;
  close(): Promise<void>;
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Tracks open sockets so shutdown can close idle keep-alive connections and, past the deadline, all of them. */
function trackConnections(server: Server): Set<Socket> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return sockets;
}

async function stopHttp(server: Server, deadlineMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // Connections that were busy become idle once their response is written; close them as they do.
  const sweeper = setInterval(() => server.closeIdleConnections(), 50);
  const deadline = new Promise<void>((resolve) => setTimeout(resolve, deadlineMs).unref());
  await Promise.race([closed, deadline]);
  clearInterval(sweeper);
  server.closeAllConnections();
  await closed;
}

/** Starts the whole service: database and migrations, caches, HTTP (and later gRPC), background work. */
export async function startServer(config: Config, options: ServerOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? createLogger(config.log.level);
  // First, so a missing or mismatched certificate stops the start before the database is touched.
  const paths = tlsPaths(config);
  const tls = paths ? CertificateFiles.load(paths, logger) : undefined;
  tls?.watch(config.server.tls_reload_interval);
  let clock: Clock | undefined;
  const db = createDb({ url: config.db.url, poolSize: config.db.pool_size, logger, lockWaitTimeoutSeconds: config.db.lock_wait_timeout });
  try {
    const applied = await migrate(db, logger, options.signal);
    if (applied.length > 0) logger.info({ migrations: applied }, 'applied database migrations');
    // Asked once here, so that no enqueue or ack asks the server what it is.
    await capabilitiesOf(db);
    // Galera: refuse a schema the cluster would not replicate; log the cluster's size and state.
    await checkClusterSchema(db, logger);
    await checkPacketSize(db, config.queue.max_payload_bytes);
    clock = options.now ? undefined : await startDatabaseClock(db, logger);
  } catch (err) {
    await db.destroy();
    throw err;
  }

  const now = options.now ?? clock!.now;
  const metrics = new MetricsRegistry();
  const tracing = await Tracing.fromConfig(config, logger, (ids) => readTraceContexts(db, ids));
  const attemptsObserver = tracing.enabled ? new ExpirySpans(tracing) : undefined;
  if (tracing.enabled) traceStatements(db, describeDb(config.db.url).kind);
  observeRetries(db, new DbRetryMetrics(metrics.meter));
  const catalog = new Catalog(db, config.queue.config_refresh_interval, logger);
  await catalog.start();
  const signals = new TopicSignals();
  const peerRelay = config.redis.url ? await RedisPeerRelay.start(config.redis.url, config.redis.key_prefix, signals, logger) : undefined;
  const longPoll = new LongPoll({
    signals,
    maxWaiting: config.server.max_waiting_dequeues,
    // Another instance's enqueue wakes waiters here only through the relay: without one (or while it is down)
    // a lane re-checks once a second. SQLite has no other instance.
    needsRecheck: capabilities(db).singleWriter ? undefined : () => !peerRelay?.receiving(),
    metrics: new LongPollTallies(metrics),
    now,
  });
  const messages = new MessageService({
    db,
    queue: config.queue,
    catalog,
    metrics,
    signals,
    longPoll,
    now,
    // MySQL: 2 flushes in flight made larger batches than 4 and measured ~7% more enqueues/s with ~20% less
    // database CPU per message (docs/benchmark.md); 1 was as fast but lets one slow flush stall every caller.
    maxConcurrentFlushes: capabilities(db).singleWriter ? 1 : 2,
    attemptsObserver,
    logger,
  });
  const topics = new TopicService({ db, catalog, metrics, now });
  metrics.observeQueues(new QueueGauges(db, 10_000, now, logger));
  const maintenance = await startMaintenance({ config, db, logger, catalog, messages, metrics, signals, now, attemptsObserver });
  const authRuntime = await startAuth(config, db, logger, now, () => peerRelay?.publishChanged('principals'));
  // With Redis, a change made here reaches the other instances' caches at once (docs/configuration.md, redis.url).
  catalog.onOwnChange(() => peerRelay?.publishChanged('catalog'));
  peerRelay?.onChanged((caches) => {
    if (caches.includes('catalog')) void catalog.refreshNow();
    if (caches.includes('principals')) authRuntime.auth.invalidate();
  });

  const ctx: HttpContext = { config, logger, db, metrics, messages, topics, auth: authRuntime.auth, users: authRuntime.users, accessKeys: authRuntime.accessKeys, maintenance, tracing };
  const app = createApp(ctx);
  const httpServer = createHttpServer(withCors(parseAllowedOrigins(config.server.cors_allowed_origins), app.listener), tls && httpTls(tls), app.classes);
  applyHttpLimits(httpServer, httpLimitsOf(config.server), logger);
  trackConnections(httpServer);
  const httpPort = await listen(httpServer, config.server.http_port, config.server.host);
  const grpcServer = await startGrpcServer({ config, logger, db, metrics, messages, guard: authorizerGuard(authRuntime.auth, messages), peers: peerRelay, tls, tracing });
  const grpcPort = grpcServer.port;

  let metricsServer: Server | undefined;
  let metricsPort: number | undefined;
  if (config.metrics.port > 0) {
    // Extension: unauthenticated metrics for in-cluster scraping, on a port the Service need not expose. It
    // stays plaintext with TLS on, and answers the probes too: the kubelet has no client certificate for a
    // port that demands one (mutual TLS).
    metricsServer = createServer(
      app.classes,
      withSecurityHeaders((req, res) => {
        const path = req.url?.split('?')[0];
        if (path === '/metrics') return metrics.handle(req, res);
        if (path === '/healthz' || path === '/readyz') return app.listener(req, res);
        res.writeHead(404, { 'Content-Type': 'application/json' }).end(JSON.stringify({ error: 'not found' }));
      }),
    );
    applyHttpLimits(metricsServer, httpLimitsOf(config.server), logger);
    metricsPort = await listen(metricsServer, config.metrics.port, config.server.host);
  }
  // Everything an operator checks first, in one line: which build, which database (never its credentials), which
  // ports, whether tokens are required and who runs the reapers.
  const database = describeDb(config.db.url);
  logger.info(
    {
      version: VERSION,
      db: database.kind,
      dbLocation: database.location,
      httpPort,
      grpcPort,
      metricsPort: metricsPort ?? null,
      auth: config.auth.enabled,
      tls: tls ? (tls.mutual ? 'mutual' : 'on') : 'off',
      reapers: config.reapers.mode,
    },
    'conveyor listening',
  );

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const deadlineMs = config.server.shutdown_timeout * 1000;
      // Waiting dequeues answer now (empty), so they hold neither the listeners' drain nor the grace period.
      messages.endWaits();
      // The reapers stop with the listeners, not after them: a run (scheduled, or a request's) over a large
      // backlog ends after its current batch instead of holding the listeners' drain past the grace period.
      await Promise.all([stopHttp(httpServer, deadlineMs), grpcServer.close(deadlineMs), metricsServer ? stopHttp(metricsServer, 1000) : undefined, maintenance.stop()]);
      tls?.stop();
      await messages.drain();
      await peerRelay?.close();
      await authRuntime.close();
      catalog.stop();
      clock?.stop();
      await metrics.shutdown();
      // The last spans go out, unless the collector keeps them waiting: shutdown is not held for it.
      await Promise.race([tracing.shutdown().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
      await db.destroy();
      logger.info('conveyor stopped');
    })());

  return { httpPort, grpcPort, metricsPort, db, close };
}
