import { describe } from 'vitest';
import { galera } from './galera-cluster.js';
import { runs } from './external-components.js';

export * from './galera-cluster.js';

/**
 * `describe` for a suite that needs a Galera cluster: skipped with one printed line when the binaries are
 * missing, except in CI (CI=true), where that is an error, so the suites can never skip silently there.
 */
export function describeGalera(title: string, suite: () => void): void {
  (runs(galera(title)) ? describe : describe.skip)(title, suite);
}
