import type { Attributes, UpDownCounter } from '@opentelemetry/api';
import type { LongPollMetrics, WaitEnd } from '../queue/long-poll.js';
import type { MetricsRegistry } from './registry.js';
import type { TallyCounter } from './tallies.js';

const topicAttributes = (topic: string): Attributes => ({ topic });

/**
 * conveyor_long_poll_waits_total{topic}, conveyor_long_poll_wakeups_total{topic,reason} and the gauge
 * conveyor_long_poll_waiting{topic}: dequeues that found nothing and waited, how their waits ended, and how
 * many wait now (bounded per instance by server.max_waiting_dequeues).
 */
export class LongPollTallies implements LongPollMetrics {
  private readonly waits: TallyCounter;
  private readonly wakeups: TallyCounter;
  private readonly waiting: UpDownCounter;

  constructor(registry: MetricsRegistry) {
    this.waits = registry.counter('conveyor_long_poll_waits_total', 'Dequeues that found nothing and waited (long polling), by topic');
    this.wakeups = registry.counter('conveyor_long_poll_wakeups_total', 'Ended long-poll waits by topic and reason (message, timeout, shutdown, gone, error)');
    this.waiting = registry.meter.createUpDownCounter('conveyor_long_poll_waiting', { description: 'Dequeues waiting for messages now (long polling), by topic' });
    // At 0 from start-up, unlabelled: the dashboard's panel reads 0 rather than "No data" before the first wait.
    this.waiting.add(0);
  }

  started(topic: string): void {
    this.waits.of(topic, topicAttributes).add(1);
    this.waiting.add(1, { topic });
  }

  ended(topic: string, how: WaitEnd): void {
    this.wakeups.of(`${how} ${topic}`, () => ({ topic, reason: how })).add(1);
    this.waiting.add(-1, { topic });
  }
}
