import type { AttemptOutcome } from '../store/messages/settle.js';
import type { MessageRow } from '../store/messages/rows.js';
import { isDlqTopic } from './topic-names.js';

export interface AttemptPolicy {
  /** queue.dlq_threshold: delivery attempts before dead-lettering; 0 disables. */
  dlqThreshold: number;
  /** The topic's max_retries when configured. */
  topicMaxRetries: (topic: string) => number | null | undefined;
}

/**
 * Contract §3, for a nack and for a visibility timeout alike: attempts = retry_count + 1;
 * 1) threshold > 0 and attempts >= threshold: dead-letter; 2) attempts < the message's max_retries: retry;
 * 3) otherwise failed. A dead-letter topic never dead-letters again.
 */
export function decideAttempt(policy: AttemptPolicy, row: MessageRow): AttemptOutcome {
  const attempts = row.retry_count + 1;
  if (!isDlqTopic(row.topic)) {
    const threshold = policy.topicMaxRetries(row.topic) ?? policy.dlqThreshold;
    if (threshold > 0 && attempts >= threshold) return 'dlq';
  }
  return attempts < row.max_retries ? 'retry' : 'failed';
}
