import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (`apt-get install -y chromium`; .ci/run installs it). Playwright's own browsers cannot be downloaded here. */
export const CHROMIUM = '/usr/bin/chromium';
/** Headless, and nothing that reaches out to the network on its own (the machine has no internet). */
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'];

export async function launchBrowser(): Promise<Browser> {
  // vitest.config.ts leaves these suites out when it is missing (test/helpers/external-components.ts).
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
}
