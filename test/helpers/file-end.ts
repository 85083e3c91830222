/**
 * Work to do when the current test file ends, for helpers that start things on a test's behalf.
 *
 * A worker keeps its modules from one test file to the next (vitest.config.ts, `isolate: false`), so a
 * helper module's top-level `afterAll` would be registered for the first file that imports it and never
 * again. The per-file setup (test/helpers/per-file-setup.ts) runs this list after every file instead.
 */
const pending: Array<() => Promise<void>> = [];

export function onFileEnd(work: () => Promise<void>): void {
  pending.push(work);
}

export async function runFileEnd(): Promise<void> {
  const results = await Promise.allSettled(pending.splice(0).map((work) => work()));
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) throw failed.reason;
}
