import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineByName } from './helpers/engines.js';
import { expectAccessible, launchBrowser, openUi, startUiServer, type UiServer } from './helpers/browser.js';

describe('admin UI shell (SQLite, auth off)', () => {
  let browser: Browser;
  let server: UiServer;
  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.sqlite)]);
  });
  afterAll(async () => browser?.close());

  it('serves the UI at / and navigates between screens', async () => {
    const { page, errors } = await openUi(browser, server);
    await expect.poll(() => page.getByRole('navigation', { name: 'Main' }).isVisible()).toBe(true);
    await page.getByRole('link', { name: 'Messages' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Messages');
    expect(await page.title()).toBe('Messages · Conveyor');
    await expectAccessible(page);
    expect(errors).toEqual([]);
  });

  it('with auth off asks nobody to sign in, shows every screen, and the service version in the footer', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/overview' });
    const version = (await server.api.get('/api/version')).body.version as string;
    const footer = page.getByRole('contentinfo');
    await expect.poll(() => footer.textContent(), { timeout: 10_000 }).toBe(`Conveyor · version ${version}`);
    expect(await footer.getByRole('link').count()).toBe(0);
    expect(await page.getByRole('dialog').count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Sign (in|out)$/ }).count()).toBe(0);
    const nav = page.getByRole('navigation', { name: 'Main' });
    expect(await nav.getByRole('link').allTextContents()).toEqual(['Overview', 'Messages', 'Enqueue', 'Consume', 'Topics', 'Consumer groups', 'Replay', 'Users', 'Maintenance']);
    expect(errors).toEqual([]);
  });

  it('asks nothing of any origin but the service on any screen: scripts, styles, fonts and icons are its own', async () => {
    const { page, context, errors } = await openUi(browser, server, { path: '#/overview' });
    const requested: string[] = [];
    context.on('request', (request) => requested.push(request.url()));
    for (const screen of ['overview', 'messages', 'enqueue', 'consume', 'topics', 'groups', 'replay', 'users', 'maintenance']) {
      await page.evaluate((hash) => (location.hash = hash), `#/${screen}`);
      await page.waitForLoadState('networkidle');
    }
    await page.reload();
    await page.waitForLoadState('networkidle');
    expect(requested.length).toBeGreaterThan(10);
    expect(requested.filter((url) => new URL(url).origin !== new URL(server.url).origin)).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('is usable from the keyboard: a skip link to the content, and the navigation', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/overview' });
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent(), { timeout: 10_000 }).toBe('Overview');
    await page.keyboard.press('Tab');
    const skip = page.getByRole('link', { name: 'Skip to main content' });
    expect(await skip.evaluate((el) => el === document.activeElement)).toBe(true);
    expect(await skip.isVisible()).toBe(true);
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    // The fragment holds the route: skipping must not leave the screen.
    expect(await page.evaluate(() => location.hash)).toBe('#/overview');

    const topics = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Topics' });
    await topics.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Topics');
    expect(await topics.getAttribute('aria-current')).toBe('page');
    expect(errors).toEqual([]);
  });
});
