import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible, launchBrowser, openUi, signIn, startUiServer, type UiServer } from './helpers/browser.js';
import { engineByName } from './helpers/engines.js';

/** Waits until the server's clock (the same machine's) has passed `iso`: TTLs and replay windows are real time. */
async function waitUntilPast(iso: string): Promise<void> {
  const wait = Date.parse(iso) - Date.now() + 50;
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}

function reaperResult(page: Page, title: string) {
  return page.getByRole('region', { name: title }).getByRole('status');
}

describe('admin UI: maintenance (SQLite, auth on)', () => {
  let browser: Browser;
  let server: UiServer;
  beforeAll(async () => {
    // The in-process expiry and archive reapers stay off, so only the runs asked for here do any work.
    const env = { CONVEYOR_QUEUE_EXPIRY_REAPER_INTERVAL: '0', CONVEYOR_QUEUE_ARCHIVE_REAPER_INTERVAL: '0' };
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.sqlite, { auth: true, env })]);
  });
  afterAll(async () => browser?.close());

  it('runs each reaper and shows what it removed', async () => {
    // Two messages with a one-second TTL, and one archived message of a replayable topic with a one-second window.
    expect((await server.api.put('/api/topic-configs/short-lived', { message_ttl_seconds: 1 })).status).toBe(200);
    expect((await server.api.enqueue('short-lived', 'a')).status).toBe(201);
    expect((await server.api.enqueue('short-lived', 'b')).status).toBe(201);
    expect((await server.api.enqueue('kept', 'c')).status).toBe(201);
    expect((await server.api.put('/api/topic-configs/archived', { replayable: true, replay_window_seconds: 1 })).status).toBe(200);
    expect((await server.api.enqueue('archived', 'd')).status).toBe(201);
    const [claimed] = (await server.api.dequeue('archived')).body.messages;
    expect((await server.api.post(`/api/messages/${claimed.id}/ack`)).status).toBe(204);
    const log = await server.api.get('/api/topics/archived/message-log');
    expect(log.body.total).toBe(1);
    const expiring = (await server.api.get('/api/messages?topic=short-lived')).body.items as Array<{ expires_at: string }>;
    await waitUntilPast(expiring.map((m) => m.expires_at).sort().at(-1)!);
    await waitUntilPast(new Date(Date.parse(log.body.items[0].created_at) + 1000).toISOString());

    const { page, errors } = await openUi(browser, server, { path: '#/maintenance' });
    await signIn(page);
    await expect.poll(() => page.getByRole('button', { name: 'Run expiry reaper now' }).isEnabled()).toBe(true);
    await expectAccessible(page);

    await page.getByRole('button', { name: 'Run expiry reaper now' }).click();
    await expect.poll(() => reaperResult(page, 'Expiry reaper').textContent()).toMatch(/^Expired 2 messages \(ran at .+\)$/);
    const afterExpiry = (await server.api.get('/api/messages?topic=short-lived')).body.items as Array<{ status: string }>;
    expect(afterExpiry.map((m) => m.status)).toEqual(['expired', 'expired']);

    await page.getByRole('button', { name: 'Run delete reaper now' }).click();
    await expect.poll(() => reaperResult(page, 'Delete reaper').textContent()).toMatch(/^Deleted 2 messages \(ran at .+\)$/);
    expect((await server.api.get('/api/messages?topic=short-lived')).body.total).toBe(0);
    expect((await server.api.get('/api/messages?topic=kept')).body.total).toBe(1);

    await page.getByRole('button', { name: 'Run archive reaper now' }).click();
    await expect.poll(() => reaperResult(page, 'Archive reaper').textContent()).toMatch(/^Deleted 1 archive-log entry and 0 audit records \(ran at .+\)$/);
    expect((await server.api.get('/api/topics/archived/message-log')).body.total).toBe(0);
    expect(errors).toEqual([]);
  });

  it('edits the delete-reaper schedule: a human reading, save, the 400 of a bad expression inline, and disabling', async () => {
    expect((await server.api.get('/api/admin/delete-reaper/schedule')).body).toEqual({ schedule: '', active: false });
    const { page } = await openUi(browser, server, { path: '#/maintenance' });
    await signIn(page);
    const schedule = page.getByRole('region', { name: 'Delete-reaper schedule' });
    await expect.poll(() => schedule.getByText('Disabled: the delete reaper does not run on its own.').count()).toBe(1);

    const field = schedule.getByLabel('Cron expression');
    await field.fill('0 3 * * *');
    // The reading of the typed expression, before it is saved.
    // The cron runs on the service's clock, which need not be the browser's: the reading says so.
    await expect.poll(() => schedule.getByText("New schedule: At 03:00 AM, in the service's time zone (or its CronJob's)", { exact: true }).count()).toBe(1);
    expect(await schedule.getByText("Times are in the service's time zone (or its CronJob's)").count()).toBe(1);
    await schedule.getByRole('button', { name: 'Save schedule' }).click();
    await expect.poll(async () => (await server.api.get('/api/admin/delete-reaper/schedule')).body).toEqual({ schedule: '0 3 * * *', active: true });
    await expect.poll(() => schedule.getByRole('definition').allTextContents()).toEqual(['0 3 * * *', 'Yes', "At 03:00 AM, in the service's time zone (or its CronJob's)"]);
    await expectAccessible(page);

    const refused = await server.api.put('/api/admin/delete-reaper/schedule', { schedule: 'every night' });
    expect(refused.status).toBe(400);
    await field.fill('every night');
    await schedule.getByRole('button', { name: 'Save schedule' }).click();
    await expect.poll(() => schedule.getByRole('alert').textContent()).toBe(refused.body.error);
    expect((await server.api.get('/api/admin/delete-reaper/schedule')).body.schedule).toBe('0 3 * * *');

    await field.fill('');
    await expect.poll(() => schedule.getByText('New schedule: Disabled: the delete reaper does not run on its own.').count()).toBe(1);
    await schedule.getByRole('button', { name: 'Save schedule' }).click();
    await expect.poll(async () => (await server.api.get('/api/admin/delete-reaper/schedule')).body).toEqual({ schedule: '', active: false });
    await expect.poll(() => schedule.getByRole('definition').allTextContents()).toEqual(['(none)', 'No', 'Disabled: the delete reaper does not run on its own.']);
  });

  it('lists audit records newest first, with the user created here, filtered by topic and actor, in pages', async () => {
    const created = await server.api.post('/api/users', { username: 'audited-user', password: 'user-password-123' });
    expect(created.status).toBe(201);
    // 26 records about one topic: one more than a page.
    for (let i = 1; i <= 26; i++) expect((await server.api.put('/api/topic-configs/paged', { max_retries: i })).status).toBe(200);
    const newest = (await server.api.get('/api/audit-log?limit=1')).body.items[0];

    // Tokyo is never this machine's zone (UTC here): a time shown unnamed, or in UTC, fails.
    const { page } = await openUi(browser, server, { path: '#/maintenance', timezoneId: 'Asia/Tokyo' });
    await signIn(page);
    const audit = page.getByRole('region', { name: 'Audit log' });
    const table = audit.getByRole('table', { name: 'Audit records' });
    const rows = table.getByRole('row').filter({ has: page.getByRole('cell') });
    const userCreation = rows.filter({ hasText: 'Created user audited-user' });
    await expect.poll(() => rows.count()).toBe(25);
    // Each record reads as one line in words; its details are under "Details".
    expect(newest.details).toEqual({ changed: { max_retries: { from: 25, to: 26 } } });
    await expect.poll(() => rows.first().innerText()).toContain('Set the configuration of paged: max_retries 25 → 26');
    expect(await rows.first().textContent()).toContain(newest.action);
    const at = rows.first().locator('time');
    expect(await at.textContent()).toMatch(/ GMT\+9$/);
    expect(await at.getAttribute('datetime')).toBe(newest.at);
    expect(await at.getAttribute('title')).toBe(newest.at);
    // The 26 later records fill page 1 and start page 2, where the user creation follows.
    await audit.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => userCreation.count()).toBe(1);
    // The user by name; the id only in the record, on expand.
    expect(await userCreation.innerText()).not.toContain(created.body.id);
    await userCreation.getByText('Details').click();
    expect(await userCreation.innerText()).toContain(created.body.id);
    await expectAccessible(page);
    // 375 px wide: the audit table scrolls in its own box; the page does not scroll sideways.
    await page.setViewportSize({ width: 375, height: 800 });
    await expect.poll(() => page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);

    await audit.getByLabel('Topic').fill('paged');
    await audit.getByRole('button', { name: 'Apply filters' }).click();
    const pages = audit.getByRole('navigation', { name: 'Audit log pages' });
    await expect.poll(() => pages.textContent()).toContain('1–25 of 26');
    expect(await userCreation.count()).toBe(0);
    await pages.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => pages.textContent()).toContain('26–26 of 26');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain('topic_config.set');

    await audit.getByLabel('Topic').fill('');
    await audit.getByLabel('Actor').fill('admin');
    await audit.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => pages.textContent()).toContain('1–25 of');
    await audit.getByLabel('Actor').fill('nobody');
    await audit.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => audit.getByText('No audit records match these filters.').count()).toBe(1);

    const refused = await server.api.get('/api/audit-log?topic=not%20a%20topic');
    expect(refused.status).toBe(400);
    await audit.getByLabel('Actor').fill('');
    await audit.getByLabel('Topic').fill('not a topic');
    await audit.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => audit.getByRole('alert').textContent()).toBe(refused.body.error);
  });
});
