import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import type { Knex } from 'knex';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import type { MetricsRegistry } from '../metrics/registry.js';
import type { MessageService } from '../queue/messages.js';
import type { CertificateFiles } from '../tls/certificate-files.js';
import type { Tracing } from '../tracing/tracing.js';
import { grpcServerCredentials } from '../tls/grpc-credentials.js';
import type { CallGuard } from './auth.js';
import { DatabaseHealth } from './health.js';
import { grpcLimitOptions } from './limits.js';
import { authenticateFirst } from './authenticate-first.js';
import { withTolerantDecoders } from './malformed.js';
import { requestDecoders } from './request-decoder.js';
import { LOADER_OPTIONS, loadQueuePackage, queueProtoPath, requestTypeNames } from './proto.js';
import { QueueServiceHandlers } from './queue-service.js';
import type { SettledRelay } from './subscribe.js';

export interface GrpcDeps {
  config: Config;
  logger: Logger;
  db: Knex;
  metrics: MetricsRegistry;
  messages: MessageService;
  guard: CallGuard;
  peers?: SettledRelay;
  /** server.tls_* files; absent: plaintext. */
  tls?: CertificateFiles;
  /** Spans of calls and messages; absent or off: none. */
  tracing?: Tracing;
}

export interface RunningGrpcServer {
  port: number;
  close(deadlineMs: number): Promise<void>;
}

function bind(server: grpc.Server, address: string, creds: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => server.bindAsync(address, creds, (err, port) => (err ? reject(err) : resolve(port))));
}

/** QueueService, grpc.health.v1.Health and server reflection on server.grpc_port. */
export async function startGrpcServer(deps: GrpcDeps): Promise<RunningGrpcServer> {
  const { config, metrics } = deps;
  const creds = grpcServerCredentials(deps.tls);
  const handlers = new QueueServiceHandlers({
    logger: deps.logger,
    messages: deps.messages,
    guard: deps.guard,
    peers: deps.peers,
    subscribeStreamsPerUser: config.server.subscribe_streams_per_user,
    duration: metrics.durations('conveyor_grpc_request_duration_seconds', 'gRPC call duration by method and status code (streams: their lifetime)'),
    streams: openStreamsGauge(metrics),
    tracing: deps.tracing?.enabled ? deps.tracing : undefined,
  });
  // The same for every call in every configuration (with auth off the guard lets every call through).
  const interceptors = [authenticateFirst('queue.QueueService', (metadata, peer) => deps.guard(metadata, [], peer), (method, err, started) => handlers.refused(method, err, started))];
  // Channelz is not served here (only health and reflection), and its per-call bookkeeping was the largest
  // allocation of every call: GC pauses in the Subscribe tail (docs/benchmark.md, fourth round).
  const server = new grpc.Server({ ...grpcLimitOptions(config), 'grpc.enable_channelz': 0, interceptors });
  const queue = loadQueuePackage();
  // A nack's error is diagnostic text, often cut short by bytes: text that is not UTF-8 is recorded with
  // U+FFFD, as over HTTP, and the nack goes through (refused, the message would stay held until its visibility
  // timeout). Its id and group hold only ASCII, so a replacement there is refused by their own rules.
  const decoders = requestDecoders(queue.root, LOADER_OPTIONS, new Set(['queue.NackRequest']));
  server.addService(withTolerantDecoders(queue.service, requestTypeNames(queue.definition), decoders), handlers.implementation());

  const health = new DatabaseHealth(deps.db);
  await health.start();
  health.implementation.addToServer(server);
  // Reflection describes both services, so grpcurl can list and call them without local .proto files.
  new ReflectionService(protoLoader.loadSync([queueProtoPath(), healthProtoPath], LOADER_OPTIONS)).addToServer(server);

  const host = config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host;
  const port = await bind(server, `${host}:${config.server.grpc_port}`, creds);

  const close = async (deadlineMs: number) => {
    health.stop();
    handlers.endStreams();
    const stopped = new Promise<boolean>((resolve) => server.tryShutdown(() => resolve(true)));
    const deadline = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), deadlineMs).unref());
    if (!(await Promise.race([stopped, deadline]))) server.forceShutdown();
  };
  return { port, close };
}

/** conveyor_subscribe_streams, at 0 (unlabelled) from start-up: the dashboard's panel reads 0 before the first stream. */
function openStreamsGauge(metrics: MetricsRegistry) {
  const streams = metrics.meter.createUpDownCounter('conveyor_subscribe_streams', { description: 'Open Subscribe streams by topic' });
  streams.add(0);
  return streams;
}
