/** A topic's retry backoff: the base (0 = retry at once) and the cap, in seconds. */
export interface Backoff {
  baseSeconds: number;
  maxSeconds: number;
}

/** Each retry waits its backoff times a factor from 0.9 to 1.1: retries of messages that failed together spread out. */
const JITTER = 0.1;

/**
 * When the retry after the `attempts`-th failed attempt may be claimed: epoch ms, or 0 for at once (base 0,
 * the immediate retry every message had before backoff existed). The wait is min(max, base x 2^(attempts-1))
 * seconds, then the jitter, so a capped wait may be up to 10 % past the cap.
 */
export function retryAt(backoff: Backoff, attempts: number, now: number, random: () => number = Math.random): number {
  if (backoff.baseSeconds <= 0 || attempts < 1) return 0;
  // 2^(attempts-1) passes any cap within 30 doublings; beyond, the exponent only risks Infinity.
  const seconds = Math.min(backoff.maxSeconds, backoff.baseSeconds * 2 ** Math.min(attempts - 1, 30));
  const jittered = seconds * (1 - JITTER + 2 * JITTER * random());
  return jittered <= 0 ? 0 : now + Math.round(jittered * 1000);
}

interface BackoffSettings {
  retry_backoff_seconds: number | null;
  retry_backoff_max_seconds: number | null;
}

/** A topic's backoff: each of its settings, else the server-wide one (queue.retry_backoff_seconds, _max_seconds). */
export function backoffOf(topic: BackoffSettings | undefined, defaults: { retry_backoff_seconds: number; retry_backoff_max_seconds: number }): Backoff {
  return {
    baseSeconds: topic?.retry_backoff_seconds ?? defaults.retry_backoff_seconds,
    maxSeconds: topic?.retry_backoff_max_seconds ?? defaults.retry_backoff_max_seconds,
  };
}
