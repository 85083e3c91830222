import { invalid } from './errors.js';

const TOPIC_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
export const DLQ_SUFFIX = '.dlq';

export const isDlqTopic = (topic: string) => topic.endsWith(DLQ_SUFFIX);
export const baseTopicOf = (topic: string) => (isDlqTopic(topic) ? topic.slice(0, -DLQ_SUFFIX.length) : topic);

/**
 * Topic names: 1-200 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit. The dead-letter topic
 * of any such name is valid too, so the `.dlq` of a 200-character topic (204 characters) can be dequeued.
 */
export const isValidTopicName = (topic: unknown): topic is string =>
  typeof topic === 'string' && (TOPIC_NAME.test(topic) || (isDlqTopic(topic) && TOPIC_NAME.test(baseTopicOf(topic))));

export function assertTopicName(topic: unknown, field = 'topic'): string {
  if (typeof topic !== 'string' || topic.length === 0) throw invalid(`${field} is required`);
  if (!isValidTopicName(topic)) {
    throw invalid(`${field} must be 1-200 characters of A-Z a-z 0-9 . _ - and start with a letter or digit`);
  }
  return topic;
}

/** Names ending in `.dlq` belong to dead-letter topics: nobody enqueues or configures them directly. */
export function assertNotDeadLetterTopic(topic: string, field = 'topic'): string {
  if (isDlqTopic(topic)) throw invalid(`${field} names ending in ${DLQ_SUFFIX} are reserved for dead-letter topics`);
  return topic;
}
