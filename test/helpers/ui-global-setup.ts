import { fileURLToPath } from 'node:url';
import { build } from 'vite';

/**
 * The browser suites (test/ui-*.test.ts) drive the UI that `conveyor serve` serves from dist/ui, so the run
 * builds it first from the sources under test, exactly as `npm run build` does.
 */
export default async function setup(): Promise<void> {
  await build({ configFile: fileURLToPath(new URL('../../src/ui/vite.config.ts', import.meta.url)), logLevel: 'warn' });
}
