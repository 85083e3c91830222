/**
 * The W3C trace context of a message lives in two reserved metadata keys, named as the W3C headers are, so a
 * consumer hands the delivered metadata to any OpenTelemetry propagator as it is. A producer may set them
 * itself (per message in a batch); with tracing on, the server replaces them with the context of the message's
 * `send` span (docs/observability.md, Tracing).
 */
export const TRACEPARENT_KEY = 'traceparent';
export const TRACESTATE_KEY = 'tracestate';

/** version-traceid-parentid-flags, lowercase hex; an all-zero trace or parent id is invalid (W3C Trace Context). */
const TRACEPARENT = /^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

export function isValidTraceparent(value: unknown): value is string {
  return typeof value === 'string' && value.length === 55 && !value.startsWith('ff') && TRACEPARENT.test(value);
}

/** A plain carrier of a trace context: what a transport read from its headers or metadata, or a message's. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

/** The trace context a message carries, if its traceparent is valid. */
export function traceCarrierOf(metadata: Readonly<Record<string, string>>): TraceCarrier | undefined {
  const traceparent = metadata[TRACEPARENT_KEY];
  if (!isValidTraceparent(traceparent)) return undefined;
  const tracestate = metadata[TRACESTATE_KEY];
  return typeof tracestate === 'string' && tracestate !== '' ? { traceparent, tracestate } : { traceparent };
}
