import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, signToken } from './helpers/auth.js';
import { engineByName } from './helpers/engines.js';
import { expectAccessible, launchBrowser, openUi, signIn, startUiServer, type UiPage, type UiServer } from './helpers/browser.js';

const TOKEN_KEY = 'conveyor.token';

const storedToken = (page: Page) => page.evaluate((key) => sessionStorage.getItem(key), TOKEN_KEY);
const expiresAt = (token: string) => (JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as { exp: number }).exp * 1000;
const signInDialog = (page: Page) => page.getByRole('dialog', { name: 'Sign in' });

/** Whom the service says a token belongs to (null: not valid). */
async function tokenUser(server: UiServer, token: string): Promise<string | null> {
  const status = await server.api.withToken(token).get('/api/auth/status');
  return status.body.user?.username ?? null;
}

/**
 * The UI with `token` already in the tab's session storage, as after an earlier sign-in; no login request, so
 * the login rate limit (10 a minute) stays free, and no pointer or key event, so the user counts as idle.
 */
async function openWithToken(browser: Browser, server: UiServer, token: string, path: string, options: { fakeClock?: boolean } = {}): Promise<UiPage> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  // The page's clock, installed before the page loads: it runs on as usual until the test moves it forward.
  if (options.fakeClock) await context.clock.install();
  await context.addInitScript(([key, value]) => sessionStorage.setItem(key, value), [TOKEN_KEY, token] as const);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`console: ${msg.text()}`);
  });
  await page.goto(`${server.url}/${path}`);
  await expect.poll(() => page.getByRole('banner').getByRole('button', { name: 'Sign out' }).isVisible(), { timeout: 10_000 }).toBe(true);
  return { page, context, errors };
}

/** Refused requests show up as console errors (the browser logs every 4xx); nothing else may. */
const unexpected = (errors: string[]) => errors.filter((e) => !/status of 40[13]/.test(e));

