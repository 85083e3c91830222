import { status as Status, type Metadata } from '@grpc/grpc-js';
import type { RequestTrace, Tracing } from '../tracing/tracing.js';
import { codeName } from './errors.js';

const SERVICE = 'queue.QueueService';

/** The codes that are the server's failure, not the caller's (OpenTelemetry's RPC conventions): the span is an error. */
const SERVER_ERRORS = new Set([Status.UNKNOWN, Status.DEADLINE_EXCEEDED, Status.UNIMPLEMENTED, Status.INTERNAL, Status.UNAVAILABLE, Status.DATA_LOSS]);

const text = (values: unknown[]) => (typeof values[0] === 'string' ? values[0] : undefined);

/** The server span of one call (a Subscribe stream's: its lifetime), the child of the caller's `traceparent` metadata. */
export function traceCall(tracing: Tracing, method: string, metadata: Metadata): RequestTrace {
  const carrier = { traceparent: text(metadata.get('traceparent')), tracestate: text(metadata.get('tracestate')) };
  return tracing.startRequest(`${SERVICE}/${method}`, carrier, { 'rpc.system': 'grpc', 'rpc.service': SERVICE, 'rpc.method': method });
}

export function endCall(trace: RequestTrace, code: Status): void {
  trace.end({ 'rpc.grpc.status_code': code }, SERVER_ERRORS.has(code) ? codeName(code) : undefined);
}
