import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What the test run needs beyond `npm ci`: a MySQL server, Galera's binaries, Chromium, Prometheus. Every one
 * is treated alike: present, its suites run; missing, they skip with one line naming the install command;
 * missing under CI=true, the run fails, so a CI machine can never skip a suite silently. Plain Node (no vitest
 * import): vitest.config.ts uses it too.
 */
export interface ExternalComponent {
  /** What it is, for people: `Chromium`. */
  name: string;
  /** The suites that need it: `the browser suites (test/ui-*.test.ts)`. */
  suites: string;
  /** How to get it: `apt-get install -y chromium`. */
  install: string;
  /** Why it is missing (a path, an unset variable), or undefined when it is there. */
  missing(): string | undefined;
}

export type Decision = { action: 'run' } | { action: 'skip'; line: string } | { action: 'fail'; error: string };

/** The one rule, for every component: run, skip with this line, or fail with this error. */
export function decide(component: ExternalComponent, env: NodeJS.ProcessEnv = process.env): Decision {
  const missing = component.missing();
  if (missing === undefined) return { action: 'run' };
  if (env.CI === 'true') return { action: 'fail', error: `CI=true but ${component.name} is missing (${missing}): ${component.suites} must run in CI. Install: ${component.install}` };
  return { action: 'skip', line: `[conveyor tests] ${component.name} is missing (${missing}): ${component.suites} SKIPPED. Install: ${component.install}` };
}

/** Applies a decision: prints the skip line once, throws the CI error; true when the suites run. */
export function runs(component: ExternalComponent, env: NodeJS.ProcessEnv = process.env): boolean {
  const decision = decide(component, env);
  if (decision.action === 'fail') throw new Error(decision.error);
  if (decision.action === 'skip') console.warn(`\n${decision.line}\n`);
  return decision.action === 'run';
}

const absent = (paths: string[]): string | undefined => {
  const gone = paths.filter((p) => !existsSync(p));
  return gone.length > 0 ? `no ${gone.join(', ')}` : undefined;
};

/** Debian's Chromium, driven by playwright-core (test/helpers/chromium.ts). */
export const CHROMIUM_BIN = '/usr/bin/chromium';
/** The Debian package's binaries; PROMETHEUS_BIN / PROMTOOL_BIN override them (test/helpers/prometheus.ts). */
export const prometheusBin = (env: NodeJS.ProcessEnv = process.env) => env.PROMETHEUS_BIN ?? '/usr/bin/prometheus';
export const promtoolBin = (env: NodeJS.ProcessEnv = process.env) => env.PROMTOOL_BIN ?? '/usr/bin/promtool';

/** A component whose suites are whole test files, found by the helper module they import. */
export interface FileComponent extends ExternalComponent {
  /** A test file that imports one of these needs the component. */
  imports: RegExp;
}

export const CHROMIUM: FileComponent = {
  name: 'Chromium',
  suites: 'the browser suites (test/ui-*.test.ts)',
  install: 'apt-get install -y chromium',
  missing: () => absent([CHROMIUM_BIN]),
  imports: /from '\.\/helpers\/(browser|chromium)\.js'/,
};

export const PROMETHEUS: FileComponent = {
  name: 'Prometheus',
  suites: 'the suites that run prometheus or promtool (observability, chart monitoring and packaging)',
  install: 'apt-get install -y prometheus',
  missing: () => absent([prometheusBin(), promtoolBin()]),
  imports: /from '\.\/helpers\/prometheus\.js'/,
};

/** The components that whole test files need, in the order their lines are printed. */
export const FILE_COMPONENTS: readonly FileComponent[] = [CHROMIUM, PROMETHEUS];

/** The test files (`test/x.test.ts`, relative to `root`) that import the component's helper. */
export function filesNeeding(component: FileComponent, root: string): string[] {
  const dir = join(root, 'test');
  return readdirSync(dir)
    .filter((name) => name.endsWith('.test.ts') && component.imports.test(readFileSync(join(dir, name), 'utf8')))
    .map((name) => `test/${name}`)
    .sort();
}

/**
 * For vitest.config.ts: the test files to leave out because their component is missing (each component's
 * line printed once), or an error under CI=true.
 */
export function excludedForMissingComponents(root: string, env: NodeJS.ProcessEnv = process.env, components: readonly FileComponent[] = FILE_COMPONENTS): string[] {
  return components.flatMap((component) => (runs(component, env) ? [] : filesNeeding(component, root)));
}
