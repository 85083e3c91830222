import { invalid } from './errors.js';

const GROUP_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** Group names follow the topic name rules: 1-200 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit. */
export function assertConsumerGroupName(group: unknown, field = 'consumer_group'): string {
  if (typeof group !== 'string' || group.length === 0) throw invalid(`${field} is required`);
  if (!GROUP_NAME.test(group)) throw invalid(`${field} must be 1-200 characters of A-Z a-z 0-9 . _ - and start with a letter or digit`);
  return group;
}
