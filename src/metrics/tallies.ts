import { ValueType, type Attributes } from '@opentelemetry/api';
import type * as resources from '@opentelemetry/resources';
import * as sdkMetrics from '@opentelemetry/sdk-metrics';

/**
 * Counters and histograms that the per-message paths update in plain memory, handed to the Prometheus
 * exporter as cumulative data at each scrape (an OpenTelemetry MetricProducer), so /metrics shows them as it
 * shows any OpenTelemetry instrument. OpenTelemetry's own synchronous instruments hash the attributes of
 * every `add` and `record` (sort the keys, build and JSON-encode an array): with a duration per call and
 * several counters per message, that was the largest single step of the service's own code per Subscribe
 * message (docs/benchmark.md, eighth round). Here a series is found by a key the caller already has (a topic,
 * a method and a status code), and its attributes are built once, when the series is first used.
 */

/** As OpenTelemetry's default: beyond this many series per instrument, one overflow series takes the rest. */
const MAX_SERIES = 2000;
const OVERFLOW: Attributes = { 'otel.metric.overflow': true };

const CUMULATIVE = sdkMetrics.AggregationTemporality.CUMULATIVE;

type HrTime = [number, number];
const hrTime = (ms: number): HrTime => [Math.trunc(ms / 1000), Math.round((ms % 1000) * 1e6)];

interface Series {
  readonly attributes: Attributes;
  readonly startMs: number;
}

export class CounterSeries implements Series {
  total = 0;
  constructor(
    readonly attributes: Attributes,
    readonly startMs: number,
  ) {}

  add(n: number): void {
    this.total += n;
  }
}

export class HistogramSeries implements Series {
  count = 0;
  sum = 0;
  min = Number.POSITIVE_INFINITY;
  max = Number.NEGATIVE_INFINITY;
  /** counts[i]: values in (boundaries[i-1], boundaries[i]]; the last one, above every boundary. */
  readonly counts: number[];

  constructor(
    readonly attributes: Attributes,
    readonly startMs: number,
    private readonly boundaries: readonly number[],
  ) {
    this.counts = new Array<number>(boundaries.length + 1).fill(0);
  }

  record(value: number): void {
    let bucket = 0;
    while (bucket < this.boundaries.length && value > this.boundaries[bucket]) bucket++;
    this.counts[bucket]++;
    this.count++;
    this.sum += value;
    if (value < this.min) this.min = value;
    if (value > this.max) this.max = value;
  }
}

/**
 * The series an instrument shows at 0 while none of its own has been used: a dashboard panel or an alert that
 * reads it finds 0 on a fresh instance instead of "No data" (docs/observability.md). Unlabelled by default;
 * an instrument whose readers select on a label of a known set (a nack's `outcome`) gives one per value. The
 * first real series replaces them: a sum over the instrument never counts a placeholder beside real series.
 */
export type Placeholders = readonly Attributes[];

abstract class Tally<S extends Series> {
  private readonly series = new Map<string, S>();
  private overflow: S | undefined;

  constructor(
    readonly descriptor: sdkMetrics.MetricDescriptor,
    private readonly placeholders: Placeholders = [{}],
  ) {}

  /** The series under `key`, made with `attributesOf(key)` the first time; callers may keep it. */
  of(key: string, attributesOf: (key: string) => Attributes): S {
    const found = this.series.get(key);
    if (found) return found;
    if (this.series.size >= MAX_SERIES) return (this.overflow ??= this.create(OVERFLOW));
    const made = this.create(attributesOf(key));
    this.series.set(key, made);
    return made;
  }

  /** Every series as a data point ending now; the placeholders at 0 while none has been used yet. */
  protected points<V>(endTime: HrTime, value: (series: S) => V) {
    const all = [...this.series.values()];
    if (this.overflow) all.push(this.overflow);
    if (all.length === 0) all.push(...this.placeholders.map((attributes) => this.create(attributes)));
    if (all.length === 0) return undefined;
    return all.map((s) => ({ attributes: s.attributes, startTime: hrTime(s.startMs), endTime, value: value(s) }));
  }

  protected abstract create(attributes: Attributes): S;
  abstract collect(endTime: HrTime): sdkMetrics.MetricData | undefined;
}

export class TallyCounter extends Tally<CounterSeries> {
  protected create(attributes: Attributes): CounterSeries {
    return new CounterSeries(attributes, Date.now());
  }

  collect(endTime: HrTime): sdkMetrics.MetricData | undefined {
    const dataPoints = this.points(endTime, (s) => s.total);
    if (!dataPoints) return undefined;
    const { descriptor } = this;
    return { descriptor, aggregationTemporality: CUMULATIVE, dataPointType: sdkMetrics.DataPointType.SUM, isMonotonic: true, dataPoints };
  }
}

export class TallyHistogram extends Tally<HistogramSeries> {
  constructor(
    descriptor: sdkMetrics.MetricDescriptor,
    private readonly boundaries: readonly number[],
    placeholders?: Placeholders,
  ) {
    super(descriptor, placeholders);
  }

  protected create(attributes: Attributes): HistogramSeries {
    return new HistogramSeries(attributes, Date.now(), this.boundaries);
  }

  collect(endTime: HrTime): sdkMetrics.MetricData | undefined {
    const dataPoints = this.points(endTime, (s) => ({
      buckets: { boundaries: [...this.boundaries], counts: [...s.counts] },
      sum: s.sum,
      count: s.count,
      ...(s.count > 0 ? { min: s.min, max: s.max } : {}),
    }));
    if (!dataPoints) return undefined;
    const { descriptor } = this;
    return { descriptor, aggregationTemporality: CUMULATIVE, dataPointType: sdkMetrics.DataPointType.HISTOGRAM, dataPoints };
  }
}

/** The instruments, and the MetricProducer the exporter collects them through at each scrape. */
export class Tallies implements sdkMetrics.MetricProducer {
  private readonly instruments: Array<Tally<CounterSeries> | Tally<HistogramSeries>> = [];

  constructor(
    private readonly resource: resources.Resource,
    private readonly scopeName: string,
  ) {}

  counter(name: string, description: string, placeholders?: Placeholders): TallyCounter {
    const counter = new TallyCounter({ name, description, unit: '', valueType: ValueType.DOUBLE }, placeholders);
    this.instruments.push(counter);
    return counter;
  }

  histogram(name: string, description: string, unit: string, boundaries: readonly number[], placeholders?: Placeholders): TallyHistogram {
    const histogram = new TallyHistogram({ name, description, unit, valueType: ValueType.DOUBLE }, boundaries, placeholders);
    this.instruments.push(histogram);
    return histogram;
  }

  collect(): Promise<sdkMetrics.CollectionResult> {
    const endTime = hrTime(Date.now());
    const metrics = this.instruments.map((i) => i.collect(endTime)).filter((m): m is sdkMetrics.MetricData => m !== undefined);
    return Promise.resolve({ resourceMetrics: { resource: this.resource, scopeMetrics: [{ scope: { name: this.scopeName }, metrics }] }, errors: [] });
  }
}
