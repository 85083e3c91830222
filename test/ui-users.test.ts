import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { ADMIN } from './helpers/auth.js';
import { expectAccessible, launchBrowser, openUi, signIn, startUiServer, type UiServer } from './helpers/browser.js';
import { engineByName } from './helpers/engines.js';
import { Api } from './helpers/http.js';

const PASSWORD = 'user-password-123';

/**
 * Logs in through the API as someone else than the browser. Login allows 10 attempts per client IP and
 * minute; with server.trust_proxy on, each of these checks comes from its own X-Forwarded-For address, so
 * they never use up the attempts the browser's sign-ins need.
 */
function loginAs(server: UiServer) {
  let ip = 0;
  return (username: string, password: string) => new Api(server.url).post('/api/auth/login', { username, password }, { 'x-forwarded-for': `10.9.0.${++ip}` });
}

async function createUser(server: UiServer, username: string, isAdmin = false): Promise<string> {
  const res = await server.api.post('/api/users', { username, password: PASSWORD, is_admin: isAdmin });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

async function userNamed(server: UiServer, username: string) {
  const res = await server.api.get('/api/users');
  return (res.body.items as Array<{ id: string; username: string; is_admin: boolean }>).find((u) => u.username === username);
}

async function grantsOf(server: UiServer, userId: string) {
  const res = await server.api.get(`/api/users/${userId}/grants`);
  expect(res.status, res.text).toBe(200);
  return res.body.items as Array<{ id: string; action: string; topic_pattern: string; consumer_group: string }>;
}

/** Fills and submits the create-user dialog. */
async function createThroughUi(page: Page, username: string, password: string, admin = false) {
  await page.getByRole('button', { name: 'Create user' }).click();
  const dialog = page.getByRole('dialog', { name: 'Create user' });
  await dialog.getByLabel('Username').fill(username);
  await dialog.getByLabel('Password').fill(password);
  if (admin) await dialog.getByLabel(/Administrator/).check();
  await dialog.getByRole('button', { name: 'Create' }).click();
  return dialog;
}

describe('admin UI: users and grants (SQLite, auth on)', () => {
  let browser: Browser;
  let server: UiServer;
  let login: ReturnType<typeof loginAs>;
  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.sqlite, { auth: true, env: { CONVEYOR_SERVER_TRUST_PROXY: 'true' } })]);
    login = loginAs(server);
  });
  afterAll(async () => browser?.close());

  it('creates users with the admin flag as set; a taken name and a short password are refused inline', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/users' });
    await signIn(page);
    await expect.poll(() => page.getByRole('table', { name: 'Users' }).getByRole('link', { name: ADMIN.username }).count()).toBe(1);
    await expectAccessible(page);

    // By keyboard: the dialog starts in its first field, and Enter submits.
    await page.getByRole('button', { name: 'Create user' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create user' });
    await expect.poll(() => dialog.getByLabel('Username').evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.type('alice');
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await expect.poll(() => dialog.count()).toBe(0);
    // The new user's page opens.
    await expect.poll(() => page.getByRole('heading', { level: 2, name: 'alice' }).count()).toBe(1);
    expect((await userNamed(server, 'alice'))?.is_admin).toBe(false);
    const alice = await login('alice', PASSWORD);
    expect(alice.status, alice.text).toBe(200);
    const aliceStatus = await new Api(server.url).withToken(alice.body.token).get('/api/auth/status');
    expect(aliceStatus.body.user).toMatchObject({ username: 'alice', is_admin: false });

    await createThroughUi(page, 'bob', PASSWORD, true);
    await expect.poll(() => page.getByRole('heading', { level: 2, name: 'bob' }).count()).toBe(1);
    expect((await userNamed(server, 'bob'))?.is_admin).toBe(true);
    expect((await login('bob', PASSWORD)).status).toBe(200);

    const duplicate = await createThroughUi(page, 'alice', 'another-password-1');
    await expect.poll(() => duplicate.getByRole('alert').textContent()).toBe('username "alice" is already taken');
    const short = page.getByRole('dialog', { name: 'Create user' });
    await short.getByLabel('Username').fill('carl');
    await short.getByLabel('Password').fill('short');
    await short.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => short.getByRole('alert').textContent()).toBe('password must be at least 12 characters');
    await expectAccessible(page);
    await short.getByRole('button', { name: 'Cancel' }).click();
    expect((await server.api.get('/api/users')).body.items.map((u: { username: string }) => u.username).sort()).toEqual([ADMIN.username, 'alice', 'bob']);
    expect(errors.filter((e) => !e.includes('status of 4'))).toEqual([]);
  });

  it('changes a password and the admin flag, and deletes a user; deleting yourself is refused inline', async () => {
    const carolId = await createUser(server, 'carol');
    const { page } = await openUi(browser, server, { path: `#/users?user=${carolId}` });
    await signIn(page);
    await expect.poll(() => page.getByRole('heading', { level: 2, name: 'carol' }).count()).toBe(1);

    await page.getByRole('button', { name: 'Change password' }).click();
    const dialog = page.getByRole('dialog', { name: 'Change password of carol' });
    await dialog.getByLabel('New password').fill('too-short');
    await dialog.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => dialog.getByRole('alert').textContent()).toBe('password must be at least 12 characters');
    await expectAccessible(page);
    await dialog.getByLabel('New password').fill('carol-new-password-1');
    await dialog.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => dialog.count()).toBe(0);
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'The password of carol was changed.' }).count()).toBe(1);
    expect((await login('carol', PASSWORD)).status).toBe(401);
    expect((await login('carol', 'carol-new-password-1')).status).toBe(200);

    await page.getByRole('button', { name: 'Make administrator' }).click();
    await expect.poll(async () => (await userNamed(server, 'carol'))?.is_admin).toBe(true);
    await page.getByRole('button', { name: 'Remove administrator rights' }).click();
    await expect.poll(async () => (await userNamed(server, 'carol'))?.is_admin).toBe(false);
    await expect.poll(() => page.getByRole('button', { name: 'Make administrator' }).count()).toBe(1);

    // The signed-in admin may not delete itself: the service's 400 shows in the dialog.
    await page.getByRole('table', { name: 'Users' }).getByRole('link', { name: ADMIN.username }).click();
    await expect.poll(() => page.getByRole('heading', { level: 2, name: ADMIN.username }).count()).toBe(1);
    await page.getByRole('button', { name: 'Delete user' }).click();
    let confirm = page.getByRole('dialog', { name: 'Delete user' });
    await confirm.getByRole('button', { name: 'Delete user' }).click();
    await expect.poll(() => confirm.getByRole('alert').textContent()).toBe('cannot delete the currently authenticated user');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect(await userNamed(server, ADMIN.username)).toBeDefined();

    await page.getByRole('table', { name: 'Users' }).getByRole('link', { name: 'carol' }).click();
    await page.getByRole('button', { name: 'Delete user' }).click();
    confirm = page.getByRole('dialog', { name: 'Delete user' });
    await expectAccessible(page);
    await confirm.getByRole('button', { name: 'Delete user' }).click();
    await expect.poll(() => confirm.count()).toBe(0);
    await expect.poll(() => page.getByRole('table', { name: 'Users' }).getByRole('link', { name: 'carol' }).count()).toBe(0);
    expect(await userNamed(server, 'carol')).toBeUndefined();
    expect((await login('carol', 'carol-new-password-1')).status).toBe(401);
  });

  it("changing one's own password keeps the session, on the new password; tokens issued before it are refused", async () => {
    const graceId = await createUser(server, 'grace', true);
    const before = await login('grace', PASSWORD);
    const { page, errors } = await openUi(browser, server, { path: `#/users?user=${graceId}` });
    await signIn(page, 'grace', PASSWORD);
    await expect.poll(() => page.getByRole('heading', { level: 2, name: 'grace' }).count()).toBe(1);

    await page.getByRole('button', { name: 'Change password' }).click();
    const dialog = page.getByRole('dialog', { name: 'Change password of grace' });
    await dialog.getByLabel('New password').fill('grace-new-password-1');
    await dialog.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'The password of grace was changed.' }).count()).toBe(1);
    expectErrorBody(await new Api(server.url).withToken(before.body.token).get('/api/users'), 401);

    // The screens go on with a token of the new password: the users list loads, no sign-in is asked for.
    await page.getByRole('table', { name: 'Users' }).getByRole('link', { name: ADMIN.username }).click();
    await expect.poll(() => page.getByRole('heading', { level: 2, name: ADMIN.username }).count()).toBe(1);
    await page.reload();
    await expect.poll(() => page.getByRole('heading', { level: 2, name: ADMIN.username }).count()).toBe(1);
    expect(await page.getByRole('dialog', { name: 'Sign in' }).count()).toBe(0);
    expect(errors.filter((e) => !e.includes('status of 4'))).toEqual([]);
  });

  it('an admin who removes their own administrator rights loses the admin screens at once', async () => {
    const frankId = await createUser(server, 'frank', true);
    const { page } = await openUi(browser, server, { path: `#/users?user=${frankId}` });
    await signIn(page, 'frank', PASSWORD);
    await expect.poll(() => page.getByRole('heading', { level: 2, name: 'frank' }).count()).toBe(1);
    const nav = page.getByRole('navigation', { name: 'Main' });
    for (const admin of ['Users', 'Maintenance']) expect(await nav.getByRole('link', { name: admin }).count()).toBe(1);
    await page.getByRole('button', { name: 'Remove administrator rights' }).click();
    await expect.poll(async () => (await userNamed(server, 'frank'))?.is_admin).toBe(false);
    await expect.poll(() => nav.getByRole('link', { name: 'Users' }).count()).toBe(0);
    expect(await nav.getByRole('link', { name: 'Maintenance' }).count()).toBe(0);
  });

  it('adds grants and consume grants that let the user work, refuses duplicates and bad patterns inline, and deletes them', async () => {
    const daveId = await createUser(server, 'dave');
    const daveLogin = await login('dave', PASSWORD);
    expect(daveLogin.status, daveLogin.text).toBe(200);
    const dave = new Api(server.url).withToken(daveLogin.body.token);
    expect((await dave.enqueue('orders.eu', 'x')).status).toBe(403);
    expect((await server.api.post('/api/topics/shop/consumer-groups', { consumer_group: 'billing' })).status).toBe(201);
    expect((await server.api.enqueue('shop', 'for billing')).status).toBe(201);
    expect((await dave.dequeue('shop', { consumer_group: 'billing' })).status).toBe(403);

    const { page } = await openUi(browser, server, { path: `#/users?user=${daveId}` });
    await signIn(page);
    await expect.poll(() => page.getByText('No grants: dave may not touch any topic.').count()).toBe(1);

    const grantForm = page.getByRole('form', { name: 'Add grant' });
    await grantForm.getByLabel('Action').selectOption('write');
    await grantForm.getByLabel('Topic pattern').fill('orders.*');
    await grantForm.getByRole('button', { name: 'Add grant' }).click();
    const grantsTable = page.getByRole('table', { name: 'Grants of dave' });
    await expect.poll(() => grantsTable.getByRole('button', { name: 'Delete grant write orders.*' }).count()).toBe(1);
    expect(await grantsOf(server, daveId)).toMatchObject([{ action: 'write', topic_pattern: 'orders.*', consumer_group: '' }]);
    expect((await dave.enqueue('orders.eu', 'x')).status).toBe(201);
    expect((await dave.enqueue('payments', 'x')).status).toBe(403);

    // The same grant again: the service's 409; a pattern it cannot read: its 400.
    await grantForm.getByLabel('Action').selectOption('write');
    await grantForm.getByLabel('Topic pattern').fill('orders.*');
    await grantForm.getByRole('button', { name: 'Add grant' }).click();
    await expect.poll(() => grantForm.getByRole('alert').textContent()).toBe('the user already has this grant');
    await grantForm.getByLabel('Topic pattern').fill('not a pattern!');
    await grantForm.getByRole('button', { name: 'Add grant' }).click();
    await expect.poll(() => grantForm.getByRole('alert').textContent()).toBe('topic_pattern must be "*", a topic name, "<prefix>.*" or "<prefix>*"');
    expect(await grantsOf(server, daveId)).toHaveLength(1);

    const consumeForm = page.getByRole('form', { name: 'Add consume grant' });
    await consumeForm.getByLabel('Topic pattern').fill('shop');
    await consumeForm.getByLabel('Consumer group').fill('billing');
    await consumeForm.getByRole('button', { name: 'Add consume grant' }).click();
    await expect.poll(() => grantsTable.getByRole('button', { name: 'Delete grant consume shop as billing' }).count()).toBe(1);
    expect((await grantsOf(server, daveId)).find((g) => g.action === 'consume')).toMatchObject({ topic_pattern: 'shop', consumer_group: 'billing' });
    const dequeued = await dave.dequeue('shop', { consumer_group: 'billing' });
    expect(dequeued.status, dequeued.text).toBe(200);
    expect(dequeued.body.messages.map((m: { payload: string }) => m.payload)).toEqual(['for billing']);
    await consumeForm.getByLabel('Topic pattern').fill('shop');
    await consumeForm.getByLabel('Consumer group').fill('billing');
    await consumeForm.getByRole('button', { name: 'Add consume grant' }).click();
    await expect.poll(() => consumeForm.getByRole('alert').textContent()).toBe('the user already has this grant');

    // 375 px wide: nothing makes the page scroll sideways (the tables scroll in their own box).
    await page.setViewportSize({ width: 375, height: 800 });
    await expect.poll(() => page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await expectAccessible(page);

    await grantsTable.getByRole('button', { name: 'Delete grant write orders.*' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete grant' });
    await expectAccessible(page);
    await confirm.getByRole('button', { name: 'Delete grant' }).click();
    await expect.poll(() => grantsTable.getByRole('button', { name: 'Delete grant write orders.*' }).count()).toBe(0);
    expect((await grantsOf(server, daveId)).map((g) => g.action)).toEqual(['consume']);
    expect((await dave.enqueue('orders.eu', 'x')).status).toBe(403);

    await grantsTable.getByRole('button', { name: 'Delete grant consume shop as billing' }).click();
    await page.getByRole('dialog', { name: 'Delete grant' }).getByRole('button', { name: 'Delete grant' }).click();
    await expect.poll(() => page.getByText('No grants: dave may not touch any topic.').count()).toBe(1);
    expect(await grantsOf(server, daveId)).toEqual([]);
    expect((await dave.dequeue('shop', { consumer_group: 'billing' })).status).toBe(403);
  });

  it('shows neither Users nor Maintenance to a user who is not an admin', async () => {
    await createUser(server, 'erin');
    const { page } = await openUi(browser, server, { path: '#/users' });
    await signIn(page, 'erin', PASSWORD);
    const nav = page.getByRole('navigation', { name: 'Main' });
    await expect.poll(() => nav.getByRole('link', { name: 'Messages' }).count()).toBe(1);
    expect(await nav.getByRole('link', { name: 'Users' }).count()).toBe(0);
    expect(await nav.getByRole('link', { name: 'Maintenance' }).count()).toBe(0);
    // Reached by URL anyway, the screen offers none of its actions.
    expect(await page.getByRole('button', { name: 'Create user' }).count()).toBe(0);
    await page.goto(`${server.url}/#/maintenance`);
    await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Maintenance' }).count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Run expiry reaper now' }).count()).toBe(0);
  });
});

