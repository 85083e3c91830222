import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible, launchBrowser, openUi, startUiServer, type UiServer } from './helpers/browser.js';
import { engineByName } from './helpers/engines.js';
import type { Api } from './helpers/http.js';

/** Console errors other than the browser's own line for a refused request (the tests provoke 4xx on purpose). */
const unexpected = (errors: string[]) => errors.filter((e) => !e.includes('Failed to load resource'));

const groupsOf = async (api: Api, topic: string): Promise<string[]> => (await api.get(`/api/topics/${topic}/consumer-groups`)).body.items;

async function register(page: Page, group: string): Promise<void> {
  await page.getByLabel('Group name').fill(group);
  await page.getByRole('button', { name: 'Register', exact: true }).click();
}

/** The numbers of a group's row, by column: pending, processing, failed, expired. */
async function depthsOf(page: Page, group: string): Promise<string[]> {
  const cells = page.getByRole('row', { name: new RegExp(`^${group}\\b`) }).getByRole('cell');
  return (await cells.allTextContents()).slice(0, 4);
}

describe('admin UI: consumer groups (SQLite, auth off)', () => {
  let browser: Browser;
  let server: UiServer;
  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.sqlite)]);
  });
  afterAll(async () => browser?.close());

  it('registers groups, refuses a duplicate (409) and a bad name (400) inline, and shows each group’s depth by status', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/groups' });
    await page.getByLabel('Topic', { exact: true }).fill('ui.shop');
    await page.getByRole('button', { name: 'Show groups' }).click();
    await page.getByText('No consumer group is registered on ui.shop.').waitFor();

    await register(page, 'billing');
    await page.getByRole('row', { name: /^billing/ }).waitFor();
    expect(await groupsOf(server.api, 'ui.shop')).toEqual(['billing']);
    await register(page, 'audit');
    await page.getByRole('row', { name: /^audit/ }).waitFor();
    expect(await groupsOf(server.api, 'ui.shop')).toEqual(['audit', 'billing']);

    await register(page, 'billing');
    await page.getByRole('alert').getByText('consumer group "billing" is already registered on topic "ui.shop"').waitFor();
    await register(page, '-bad');
    await page.getByRole('alert').getByText('must be 1-200 characters of A-Z a-z 0-9 . _ - and start with a letter or digit').waitFor();
    expect(await groupsOf(server.api, 'ui.shop')).toEqual(['audit', 'billing']);

    // Every group gets every message; billing takes one of three.
    for (const n of [1, 2, 3]) expect((await server.api.enqueue('ui.shop', `order ${n}`)).status).toBe(201);
    expect((await server.api.dequeue('ui.shop', { consumer_group: 'billing' })).body.messages).toHaveLength(1);
    await page.reload();
    await expect.poll(() => depthsOf(page, 'billing')).toEqual(['2', '1', '0', '0']);
    expect(await depthsOf(page, 'audit')).toEqual(['3', '0', '0', '0']);
    await expectAccessible(page);
    expect(unexpected(errors)).toEqual([]);
  });

  it('unregisters a group after a confirmation, and shows the 404 inline when it is already gone', async () => {
    for (const group of ['alpha', 'beta']) expect((await server.api.post('/api/topics/ui.fan/consumer-groups', { consumer_group: group })).status).toBe(201);
    const { page } = await openUi(browser, server, { path: '#/groups?topic=ui.fan' });

    await page.getByRole('button', { name: 'Unregister alpha' }).click();
    const dialog = page.getByRole('dialog', { name: 'Unregister the group' });
    await dialog.getByText('Unregister alpha from ui.fan?').waitFor();
    await expectAccessible(page);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await groupsOf(server.api, 'ui.fan')).toEqual(['alpha', 'beta']);

    await page.getByRole('button', { name: 'Unregister alpha' }).click();
    await dialog.getByRole('button', { name: 'Unregister' }).click();
    await expect.poll(() => groupsOf(server.api, 'ui.fan')).toEqual(['beta']);
    await expect.poll(() => page.getByRole('row', { name: /^alpha/ }).count()).toBe(0);

    // Someone else unregisters beta while the dialog is open: the service's 404 shows in the dialog.
    await page.getByRole('button', { name: 'Unregister beta' }).click();
    expect((await server.api.delete('/api/topics/ui.fan/consumer-groups/beta')).status).toBe(204);
    await dialog.getByRole('button', { name: 'Unregister' }).click();
    await dialog.getByRole('alert').getByText('consumer group "beta" is not registered on topic "ui.fan"').waitFor();
  });

  it('switching topics leaves one topic picker, and none behind on other screens', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/groups' });
    for (const topic of ['ui.first', 'ui.second', 'ui.third']) {
      await page.getByLabel('Topic', { exact: true }).fill(topic);
      await page.getByRole('button', { name: 'Show groups' }).click();
      await page.getByText(`No consumer group is registered on ${topic}.`).waitFor();
    }
    expect(await page.getByRole('button', { name: 'Show groups' }).count()).toBe(1);
    await page.evaluate(() => (location.hash = '#/users'));
    await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
    expect(await page.getByRole('button', { name: 'Show groups' }).count()).toBe(0);
    expect(unexpected(errors)).toEqual([]);
  });

  it('fits a 375 px wide screen', async () => {
    expect((await server.api.post('/api/topics/ui.narrow/consumer-groups', { consumer_group: 'a-rather-long-consumer-group-name' })).status).toBe(201);
    const { page } = await openUi(browser, server, { path: '#/groups?topic=ui.narrow', width: 375 });
    await page.getByRole('button', { name: 'Unregister a-rather-long-consumer-group-name' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
  });
});

describe('admin UI: consumer groups (MariaDB)', () => {
  let browser: Browser;
  let server: UiServer;
  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.mysql)]);
  });
  afterAll(async () => browser?.close());

  it('registers and unregisters a group', async () => {
    const { page } = await openUi(browser, server, { path: '#/groups?topic=ui.maria' });
    await register(page, 'reports');
    await page.getByRole('row', { name: /^reports/ }).waitFor();
    expect(await groupsOf(server.api, 'ui.maria')).toEqual(['reports']);
    await register(page, 'reports');
    await page.getByRole('alert').getByText('consumer group "reports" is already registered on topic "ui.maria"').waitFor();
    await page.getByRole('button', { name: 'Unregister reports' }).click();
    await page.getByRole('dialog', { name: 'Unregister the group' }).getByRole('button', { name: 'Unregister' }).click();
    await expect.poll(() => groupsOf(server.api, 'ui.maria')).toEqual([]);
    await page.getByText('No consumer group is registered on ui.maria.').waitFor();
  });
});
