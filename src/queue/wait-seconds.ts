import { MAX_WAIT_SECONDS, WAIT_SECONDS_MESSAGE } from './bounds.js';
import { invalid } from './errors.js';

/** A dequeue's wait_seconds (absent: 0, answer at once) in ms; outside 0 to MAX_WAIT_SECONDS, or not an integer: 400. */
export function waitMsOf(seconds: unknown): number {
  if (seconds === undefined || seconds === null) return 0;
  if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < 0 || seconds > MAX_WAIT_SECONDS) throw invalid(WAIT_SECONDS_MESSAGE);
  return seconds * 1000;
}