describe('admin UI: sign-in and session (SQLite, auth on)', () => {
  let browser: Browser;
  let server: UiServer;
  let adminId: string;
  const adminToken = async (expiresInSeconds: number) => signToken({ uid: adminId, sub: ADMIN.username, adm: true }, { expiresInSeconds });

  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.sqlite, { auth: true })]);
    adminId = (await server.api.get('/api/auth/status')).body.user.id;
    for (let i = 1; i <= 2; i++) expect((await server.api.enqueue('ui.orders', `order ${i}`)).status).toBe(201);
    expect((await server.api.enqueue('ui.secret', 'classified')).status).toBe(201);
  });
  afterAll(async () => browser?.close());

  it('asks to sign in, shows a wrong password inline, then signs in on the screen that was asked for', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/topics' });
    await expect.poll(() => signInDialog(page).isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    await expectAccessible(page);

    await page.getByLabel('Username').fill(ADMIN.username);
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => signInDialog(page).getByRole('alert').textContent()).toBe('Invalid username or password.');
    expect(await storedToken(page)).toBeNull();

    await signIn(page);
    const token = await storedToken(page);
    expect(await tokenUser(server, token!)).toBe(ADMIN.username);
    expect(await page.evaluate(() => location.hash)).toBe('#/topics');
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Topics');
    expect(await page.getByRole('banner').getByText(ADMIN.username).isVisible()).toBe(true);
    for (const admin of ['Users', 'Maintenance']) expect(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: admin }).count()).toBe(1);
    expect(unexpected(errors)).toEqual([]);
  });

  it('a 401 mid-session opens the dialog over the same screen; after signing in its filters stay and its data reloads', async () => {
    const { page, errors } = await openWithToken(browser, server, await adminToken(900), '#/messages?topic=ui.orders');
    await expect.poll(() => page.getByText('order 2').isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await signInDialog(page).count()).toBe(0);

    // The service stops accepting the token (signed with another secret): the next request gets 401.
    const forged = await signToken({ uid: adminId, sub: ADMIN.username, adm: true }, { secret: 'another-secret-of-at-least-32-bytes-long!!' });
    expect(await tokenUser(server, forged)).toBeNull();
    await page.evaluate(([key, value]) => sessionStorage.setItem(key, value), [TOKEN_KEY, forged] as const);
    await page.getByLabel('Status').selectOption('pending');
    await expect.poll(() => signInDialog(page).isVisible(), { timeout: 10_000 }).toBe(true);

    await signIn(page);
    expect(await tokenUser(server, (await storedToken(page))!)).toBe(ADMIN.username);
    expect(await page.evaluate(() => location.hash)).toBe('#/messages?topic=ui.orders&status=pending');
    expect(await page.getByLabel('Status').inputValue()).toBe('pending');
    expect(await page.getByLabel('Topic', { exact: true }).inputValue()).toBe('ui.orders');
    await expect.poll(() => page.getByText('order 1').isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await page.getByText('classified').count()).toBe(0);
    expect(unexpected(errors)).toEqual([]);
  });

  it('stops polling the overview with a refused token once the sign-in dialog is closed, and polls again after signing in', async () => {
    const { page, errors } = await openWithToken(browser, server, await adminToken(900), '#/overview');
    const stats: number[] = [];
    page.on('request', (request) => {
      if (/\/api\/stats(\?|$)/.test(request.url())) stats.push(Date.now());
    });
    await expect.poll(() => stats.length, { timeout: 10_000 }).toBeGreaterThan(1);
    const forged = await signToken({ uid: adminId, sub: ADMIN.username, adm: true }, { secret: 'another-secret-of-at-least-32-bytes-long!!' });
    await page.evaluate(([key, value]) => sessionStorage.setItem(key, value), [TOKEN_KEY, forged] as const);
    await expect.poll(() => signInDialog(page).isVisible(), { timeout: 10_000 }).toBe(true);
    await page.keyboard.press('Escape');
    await expect.poll(() => signInDialog(page).isVisible()).toBe(false);
    // Three polling periods (3 s each) with the dialog closed: no request with the refused token.
    const closedAt = stats.length;
    await new Promise((resolve) => setTimeout(resolve, 9_500));
    expect(stats.length - closedAt).toBeLessThanOrEqual(1);

    await page.getByRole('banner').getByRole('button', { name: 'Sign in' }).click();
    await signIn(page);
    const signedInAt = stats.length;
    await expect.poll(() => stats.length - signedInAt, { timeout: 10_000 }).toBeGreaterThan(1);
    expect(unexpected(errors)).toEqual([]);
  }, 60_000);

  it('refreshes the token of an active user before it expires', async () => {
    const short = await adminToken(240);
    const { page, errors } = await openWithToken(browser, server, short, '#/overview');
    // Idle with four minutes left: neither a refresh nor a warning yet.
    expect(await storedToken(page)).toBe(short);
    expect(await page.getByRole('alertdialog').count()).toBe(0);

    await page.keyboard.press('Shift');
    await expect.poll(() => storedToken(page), { timeout: 10_000 }).not.toBe(short);
    const renewed = (await storedToken(page))!;
    expect(expiresAt(renewed)).toBeGreaterThan(Date.now() + 10 * 60_000);
    expect(await tokenUser(server, renewed)).toBe(ADMIN.username);
    expect(await page.getByRole('alertdialog').count()).toBe(0);
    expect(unexpected(errors)).toEqual([]);
  });

  it('warns an idle user before the session ends; "Stay signed in" renews it', async () => {
    const short = await adminToken(90);
    const { page, errors } = await openWithToken(browser, server, short, '#/overview');
    const warning = page.getByRole('alertdialog');
    await expect.poll(() => warning.isVisible(), { timeout: 10_000 }).toBe(true);
    // The countdown: at most the token's 90 s (1:30), and still more than a minute of it left.
    const shown = /Your session expires in (\d+):(\d\d)/.exec((await warning.textContent()) ?? '');
    expect(shown).not.toBeNull();
    expect(Number(shown![1]) * 60 + Number(shown![2])).toBeGreaterThan(60);
    expect(Number(shown![1]) * 60 + Number(shown![2])).toBeLessThanOrEqual(90);
    expect(await storedToken(page)).toBe(short);
    await expectAccessible(page);

    await warning.getByRole('button', { name: 'Stay signed in' }).click();
    await expect.poll(() => storedToken(page), { timeout: 10_000 }).not.toBe(short);
    const renewed = (await storedToken(page))!;
    expect(expiresAt(renewed)).toBeGreaterThan(Date.now() + 10 * 60_000);
    expect(await tokenUser(server, renewed)).toBe(ADMIN.username);
    await expect.poll(() => warning.count()).toBe(0);
    expect(unexpected(errors)).toEqual([]);
  });

  it('opens the sign-in dialog when the session runs out', async () => {
    // Signed in first, then the page's clock moves past the token's expiry: no race with how long the page
    // takes to load on a busy machine.
    const { page, errors } = await openWithToken(browser, server, await adminToken(60), '#/overview', { fakeClock: true });
    expect(await signInDialog(page).isVisible()).toBe(false);
    await page.clock.fastForward(61_000);
    await expect.poll(() => signInDialog(page).isVisible(), { timeout: 15_000 }).toBe(true);
    expect(unexpected(errors)).toEqual([]);
  });

  it('signs out: the token goes, the screen with it, and the sign-in dialog opens', async () => {
    const token = await adminToken(900);
    const { page, errors } = await openWithToken(browser, server, token, '#/overview');
    await expect.poll(() => page.getByRole('link', { name: 'ui.orders' }).isVisible(), { timeout: 10_000 }).toBe(true);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => signInDialog(page).isVisible()).toBe(true);
    expect(await storedToken(page)).toBeNull();
    expect(await page.getByRole('link', { name: 'ui.orders' }).count()).toBe(0);
    expect(await page.getByRole('banner').getByText(ADMIN.username).count()).toBe(0);
    // Closing the dialog leaves a way back in.
    await signInDialog(page).getByRole('button', { name: 'Close' }).click();
    await page.getByRole('banner').getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => signInDialog(page).isVisible()).toBe(true);
    expect(unexpected(errors)).toEqual([]);
  });

  it('hides admin screens from a regular user and explains refusals', async () => {
    const username = 'reader';
    const password = 'reader-password-123';
    const created = await server.api.post('/api/users', { username, password, is_admin: false });
    expect(created.status, created.text).toBe(201);
    expect((await server.api.post(`/api/users/${created.body.id}/grants`, { action: 'read', topic_pattern: 'ui.orders' })).status).toBe(201);

    const { page, errors } = await openUi(browser, server, { path: '#/overview' });
    await expect.poll(() => signInDialog(page).isVisible(), { timeout: 10_000 }).toBe(true);
    await signIn(page, username, password);
    const nav = page.getByRole('navigation', { name: 'Main' });
    await expect.poll(() => nav.getByRole('link', { name: 'Messages' }).isVisible()).toBe(true);
    for (const admin of ['Users', 'Maintenance']) expect(await nav.getByRole('link', { name: admin }).count()).toBe(0);
    expect(await page.getByRole('banner').getByText(username).isVisible()).toBe(true);
    // The overview lists only what the user may read.
    await expect.poll(() => page.getByRole('link', { name: 'ui.orders' }).isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await page.getByRole('link', { name: 'ui.secret' }).count()).toBe(0);

    await page.evaluate(() => (location.hash = '#/users'));
    await expect.poll(() => page.getByRole('main').getByRole('alert').textContent()).toMatch(/^Permission denied: .*administrators/);

    const token = (await storedToken(page))!;
    expect((await server.api.withToken(token).get('/api/messages?topic=ui.secret')).status).toBe(403);
    await page.evaluate(() => (location.hash = '#/messages?topic=ui.secret'));
    await expect.poll(() => page.getByRole('main').getByText(/^Permission denied: insufficient permissions/).isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await page.getByText('classified').count()).toBe(0);
    await expectAccessible(page);
    expect(unexpected(errors)).toEqual([]);
  });

  it('offers no renewal of a token the service refused once the sign-in dialog is closed', async () => {
    const { page, errors } = await openWithToken(browser, server, await adminToken(900), '#/overview');
    const refreshes: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/api/auth/refresh')) refreshes.push(request.url());
    });
    // A refused token with 90 s left: an idle user would be warned at once, an active one's tab would renew it.
    const forged = await signToken({ uid: adminId, sub: ADMIN.username, adm: true }, { secret: 'another-secret-of-at-least-32-bytes-long!!', expiresInSeconds: 90 });
    await page.evaluate(([key, value]) => sessionStorage.setItem(key, value), [TOKEN_KEY, forged] as const);
    await expect.poll(() => signInDialog(page).isVisible(), { timeout: 10_000 }).toBe(true);
    await page.keyboard.press('Escape');
    await expect.poll(() => signInDialog(page).isVisible()).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await page.getByRole('alertdialog').count()).toBe(0);
    expect(refreshes).toEqual([]);
    expect(unexpected(errors)).toEqual([]);
  });

  it('says so in the warning when "Stay signed in" fails for another reason than a refused token', async () => {
    const { page, errors } = await openWithToken(browser, server, await adminToken(90), '#/overview');
    const warning = page.getByRole('alertdialog');
    await expect.poll(() => warning.isVisible(), { timeout: 10_000 }).toBe(true);
    await page.route('**/api/auth/refresh', (route) => route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: 'database unavailable' }) }));
    await warning.getByRole('button', { name: 'Stay signed in' }).click();
    await expect.poll(() => warning.getByRole('alert').textContent()).toBe('Could not renew the session: database unavailable. Try again, or sign out and back in.');
    await page.unroute('**/api/auth/refresh');
    const short = await storedToken(page);
    await warning.getByRole('button', { name: 'Stay signed in' }).click();
    await expect.poll(() => storedToken(page), { timeout: 10_000 }).not.toBe(short);
    await expect.poll(() => warning.count()).toBe(0);
    expect(unexpected(errors).filter((e) => !/status of 503/.test(e))).toEqual([]);
  });

  it("shows another user who signs in on the tab after a 401 none of the previous user's screen", async () => {
    const username = 'second-operator';
    const password = 'second-operator-pass';
    const created = await server.api.post('/api/users', { username, password, is_admin: false });
    expect(created.status, created.text).toBe(201);
    expect((await server.api.post(`/api/users/${created.body.id}/grants`, { action: 'read', topic_pattern: 'ui.orders' })).status).toBe(201);
    const { page, errors } = await openWithToken(browser, server, await adminToken(900), '#/consume');
    await page.getByLabel('Topic').fill('ui.secret');
    await page.getByRole('button', { name: 'Dequeue', exact: true }).click();
    await expect.poll(() => page.getByText('classified').isVisible(), { timeout: 10_000 }).toBe(true);

    const forged = await signToken({ uid: adminId, sub: ADMIN.username, adm: true }, { secret: 'another-secret-of-at-least-32-bytes-long!!' });
    await page.evaluate(([key, value]) => sessionStorage.setItem(key, value), [TOKEN_KEY, forged] as const);
    // The next dequeue is refused: the dialog opens over the Consume screen, its leased messages still shown.
    await page.getByRole('button', { name: 'Dequeue', exact: true }).click();
    await expect.poll(() => signInDialog(page).isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await page.getByText('classified').count()).toBe(1);
    await signIn(page, username, password);
    await expect.poll(() => page.getByRole('banner').getByText(username).isVisible()).toBe(true);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Consume');
    expect(await page.getByText('classified').count()).toBe(0);
    expect(await page.getByLabel('Topic').inputValue()).toBe('');
    expect(unexpected(errors)).toEqual([]);
  });
});

