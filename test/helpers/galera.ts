import { describe } from 'vitest';
import { galeraMissing } from './galera-cluster.js';

export * from './galera-cluster.js';

/**
 * `describe` for a suite that needs a Galera cluster: skipped with one printed line when the binaries are
 * missing, except in CI (CI=true), where that is an error, so the suites can never skip silently there.
 */
export function describeGalera(title: string, suite: () => void): void {
  const missing = galeraMissing();
  if (missing && process.env.CI === 'true') throw new Error(`CI=true but ${missing}`);
  if (missing) console.warn(`\n[conveyor tests] ${title}: SKIPPED. ${missing}\n`);
  (missing ? describe.skip : describe)(title, suite);
}
