import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Attributes, Meter } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import * as resources from '@opentelemetry/resources';
import * as sdkMetrics from '@opentelemetry/sdk-metrics';
import { observeProcessMetrics } from './process-metrics.js';
import { QueueGaugesProducer, type QueueGaugeSource } from './queue-gauges-producer.js';
import { Tallies, type Placeholders, type TallyCounter, type TallyHistogram } from './tallies.js';
import type { MessageEvent, NackOutcome, QueueMetrics, RejectReason } from '../queue/metrics-port.js';

const topicAttributes = (topic: string): Attributes => ({ topic });

const NACK_OUTCOMES: readonly NackOutcome[] = ['retry', 'failed', 'dlq'];
const REJECT_REASONS: readonly RejectReason[] = ['depth', 'schema', 'registration', 'invalid'];

/** One placeholder per value of a label. */
export const labelled = (label: string, values: readonly string[]): Placeholders => values.map((value) => ({ [label]: value }));

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export type { QueueGaugeSource } from './queue-gauges-producer.js';

/**
 * One MeterProvider per server (not the global one), so several servers in one process — the tests —
 * keep their own counts. Served in Prometheus text by the exporter without its own HTTP server.
 */
export class MetricsRegistry implements QueueMetrics {
  readonly meter: Meter;
  private readonly exporter: PrometheusExporter;
  private readonly provider: sdkMetrics.MeterProvider;
  /** What the per-message and per-request paths count (src/metrics/tallies.ts says why not `meter`). */
  private readonly tallies: Tallies;
  private readonly queueGauges: QueueGaugesProducer;
  private readonly messageCounters = new Map<MessageEvent, TallyCounter>();
  private readonly nackCounter: TallyCounter;
  private readonly rejectCounter: TallyCounter;
  private readonly claimCounter: TallyCounter;
  private readonly httpDuration: TallyHistogram;
  private readonly stopProcessMetrics: () => void;

  constructor() {
    const resource = resources.resourceFromAttributes({ 'service.name': 'conveyor' });
    this.tallies = new Tallies(resource, 'conveyor');
    this.queueGauges = new QueueGaugesProducer(resource, 'conveyor');
    this.exporter = new PrometheusExporter({ preventServerStart: true, metricProducers: [this.tallies, this.queueGauges] });
    this.provider = new sdkMetrics.MeterProvider({ readers: [this.exporter], resource });
    this.meter = this.provider.getMeter('conveyor');
    const events: MessageEvent[] = ['enqueued', 'dequeued', 'handed_over', 'acked', 'requeued', 'redelivered', 'superseded', 'expired', 'deleted', 'replayed'];
    for (const event of events) this.messageCounters.set(event, this.tallies.counter(`conveyor_messages_${event}_total`, `Messages ${event}, by topic`));
    // Before the first of each, one 0 per label value the dashboard and alerts select on (`outcome="dlq"`).
    this.nackCounter = this.tallies.counter('conveyor_messages_nacked_total', 'Nacks by topic and outcome (retry, failed, dlq)', labelled('outcome', NACK_OUTCOMES));
    this.rejectCounter = this.tallies.counter(
      'conveyor_enqueue_rejected_total',
      'Rejected enqueues by topic and reason (depth, schema, registration, invalid)',
      labelled('reason', REJECT_REASONS),
    );
    this.claimCounter = this.tallies.counter('conveyor_claims_total', 'Claim transactions by topic and result (found: took messages, empty: found none)', labelled('result', ['found', 'empty']));
    this.httpDuration = this.durations('conveyor_http_request_duration_seconds', 'HTTP request duration by method, route template and status');
    this.stopProcessMetrics = observeProcessMetrics(this.meter);
  }

  message(event: MessageEvent, topic: string, count = 1): void {
    this.messageCounters.get(event)?.of(topic, topicAttributes).add(count);
  }

  nacked(topic: string, outcome: NackOutcome): void {
    this.nackCounter.of(`${outcome} ${topic}`, () => ({ topic, outcome })).add(1);
  }

  rejected(topic: string, reason: RejectReason): void {
    this.rejectCounter.of(`${reason} ${topic}`, () => ({ topic, reason })).add(1);
  }

  claim(topic: string, found: number): void {
    const result = found > 0 ? 'found' : 'empty';
    this.claimCounter.of(`${result} ${topic}`, () => ({ topic, result })).add(1);
  }

  httpRequest(method: string, route: string, status: number, seconds: number): void {
    this.httpDuration.of(`${method} ${status} ${route}`, () => ({ method, route, status: String(status) })).record(seconds);
  }

  /** A counter of a per-request path, tallied as the message counters are (at 0 from start-up: `placeholders`). */
  counter(name: string, description: string, placeholders?: Placeholders): TallyCounter {
    return this.tallies.counter(name, description, placeholders);
  }

  /** A duration histogram in seconds, in the buckets of every other. */
  durations(name: string, description: string, placeholders?: Placeholders): TallyHistogram {
    return this.tallies.histogram(name, description, 's', LATENCY_BUCKETS, placeholders);
  }

  observeQueues(source: QueueGaugeSource): void {
    this.queueGauges.observe(source);
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
