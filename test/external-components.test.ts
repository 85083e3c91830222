import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { CHROMIUM, decide, excludedForMissingComponents, filesNeeding, PROMETHEUS, runs, type FileComponent } from './helpers/external-components.js';

/**
 * The rule every external component of the test run follows (MySQL, Galera, Chromium, Prometheus): present,
 * its suites run; missing, they skip with one line naming the install command; missing under CI=true, the
 * run fails. Decided here with components that say they are missing, so nothing is uninstalled.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const gone = (component: FileComponent): FileComponent => ({ ...component, missing: () => 'no /usr/bin/nothing' });

describe('external components of the test run', () => {
  it('runs the suites of a component that is there, with or without CI', () => {
    const present = { ...CHROMIUM, missing: () => undefined };
    expect(decide(present, {})).toEqual({ action: 'run' });
    expect(decide(present, { CI: 'true' })).toEqual({ action: 'run' });
  });

  it('skips with one line naming what is missing and the install command, outside CI', () => {
    for (const [component, install] of [
      [CHROMIUM, 'apt-get install -y chromium'],
      [PROMETHEUS, 'apt-get install -y prometheus'],
    ] as const) {
      const decision = decide(gone(component), {});
      expect(decision.action).toBe('skip');
      const line = (decision as { line: string }).line;
      expect(line.split('\n')).toHaveLength(1);
      expect(line).toContain(`${component.name} is missing (no /usr/bin/nothing)`);
      expect(line).toContain('SKIPPED');
      expect(line.endsWith(`Install: ${install}`)).toBe(true);
    }
    // CI set to anything but "true" is not CI.
    expect(decide(gone(CHROMIUM), { CI: 'false' }).action).toBe('skip');
  });

  it('fails under CI=true instead of skipping', () => {
    const decision = decide(gone(PROMETHEUS), { CI: 'true' });
    expect(decision).toEqual({ action: 'fail', error: expect.stringContaining('CI=true but Prometheus is missing (no /usr/bin/nothing)') });
    expect(() => runs(gone(PROMETHEUS), { CI: 'true' })).toThrow(/must run in CI\. Install: apt-get install -y prometheus/);
  });

  it('prints the skip line once and says the suites do not run', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      expect(runs(gone(CHROMIUM), {})).toBe(false);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0][0])).toContain('Install: apt-get install -y chromium');
    } finally {
      warn.mockRestore();
    }
  });

  it('finds the test files each component is needed by, from the helpers they import', () => {
    const browser = filesNeeding(CHROMIUM, ROOT);
    expect(browser).toContain('test/ui-shell.test.ts');
    expect(browser).toContain('test/ui-overview.test.ts');
    expect(browser.every((f) => f.startsWith('test/ui-'))).toBe(true);
    expect(filesNeeding(PROMETHEUS, ROOT)).toEqual(expect.arrayContaining(['test/observability-prometheus.test.ts', 'test/observability-kit.test.ts']));
    expect(filesNeeding(PROMETHEUS, ROOT)).not.toContain('test/metrics.test.ts');
  });

  it('leaves out exactly the files of missing components, and nothing when all are there', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      expect(excludedForMissingComponents(ROOT, {}, [{ ...CHROMIUM, missing: () => undefined }, gone(PROMETHEUS)])).toEqual(filesNeeding(PROMETHEUS, ROOT));
      expect(excludedForMissingComponents(ROOT, {}, [{ ...CHROMIUM, missing: () => undefined }])).toEqual([]);
      expect(() => excludedForMissingComponents(ROOT, { CI: 'true' }, [gone(CHROMIUM)])).toThrow(/CI=true but Chromium is missing/);
    } finally {
      warn.mockRestore();
    }
  });

  it('leaves the Prometheus suites out of a real run when promtool is missing, and fails the run under CI', () => {
    // vitest itself, listing the files it would run with PROMETHEUS_BIN pointing nowhere: the line, and no
    // observability file; with CI=true the configuration refuses to load.
    const list = (env: NodeJS.ProcessEnv) =>
      spawnSync(process.execPath, ['node_modules/vitest/vitest.mjs', 'list', '--filesOnly', 'test/observability-kit.test.ts', 'test/metrics-tallies.test.ts'], {
        cwd: ROOT,
        env: { ...process.env, CI: '', PROMTOOL_BIN: '/nonexistent/promtool', ...env },
        encoding: 'utf8',
        timeout: 60_000,
      });
    const skipped = list({});
    expect(`${skipped.stdout}${skipped.stderr}`).toContain('Prometheus is missing (no /nonexistent/promtool)');
    expect(`${skipped.stdout}${skipped.stderr}`).toContain('Install: apt-get install -y prometheus');
    expect(skipped.stdout).toContain('metrics-tallies.test.ts');
    expect(skipped.stdout).not.toContain('observability-kit.test.ts');
    const ci = list({ CI: 'true' });
    expect(ci.status).not.toBe(0);
    expect(`${ci.stdout}${ci.stderr}`).toContain('CI=true but Prometheus is missing');
  }, 120_000);
});
