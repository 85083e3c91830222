import { fileURLToPath } from 'node:url';

/** The compiled CLI (test/helpers/build-global-setup.ts compiles it before the suites run). */
export const CONVEYOR_CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url));
// Absolute, because a command may run in a temporary working directory where `tsx` would not resolve.
const TSX = import.meta.resolve('tsx');

/**
 * node's arguments for `conveyor <args>`: the compiled CLI; through tsx only when a node argument preloads a
 * TypeScript file of the tests (a skewed clock, a fault injector).
 */
export function conveyorArgs(args: string[], nodeArgs: string[] = []): string[] {
  const loader = nodeArgs.some((a) => a.endsWith('.ts')) ? ['--import', TSX] : [];
  return [...loader, ...nodeArgs, CONVEYOR_CLI, ...args];
}
