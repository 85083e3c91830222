import { parsePrometheus, sumBy } from './prometheus';

/** What the overview takes from one scrape of /metrics, per topic. */
export interface MetricsSnapshot {
  at: number;
  enqueued: Map<string, number>;
  acked: Map<string, number>;
}

export interface TopicRates {
  enqueuedPerSecond: Map<string, number>;
  ackedPerSecond: Map<string, number>;
}

export function snapshotFrom(text: string, at: number): MetricsSnapshot {
  const samples = parsePrometheus(text);
  return {
    at,
    enqueued: sumBy(samples, 'conveyor_messages_enqueued_total', 'topic'),
    acked: sumBy(samples, 'conveyor_messages_acked_total', 'topic'),
  };
}

function perSecond(previous: Map<string, number>, current: Map<string, number>, seconds: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const [topic, value] of current) {
    const delta = value - (previous.get(topic) ?? 0);
    // A counter that went down was reset (the service restarted): no rate for this interval.
    if (delta >= 0) out.set(topic, delta / seconds);
  }
  return out;
}

/**
 * Rates between two consecutive scrapes. Counters are per instance: behind a load balancer two scrapes may
 * reach different pods, so the figure is this instance's view, which is what a single-pod install shows.
 */
export function ratesBetween(previous: MetricsSnapshot | undefined, current: MetricsSnapshot): TopicRates | undefined {
  if (!previous) return undefined;
  const seconds = (current.at - previous.at) / 1000;
  if (seconds <= 0) return undefined;
  return { enqueuedPerSecond: perSecond(previous.enqueued, current.enqueued, seconds), ackedPerSecond: perSecond(previous.acked, current.acked, seconds) };
}
