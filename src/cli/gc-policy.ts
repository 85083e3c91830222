import { setFlagsFromString } from 'node:v8';

/**
 * V8's garbage-collection policy for `conveyor serve`, set by the process itself so that every way of starting
 * it (`npm start`, the image, `conveyor serve` from a shell) gets it; NODE_OPTIONS cannot carry these flags.
 * Both are read by V8 when it decides, not at start-up, so setting them before the service loads is enough.
 *
 * - No allocation-site pretenuring. After a burst of batches (objects that live for a whole batch), V8
 *   decided to allocate the hottest sites of every request directly in the old generation, and kept doing so
 *   when the traffic turned to single messages: the old generation then grew ~10x faster, every scavenge had to
 *   scan the old-to-new pointers of those objects (5x the scavenge time per second), and a 20-50 ms
 *   mark-compact came every few seconds. The service's objects live for one request, which a scavenge frees.
 * - The old generation may grow to 3x what survived the last mark-compact before the next one (V8 picks
 *   1.1-4x by its own measure, ~1.5x here): with ~50 MB live, a full collection every minute at 1,000 msg/s
 *   instead of every few seconds, for at most ~100 MB more heap.
 *
 * Measured in docs/benchmark.md ("Found in the ninth round").
 */
export const SERVE_V8_FLAGS = ['--no-allocation-site-pretenuring', '--heap-growing-percent=200'] as const;

export function applyServeGcPolicy(): void {
  for (const flag of SERVE_V8_FLAGS) setFlagsFromString(flag);
}
