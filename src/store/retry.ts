import { isRetryableConflict } from './dialect.js';

/**
 * Runs `work` again when InnoDB picked it as a deadlock victim (1213) or a lock wait timed out (1205).
 * Under concurrent claims and batched acks this happens a few times a minute; the caller never sees it.
 */
export async function withConflictRetry<T>(work: () => Promise<T>, attempts = 8): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (!isRetryableConflict(err) || attempt >= attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
    }
  }
}
