import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest in a full run (a minute or more of a worker's time in three CI runs), longest
 * first. Without results of an earlier run to sort by (a fresh clone, as CI has), vitest starts larger files
 * first and a project's files after the previous project's, so the Galera project's two longest files
 * started last and ran on alone at the end while the other core sat idle.
 */
const LONGEST = [
  'default:test/ordering-concurrency.test.ts',
  'galera:test/ordering-concurrency.test.ts',
  'default:test/galera-rolling-restart.test.ts',
  'default:test/image.test.ts',
  'default:test/controller-faults.test.ts',
  'galera:test/consumer-groups.test.ts',
  'default:test/ui-auth.test.ts',
  'default:test/galera-multi-primary.test.ts',
  'default:test/config.test.ts',
  'default:test/galera-failover.test.ts',
];

/** Starts the files of LONGEST first, in its order, then every other file in vitest's own order. */
export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = LONGEST.indexOf(`${spec.project.name}:${relative(this.ctx.config.root, spec.moduleId)}`);
      return at === -1 ? LONGEST.length : at;
    };
    return sorted
      .map((spec, order) => ({ spec, order, rank: rank(spec) }))
      .sort((a, b) => a.rank - b.rank || a.order - b.order)
      .map(({ spec }) => spec);
  }
}
