/** What the domain reports; src/metrics implements it with OpenTelemetry, tests may use the no-op. */
export type MessageEvent = 'enqueued' | 'dequeued' | 'acked' | 'requeued' | 'redelivered' | 'superseded' | 'expired' | 'deleted' | 'replayed';
export type NackOutcome = 'retry' | 'failed' | 'dlq';
export type RejectReason = 'depth' | 'schema' | 'registration' | 'invalid';

export interface QueueMetrics {
  message(event: MessageEvent, topic: string, count?: number): void;
  nacked(topic: string, outcome: NackOutcome): void;
  rejected(topic: string, reason: RejectReason): void;
}

export const noopQueueMetrics: QueueMetrics = {
  message: () => {},
  nacked: () => {},
  rejected: () => {},
};