describe('admin UI: sign-in (MariaDB, auth on)', () => {
  let browser: Browser;
  let server: UiServer;
  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.mysql, { auth: true })]);
    expect((await server.api.enqueue('maria.orders', 'hello')).status).toBe(201);
  });
  afterAll(async () => browser?.close());

  it('signs in and sees the overview; a rate-limited sign-in says so inline', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/overview' });
    await expect.poll(() => signInDialog(page).isVisible(), { timeout: 10_000 }).toBe(true);
    await signIn(page);
    await expect.poll(() => page.getByRole('link', { name: 'maria.orders' }).isVisible(), { timeout: 10_000 }).toBe(true);

    // Two logins so far (the test helper's and this one); eight more fill the minute's ten.
    await page.getByRole('button', { name: 'Sign out' }).click();
    for (let i = 0; i < 8; i++) await server.api.post('/api/auth/login', { username: ADMIN.username, password: 'wrong-password-123' });
    await page.getByLabel('Username').fill(ADMIN.username);
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => signInDialog(page).getByRole('alert').textContent()).toMatch(/^Too many login attempts\. Try again in \d+ s\.$/);
    expect(await storedToken(page)).toBeNull();
    expect(errors.filter((e) => !/status of 4(01|29)/.test(e))).toEqual([]);
  });
});