describe('admin UI: users (MariaDB, auth on)', () => {
  let browser: Browser;
  let server: UiServer;
  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.mysql, { auth: true, env: { CONVEYOR_SERVER_TRUST_PROXY: 'true' } })]);
  });
  afterAll(async () => browser?.close());

  it('creates a user who can log in, and grants it a topic', async () => {
    const { page } = await openUi(browser, server, { path: '#/users' });
    await signIn(page);
    const dialog = await createThroughUi(page, 'maria', PASSWORD);
    await expect.poll(() => dialog.count()).toBe(0);
    await expect.poll(() => page.getByRole('heading', { level: 2, name: 'maria' }).count()).toBe(1);
    const user = await userNamed(server, 'maria');
    expect(user?.is_admin).toBe(false);
    const grantForm = page.getByRole('form', { name: 'Add grant' });
    await grantForm.getByLabel('Action').selectOption('write');
    await grantForm.getByLabel('Topic pattern').fill('maria*');
    await grantForm.getByRole('button', { name: 'Add grant' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Delete grant write maria*' }).count()).toBe(1);
    const token = await loginAs(server)('maria', PASSWORD);
    expect(token.status, token.text).toBe(200);
    expect((await new Api(server.url).withToken(token.body.token).enqueue('maria-topic', 'hello')).status).toBe(201);
    expect(await grantsOf(server, user!.id)).toMatchObject([{ action: 'write', topic_pattern: 'maria*' }]);
  });
});
