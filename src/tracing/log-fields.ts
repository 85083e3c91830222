import { context, trace } from '@opentelemetry/api';

/** What a line outside a traced request gets: nothing (src/log/logger.ts merges it away). */
export const NO_TRACE_FIELDS = Object.freeze({});
let enabled = false;

/** Once a server of this process traces: from then on log lines look for the active span. */
export function enableTraceLogFields(): void {
  enabled = true;
}

/**
 * The fields a log line written inside a traced request gets (pino's mixin, src/log/logger.ts): the trace id,
 * the span id of the request's current span and the trace flags (`01`: sampled, so the trace was exported).
 * Without tracing, one boolean check per log line.
 */
export function traceLogFields(): object {
  if (!enabled) return NO_TRACE_FIELDS;
  const span = trace.getSpan(context.active());
  if (span === undefined) return NO_TRACE_FIELDS;
  const { traceId, spanId, traceFlags } = span.spanContext();
  return { trace_id: traceId, span_id: spanId, trace_flags: traceFlags === 1 ? '01' : '00' };
}
