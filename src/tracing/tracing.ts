import { hostname } from 'node:os';
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type TextMapGetter, type TextMapSetter, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { node as sdkTraceNode } from '@opentelemetry/sdk-node';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace-base';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import { VERSION } from '../version.js';
import { TRACER_KEY } from './context-keys.js';
import { DeliveredContexts, type StoredContexts } from './delivered-contexts.js';
import { ReportingExporter } from './reporting-exporter.js';
import { enableStatementSpans } from './statement-spans.js';
import { enableTraceLogFields } from './log-fields.js';
import type { TraceCarrier } from './trace-metadata.js';


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

const getter: TextMapGetter<TraceCarrier> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key as keyof TraceCarrier],
};
const setter: TextMapSetter<Record<string, string>> = {
  set: (carrier, key, value) => void (carrier[key] = value),
};

/** `name=value,name=value` (as OTEL_EXPORTER_OTLP_HEADERS), values percent-decoded. */
export function parseHeaders(text: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    if (pair.trim() === '') continue;
    if (at <= 0) throw new Error('expected name=value pairs separated by commas');
    const value = pair.slice(at + 1).trim();
    try {
      headers[pair.slice(0, at).trim()] = decodeURIComponent(value);
    } catch {
      headers[pair.slice(0, at).trim()] = value;
    }
  }
  return headers;
}

/** 0 traces nothing at all; otherwise a request's sampled or unsampled traceparent decides, and the ratio decides for new traces. */
function samplerOf(ratio: number): Sampler {
  return ratio <= 0 ? new AlwaysOffSampler() : new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
}

let contextManagerRegistered = false;

/**
 * Spans of the service, exported over OTLP/HTTP (docs/observability.md, Tracing). With no endpoint configured
 * `enabled` is false and nothing else of this class is used: the transports check that one boolean per request
 * and create no span, read no header and activate no context.
 */
export class Tracing {
  readonly enabled: boolean;
  readonly tracer: Tracer;
  /** The trace contexts of messages this instance delivered, for the links of their acks and nacks. */
  readonly delivered = new DeliveredContexts();
  /** Those of messages delivered elsewhere, read for a recorded ack or nack (absent with tracing off). */
  readonly storedContexts?: StoredContexts;
  private readonly propagator = new W3CTraceContextPropagator();
  private readonly provider?: sdkTraceNode.NodeTracerProvider;

  static off(): Tracing {
    return new Tracing(undefined, undefined);
  }

  static fromConfig(config: Config, logger: Logger, storedContexts?: StoredContexts): Tracing {
    return config.telemetry.traces_endpoint === '' ? Tracing.off() : new Tracing(config.telemetry, logger, storedContexts);
  }

  private constructor(settings: Config['telemetry'] | undefined, logger: Logger | undefined, storedContexts?: StoredContexts) {
    if (!settings || !logger) {
      this.enabled = false;
      this.tracer = trace.getTracer('conveyor');
      return;
    }
    this.enabled = true;
    this.storedContexts = storedContexts;
    const timeoutMillis = exportTimeoutMs(settings.traces_export_interval);
    const exporter = new OTLPTraceExporter({ url: settings.traces_endpoint, headers: parseHeaders(settings.traces_headers), timeoutMillis });
    const processor = new BatchSpanProcessor(new ReportingExporter(exporter, logger), {
      maxQueueSize: MAX_QUEUED_SPANS,
      maxExportBatchSize: EXPORT_BATCH,
      scheduledDelayMillis: Math.max(1, Math.round(settings.traces_export_interval * 1000)),
      exportTimeoutMillis: timeoutMillis,
    });
    this.provider = new sdkTraceNode.NodeTracerProvider({
      // The instance: in Kubernetes the pod's name, so a span says which pod did the work.
      resource: resourceFromAttributes({ 'service.name': 'conveyor', 'service.version': VERSION, 'service.instance.id': hostname() }),
      sampler: samplerOf(settings.traces_sample_ratio),
      spanProcessors: [processor],
    });
    // The context manager (AsyncLocalStorage) is the process's, registered once; each server keeps its own
    // provider (several servers share a test process), so the global tracer provider is never used.
    if (!contextManagerRegistered) {
      this.provider.register({ propagator: null });
      contextManagerRegistered = true;
    }
    this.tracer = this.provider.getTracer('conveyor', VERSION);
    enableStatementSpans();
    enableTraceLogFields();
  }

  /** The context a carrier holds (a header's, a message's traceparent), or undefined when it holds none that is valid. */
  extract(carrier: TraceCarrier | undefined): Context | undefined {
    if (!carrier?.traceparent) return undefined;
    const extracted = this.propagator.extract(ROOT_CONTEXT, carrier, getter);
    return trace.getSpanContext(extracted) ? extracted : undefined;
  }

  /** The W3C headers of a span's context. */
  inject(span: Span): Record<string, string> {
    const carrier: Record<string, string> = {};
    this.propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, setter);
    return carrier;
  }

  /** A SERVER span for one HTTP request or gRPC call, the child of the caller's context when it sent one. */
  startRequest(name: string, carrier: TraceCarrier | undefined, attributes: Attributes): RequestTrace {
    const remote = this.extract(carrier);
    const parent = (remote ?? ROOT_CONTEXT).setValue(TRACER_KEY, this.tracer);
    const span = this.tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
    return new RequestTrace(this, span, trace.setSpan(parent, span), remote?.setValue(TRACER_KEY, this.tracer));
  }

  /** A context with no request, for work no request asked for (a Subscribe stream's deliveries). */
  detached(): Context {
    return ROOT_CONTEXT.setValue(TRACER_KEY, this.tracer);
  }

  /** Exports what is queued, then stops (graceful shutdown). */
  async shutdown(): Promise<void> {
    await this.provider?.shutdown();
  }
}

/** One request's server span and the context its work runs in. */
export class RequestTrace {
  constructor(
    readonly tracing: Tracing,
    readonly span: Span,
    /** The server span's context: the parent of the request's own spans. */
    readonly context: Context,
    /** The caller's context (its traceparent), when it sent one: the parent of the `send` spans of its messages. */
    readonly caller: Context | undefined,
  ) {}

  /** Runs `work` (and whatever it awaits) in the request's context: statement spans find their parent there. */
  run<T>(work: () => T): T {
    return context.with(this.context, work);
  }

  /** Ends the span; a failure is marked with its kind only (`error.type`), never its message, which may quote values. */
  end(attributes: Attributes, errorType?: string): void {
    this.span.setAttributes(attributes);
    if (errorType !== undefined) {
      this.span.setAttribute('error.type', errorType);
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    this.span.end();
  }
}

/** What a failure is called on a span: a domain error's code, a driver's error code, else the error's class. */
export function errorTypeOf(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code)) return code;
    const name = (err as { constructor?: { name?: unknown } }).constructor?.name;
    if (typeof name === 'string' && name !== '') return name;
  }
  return 'error';
}
