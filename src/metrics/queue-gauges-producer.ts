import { ValueType, type Attributes } from '@opentelemetry/api';
import type * as resources from '@opentelemetry/resources';
import * as sdkMetrics from '@opentelemetry/sdk-metrics';
import { within } from '../deadline.js';

export interface QueueGaugeSource {
  /** Depth per topic and status, and the oldest pending message's age per topic; may be cached. */
  snapshot(): Promise<{
    depth: Array<{ topic: string; status: string; count: number }>;
    oldestPendingAgeSeconds: Map<string, number>;
    /** Pending messages per topic whose delay or retry backoff has not passed yet. */
    delayed: Map<string, number>;
    /** Deliveries of registered consumer groups by status (acked ones are bookkeeping, not counted). */
    groupDepth: Array<{ topic: string; consumer_group: string; status: string; count: number }>;
    groupOldestPendingAgeSeconds: Array<{ topic: string; consumer_group: string; ageSeconds: number }>;
  }>;
}

const gauge = (name: string, description: string, unit: string): sdkMetrics.MetricDescriptor => ({ name, description, unit, valueType: ValueType.DOUBLE });
const DEPTH = gauge('conveyor_queue_depth', 'Messages by topic and status', '');
const OLDEST = gauge('conveyor_oldest_pending_age_seconds', 'Age of the oldest pending message per topic', 's');
const DELAYED = gauge('conveyor_delayed_messages', 'Pending messages per topic not yet available: delayed, or a retry backing off', '');
const GROUP_DEPTH = gauge('conveyor_group_depth', 'Deliveries of each registered consumer group by topic and status', '');
const GROUP_OLDEST = gauge('conveyor_group_oldest_pending_age_seconds', 'Age of the oldest message pending for each registered consumer group', 's');
/** Well inside any scrape timeout a user would set (Prometheus's default is 10 s). */
const SNAPSHOT_DEADLINE_MS = 2_000;

/**
 * conveyor_queue_depth and conveyor_oldest_pending_age_seconds, and for consumer groups conveyor_group_depth and
 * conveyor_group_oldest_pending_age_seconds, exactly as the database holds them at the scrape, handed to the
 * exporter as a MetricProducer. OpenTelemetry's observable gauges keep exporting the last value of a series no
 * callback observes any more, so a topic emptied or purged kept its depth and its age for good, and an alert on
 * them fired on until a restart. Here a topic (or group) and status with nothing in it has no series, and while
 * the database cannot be read no such gauge is shown.
 *
 * A scrape waits at most SNAPSHOT_DEADLINE_MS for the database: a database that hangs (no error, no answer) would
 * otherwise hold every scrape past Prometheus's timeout, and the instance would look down (`up` 0, the
 * instance-down alerts firing) while its process is fine. The late snapshot is still cached for the next one.
 */
export class QueueGaugesProducer implements sdkMetrics.MetricProducer {
  private source: QueueGaugeSource | undefined;

  constructor(
    private readonly resource: resources.Resource,
    private readonly scopeName: string,
  ) {}

  observe(source: QueueGaugeSource): void {
    this.source = source;
  }

  async collect(): Promise<sdkMetrics.CollectionResult> {
    const metrics: sdkMetrics.MetricData[] = [];
    // The source logs its failures.
    const snapshot = this.source && (await within(this.source.snapshot().catch(() => undefined), SNAPSHOT_DEADLINE_MS));
    if (snapshot) {
      const endTime = hrNow();
      const point = (attributes: Attributes, value: number) => ({ attributes, startTime: endTime, endTime, value });
      const depth = snapshot.depth.map((row) => point({ topic: row.topic, status: row.status }, row.count));
      const oldest = [...snapshot.oldestPendingAgeSeconds].map(([topic, age]) => point({ topic }, age));
      const delayed = [...snapshot.delayed].map(([topic, count]) => point({ topic }, count));
      const groupDepth = snapshot.groupDepth.map((row) => point({ topic: row.topic, consumer_group: row.consumer_group, status: row.status }, row.count));
      const groupOldest = snapshot.groupOldestPendingAgeSeconds.map((row) => point({ topic: row.topic, consumer_group: row.consumer_group }, row.ageSeconds));
      // A database with no message at all still answers: 0 pending (what the backlog panels and alerts read),
      // so they say 0, not "No data". The ages have nothing to say until a message waits.
      if (depth.length === 0) depth.push(point({ status: 'pending' }, 0));
      if (delayed.length === 0) delayed.push(point({}, 0));
      if (groupDepth.length === 0) groupDepth.push(point({ status: 'pending' }, 0));
      const all = [[DEPTH, depth], [OLDEST, oldest], [DELAYED, delayed], [GROUP_DEPTH, groupDepth], [GROUP_OLDEST, groupOldest]] as const;
      for (const [descriptor, dataPoints] of all) {
        if (dataPoints.length > 0) metrics.push({ descriptor, aggregationTemporality: sdkMetrics.AggregationTemporality.CUMULATIVE, dataPointType: sdkMetrics.DataPointType.GAUGE, dataPoints });
      }
    }
    return { resourceMetrics: { resource: this.resource, scopeMetrics: [{ scope: { name: this.scopeName }, metrics }] }, errors: [] };
  }
}

function hrNow(): [number, number] {
  const ms = Date.now();
  return [Math.trunc(ms / 1000), (ms % 1000) * 1e6];
}
