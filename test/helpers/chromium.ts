import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (`apt-get install -y chromium`; .ci/run installs it). Playwright's own browsers cannot be downloaded here. */
export const CHROMIUM = '/usr/bin/chromium';
/**
 * Headless, and nothing that reaches out to the network on its own (the machine has no internet).
 *
 * Without the omnibox's WebUI popups: Chromium 156 loads them (chrome://omnibox-popup.top-chrome) into a
 * renderer of their own for every window, and each browser context a test opens is a window. That renderer
 * cost 1.5 s of CPU per context and the browser process another 0.3 s, for an address bar no headless test
 * uses: the browser suites' Chromium took about 470 s of CPU with it, 245 without (docs/testing.md).
 *
 * Chromium takes the last `--disable-features` it is given, so this one replaces playwright-core's own, and
 * repeats it (playwright-core 1.x's list: HTTP kept on HTTP, no paint holding, nothing fetched from Google).
 */
const DISABLED_FEATURES = [
  'AvoidUnnecessaryBeforeUnloadCheckSync',
  'DestroyProfileOnBrowserClose',
  'HttpsUpgrades',
  'HttpsFirstBalancedModeAutoEnable',
  'LensOverlay',
  'MediaRouter',
  'PaintHolding',
  'ThirdPartyStoragePartitioning',
  'AvoidCorsURLLoaderRestartOnRedirect',
  'OptimizationHints',
  'NetworkTimeServiceQuerying',
  'AimEnabled',
  'PreconnectToSearch',
  'WebUIOmniboxPopup',
  'WebUIOmniboxAimPopup',
];
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
  `--disable-features=${DISABLED_FEATURES.join(',')}`,
];

export async function launchBrowser(): Promise<Browser> {
  // vitest.config.ts leaves these suites out when it is missing (test/helpers/external-components.ts).
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
}
