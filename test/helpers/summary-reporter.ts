import { writeFileSync } from 'node:fs';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints the slowest test files, then one plain closing line, "tests: N passed, N failed, N skipped", that CI
 * tooling can read, followed by how many test files failed outside their tests (a hook, or the per-file check
 * for leftover processes).
 */
export default class SummaryReporter implements Reporter {
  private readonly runStart = Date.now();
  /** When each file started, in seconds from the run's start: what ran beside what, when the CPU sat idle. */
  private readonly started = new Map<string, number>();

  onTestModuleStart(module: TestModule): void {
    this.started.set(module.moduleId + '\u0000' + module.project.name, (Date.now() - this.runStart) / 1000);
  }

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
    // Every file's time and start, for planning the run's time budget: TEST_TIMES_FILE=/tmp/times.txt npm test.
    if (process.env.TEST_TIMES_FILE) {
      const all = [...testModules].sort((a, b) => b.diagnostic().duration - a.diagnostic().duration);
      const line = (m: TestModule) =>
        [(m.diagnostic().duration / 1000).toFixed(1), m.project.name, m.moduleId.replace(`${process.cwd()}/`, ''), this.started.get(m.moduleId + '\u0000' + m.project.name)?.toFixed(1) ?? '-'].join('\t');
      writeFileSync(process.env.TEST_TIMES_FILE, all.map(line).join('\n') + '\n');
    }
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped${files}\n`);
  }
}
