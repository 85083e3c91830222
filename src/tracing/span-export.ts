import { hostname } from 'node:os';
import type { Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { node as sdkTraceNode } from '@opentelemetry/sdk-node';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace-base';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import { VERSION } from '../version.js';
import { parseHeaders } from './tracing.js';
import { ReportingExporter } from './reporting-exporter.js';
import { enableStatementSpans } from './statement-spans.js';
import { enableTraceLogFields } from './log-fields.js';

/**
 * Spans a collector that is down costs: at most this many wait for export (then new ones are dropped, never the
 * requests), in batches of at most EXPORT_BATCH.
 */
const MAX_QUEUED_SPANS = 2048;
const EXPORT_BATCH = 512;

/**
 * An export (with the exporter's retries of a refused connection or a 503) is given up after two export
 * intervals, from 1 s to 10 s: one taking longer only holds back the next batches while the queue fills.
 */
const exportTimeoutMs = (intervalSeconds: number) => Math.min(10_000, Math.max(1000, Math.round(intervalSeconds * 2000)));

/** 0 traces nothing at all; otherwise a request's sampled or unsampled traceparent decides, and the ratio decides for new traces. */
function samplerOf(ratio: number): Sampler {
  return ratio <= 0 ? new AlwaysOffSampler() : new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
}

let contextManagerRegistered = false;

/** A server's tracer and the pipeline that exports its spans over OTLP/HTTP. */
export interface SpanExport {
  tracer: Tracer;
  /** Exports what is queued, then stops. */
  shutdown(): Promise<void>;
}

export function startSpanExport(settings: Config['telemetry'], logger: Logger): SpanExport {
  const timeoutMillis = exportTimeoutMs(settings.traces_export_interval);
  const exporter = new OTLPTraceExporter({ url: settings.traces_endpoint, headers: parseHeaders(settings.traces_headers), timeoutMillis });
  const processor = new BatchSpanProcessor(new ReportingExporter(exporter, logger), {
    maxQueueSize: MAX_QUEUED_SPANS,
    maxExportBatchSize: EXPORT_BATCH,
    scheduledDelayMillis: Math.max(1, Math.round(settings.traces_export_interval * 1000)),
    exportTimeoutMillis: timeoutMillis,
  });
  const provider = new sdkTraceNode.NodeTracerProvider({
    // The instance: in Kubernetes the pod's name, so a span says which pod did the work.
    resource: resourceFromAttributes({ 'service.name': 'conveyor', 'service.version': VERSION, 'service.instance.id': hostname() }),
    sampler: samplerOf(settings.traces_sample_ratio),
    spanProcessors: [processor],
  });
  // The context manager (AsyncLocalStorage) is the process's, registered once; each server keeps its own
  // provider (several servers share a test process), so the global tracer provider is never used.
  if (!contextManagerRegistered) {
    provider.register({ propagator: null });
    contextManagerRegistered = true;
  }
  enableStatementSpans();
  enableTraceLogFields();
  return { tracer: provider.getTracer('conveyor', VERSION), shutdown: () => provider.shutdown() };
}
