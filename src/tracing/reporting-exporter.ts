import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../log/logger.js';
import { RepeatedFailure } from '../log/repeated.js';

/**
 * The OTLP exporter, with its failures in the service's log: once when exports start failing, then at most
 * every 30 s with a count, then once when they work again. The OpenTelemetry SDK reports them to its own
 * diagnostic logger, which is silent unless configured; an unreachable collector would go unnoticed.
 */
export class ReportingExporter implements SpanExporter {
  private readonly failure: RepeatedFailure;

  constructor(
    private readonly exporter: SpanExporter,
    logger: Logger,
  ) {
    this.failure = new RepeatedFailure(logger, { what: 'trace export', consequence: 'spans are dropped until the collector answers' });
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.exporter.export(spans, (result) => {
      if (result.error !== undefined || result.code !== 0) this.failure.fail(result.error ?? new Error('export failed'));
      else this.failure.ok();
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.exporter.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.exporter.forceFlush?.() ?? Promise.resolve();
  }
}
