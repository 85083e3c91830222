import { writeFileSync } from 'node:fs';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints the slowest test files, then one plain closing line, "tests: N passed, N failed, N skipped", that CI
 * tooling can read, followed by how many test files failed outside their tests (a hook, or the per-file check
 * for leftover processes).
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    let fileErrors = 0;
    for (const module of testModules) {
      if (module.errors().length > 0) fileErrors++;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
    }
    const files = fileErrors > 0 ? `; ${fileErrors} test file(s) failed outside their tests` : '';
    // The slowest files, for keeping the whole run within its time budget.
    const slowest = [...testModules].sort((a, b) => b.diagnostic().duration - a.diagnostic().duration).slice(0, 12);
    const times = slowest.map((m) => `  ${(m.diagnostic().duration / 1000).toFixed(0).padStart(5)} s  ${m.project.name}  ${m.moduleId.replace(`${process.cwd()}/`, '')}`);
    process.stdout.write(`\nslowest test files:\n${times.join('\n')}\n`);
    // Every file's time, for planning the run's time budget: TEST_TIMES_FILE=/tmp/times.txt npm test.
    if (process.env.TEST_TIMES_FILE) {
      const all = [...testModules].sort((a, b) => b.diagnostic().duration - a.diagnostic().duration);
      writeFileSync(process.env.TEST_TIMES_FILE, all.map((m) => `${(m.diagnostic().duration / 1000).toFixed(1)}\t${m.project.name}\t${m.moduleId.replace(`${process.cwd()}/`, '')}`).join('\n') + '\n');
    }
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped${files}\n`);
  }
}
