import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import { excludedForMissingComponents } from './test/helpers/external-components.js';

/**
 * The messaging suites that run again, MySQL variant only, against one node of a three-node Galera cluster
 * (test/helpers/galera-global-setup.ts). `npm test` sets TEST_GALERA=1; a run of single files does not.
 */
const galeraSuites = [
  'enqueue',
  'dequeue',
  'ack',
  'nack-dead-letter',
  'visibility-expiry',
  'requeue',
  'consumer-groups',
  'dedup-keys',
  'ttl',
  'max-depth',
  'replay-message-log',
  'message-order',
  'throughput-limit',
  'topic-configs',
  'concurrency',
  'delayed-messages',
  'retry-backoff',
  'ordering-keys',
  'ordering-concurrency',
];

/**
 * expect.poll waits up to 10 s (vitest's default is 1 s): a browser suite's click reaches the service and
 * comes back rendered well within that on an idle machine, but not always within 1 s on a loaded CI run.
 *
 * isolate: false lets a worker keep the modules it has loaded from one test file to the next. Loading the
 * service's module graph afresh for every file took ~2 s each, 200 s of a full run; every file starts and
 * closes its own servers and databases and restores what it changes in the process (environment, spies);
 * test/helpers/per-file-setup.ts fails a file that leaves a child process running.
 */
const shared = { pool: 'forks', isolate: false, setupFiles: ['test/helpers/per-file-setup.ts'], testTimeout: 60_000, hookTimeout: 120_000, expect: { poll: { timeout: 10_000 } } } as const;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Without Chromium or Prometheus their suites skip with one line naming the install command; under CI=true
    // the run fails instead (test/helpers/external-components.ts, the same rule as MySQL and Galera).
    exclude: [...configDefaults.exclude, ...excludedForMissingComponents(fileURLToPath(new URL('.', import.meta.url)))],
    // Each file starts its own servers and databases; two cores run two files at a time. Three at a time was no
    // faster (a full CI run: 1,405 s against 1,429 s in the same hour). With two the CPU is busy 78 % of a run
    // (sampled every 5 s): the rest is where both files wait on timers at once. Starting the ten longest files
    // first (a custom sequencer) left that at 78 % and the run no shorter (1,447 s against 1,330-1,421).
    ...shared,
    maxWorkers: 2,
    globalSetup: ['test/helpers/global-setup.ts', 'test/helpers/build-global-setup.ts', 'test/helpers/ui-global-setup.ts'],
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    projects: [
      { extends: true, test: { name: 'default' } },
      ...(process.env.TEST_GALERA === '1'
        ? [{ test: { ...shared, name: 'galera', include: galeraSuites.map((name) => `test/${name}.test.ts`), globalSetup: ['test/helpers/build-global-setup.ts', 'test/helpers/galera-global-setup.ts'] } }]
        : []),
    ],
  },
});
