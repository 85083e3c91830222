/** What the domain reports; src/metrics implements it with OpenTelemetry, tests may use the no-op. */
export type MessageEvent = 'enqueued' | 'dequeued' | 'handed_over' | 'acked' | 'requeued' | 'redelivered' | 'superseded' | 'expired' | 'deleted' | 'replayed';
export type NackOutcome = 'retry' | 'failed' | 'dlq';
export type RejectReason = 'depth' | 'schema' | 'registration' | 'invalid';

export interface QueueMetrics {
  message(event: MessageEvent, topic: string, count?: number): void;
  nacked(topic: string, outcome: NackOutcome): void;
  rejected(topic: string, reason: RejectReason): void;
  /** One claim transaction and how many messages it took (0: an empty claim). */
  claim(topic: string, found: number): void;
}

export const noopQueueMetrics: QueueMetrics = {
  message: () => {},
  nacked: () => {},
  rejected: () => {},
  claim: () => {},
};
