import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type TextMapGetter, type TextMapSetter, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import { TRACER_KEY } from './context-keys.js';
import { DeliveredContexts, type StoredContexts } from './delivered-contexts.js';
import type { SpanExport } from './span-export.js';
import type { TraceCarrier } from './trace-metadata.js';


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
  private readonly exporting?: SpanExport;

  static off(): Tracing {
    return new Tracing();
  }

  /**
   * Off without `telemetry.traces_endpoint`. The OpenTelemetry SDK and its OTLP exporter are loaded only when
   * one is set (src/tracing/span-export.ts): hundreds of modules that a start without tracing does not read.
   */
  static async fromConfig(config: Config, logger: Logger, storedContexts?: StoredContexts): Promise<Tracing> {
    if (config.telemetry.traces_endpoint === '') return Tracing.off();
    const { startSpanExport } = await import('./span-export.js');
    return new Tracing(startSpanExport(config.telemetry, logger), storedContexts);
  }

  private constructor(exporting?: SpanExport, storedContexts?: StoredContexts) {
    this.enabled = exporting !== undefined;
    this.exporting = exporting;
    this.storedContexts = storedContexts;
    this.tracer = exporting?.tracer ?? trace.getTracer('conveyor');
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
    await this.exporting?.shutdown();
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
