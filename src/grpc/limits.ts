import type { ChannelOptions } from '@grpc/grpc-js';
import type { Config } from '../config/schema.js';
import { BATCH_BODY_LIMIT, singleBodyLimit } from '../http/body-limits.js';

/**
 * What one gRPC client may hold (server.grpc_* keys; docs/security.md, Limits). grpc-js answers a message
 * over a size limit with RESOURCE_EXHAUSTED, and a client beyond max_concurrent_streams waits for a free
 * stream (HTTP/2 SETTINGS). The server pings every connection (keepalive) and closes one whose ping goes
 * unanswered: a vanished client's streams end and free their Subscribe slots. grpc-js does not police the
 * client's pings (no min_ping_interval / ping strikes); node's HTTP/2 layer closes a connection that floods
 * control frames without reading the answers.
 */
export function grpcLimitOptions(config: Config): ChannelOptions {
  const server = config.server;
  return {
    // The largest request HTTP accepts, so both transports take the same messages: an EnqueueBatch as large
    // as a batch body, an Enqueue as large as a single-message body.
    'grpc.max_receive_message_length': Math.max(BATCH_BODY_LIMIT, singleBodyLimit(config)),
    'grpc.max_send_message_length': server.grpc_max_send_message_bytes,
    'grpc.max_concurrent_streams': server.grpc_max_concurrent_streams,
    'grpc.keepalive_time_ms': server.grpc_keepalive_time * 1000,
    'grpc.keepalive_timeout_ms': server.grpc_keepalive_timeout * 1000,
    ...(server.grpc_max_connection_idle > 0 ? { 'grpc.max_connection_idle_ms': server.grpc_max_connection_idle * 1000 } : {}),
  };
}
