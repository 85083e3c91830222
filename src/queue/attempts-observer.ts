import type { AttemptResult } from '../store/messages/settle.js';

/**
 * Who else hears of failed attempts the domain settles on its own: src/tracing makes a span of each message
 * whose visibility timeout passed (released by a dequeue or the expiry reaper). Absent with tracing off, so
 * then nothing is made.
 */
export interface AttemptsObserver {
  /** A message released after its visibility timeout: what the attempt decided, its group and trace context. */
  expired(result: AttemptResult): void;
}
