import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Attributes, Counter, Histogram, Meter } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { metrics as sdkMetrics, resources } from '@opentelemetry/sdk-node';
import { observeProcessMetrics } from './process-metrics.js';
import type { MessageEvent, NackOutcome, QueueMetrics, RejectReason } from '../queue/metrics-port.js';

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface QueueGaugeSource {
  /** Depth per topic and status, and the oldest pending message's age per topic; may be cached. */
  snapshot(): Promise<{ depth: Array<{ topic: string; status: string; count: number }>; oldestPendingAgeSeconds: Map<string, number> }>;
}

/**
 * One MeterProvider per server (not the global one), so several servers in one process — the tests —
 * keep their own counts. Served in Prometheus text by the exporter without its own HTTP server.
 */
export class MetricsRegistry implements QueueMetrics {
  readonly meter: Meter;
  private readonly exporter: PrometheusExporter;
  private readonly provider: sdkMetrics.MeterProvider;
  private readonly messageCounters = new Map<MessageEvent, Counter>();
  private readonly nackCounter: Counter;
  private readonly rejectCounter: Counter;
  private readonly claimCounter: Counter;
  private readonly httpDuration: Histogram;
  private readonly stopProcessMetrics: () => void;

  constructor() {
    this.exporter = new PrometheusExporter({ preventServerStart: true });
    this.provider = new sdkMetrics.MeterProvider({
      readers: [this.exporter],
      resource: resources.resourceFromAttributes({ 'service.name': 'conveyor' }),
    });
    this.meter = this.provider.getMeter('conveyor');
    const events: MessageEvent[] = ['enqueued', 'dequeued', 'handed_over', 'acked', 'requeued', 'redelivered', 'superseded', 'expired', 'deleted', 'replayed'];
    for (const event of events) {
      this.messageCounters.set(event, this.meter.createCounter(`conveyor_messages_${event}_total`, { description: `Messages ${event}, by topic` }));
    }
    this.nackCounter = this.meter.createCounter('conveyor_messages_nacked_total', { description: 'Nacks by topic and outcome (retry, failed, dlq)' });
    this.rejectCounter = this.meter.createCounter('conveyor_enqueue_rejected_total', {
      description: 'Rejected enqueues by topic and reason (depth, schema, registration, invalid)',
    });
    this.claimCounter = this.meter.createCounter('conveyor_claims_total', {
      description: 'Claim transactions by topic and result (found: took messages, empty: found none)',
    });
    this.httpDuration = this.meter.createHistogram('conveyor_http_request_duration_seconds', {
      description: 'HTTP request duration by method, route template and status',
      unit: 's',
      advice: { explicitBucketBoundaries: LATENCY_BUCKETS },
    });
    this.stopProcessMetrics = observeProcessMetrics(this.meter);
  }

  message(event: MessageEvent, topic: string, count = 1): void {
    this.messageCounters.get(event)?.add(count, { topic });
  }

  nacked(topic: string, outcome: NackOutcome): void {
    this.nackCounter.add(1, { topic, outcome });
  }

  rejected(topic: string, reason: RejectReason): void {
    this.rejectCounter.add(1, { topic, reason });
  }

  claim(topic: string, found: number): void {
    this.claimCounter.add(1, { topic, result: found > 0 ? 'found' : 'empty' });
  }

  httpRequest(attributes: Attributes, seconds: number): void {
    this.httpDuration.record(seconds, attributes);
  }

  histogram(name: string, description: string): Histogram {
    return this.meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: LATENCY_BUCKETS } });
  }

  observeQueues(source: QueueGaugeSource): void {
    const depth = this.meter.createObservableGauge('conveyor_queue_depth', { description: 'Messages by topic and status' });
    const oldest = this.meter.createObservableGauge('conveyor_oldest_pending_age_seconds', {
      description: 'Age of the oldest pending message per topic',
      unit: 's',
    });
    this.meter.addBatchObservableCallback(
      async (result) => {
        const snapshot = await source.snapshot();
        for (const row of snapshot.depth) result.observe(depth, row.count, { topic: row.topic, status: row.status });
        for (const [topic, age] of snapshot.oldestPendingAgeSeconds) result.observe(oldest, age, { topic });
      },
      [depth, oldest],
    );
  }

  /** GET /metrics, in Prometheus text format. */
  handle(req: IncomingMessage, res: ServerResponse): void {
    this.exporter.getMetricsRequestHandler(req, res);
  }

  async shutdown(): Promise<void> {
    this.stopProcessMetrics();
    await this.provider.shutdown();
  }
}
