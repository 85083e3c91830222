import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible, launchBrowser, openUi, startUiServer, type UiServer } from './helpers/browser.js';
import { engineByName } from './helpers/engines.js';

/** Console errors other than the browser's own line for a refused request (the tests provoke 4xx on purpose). */
const unexpected = (errors: string[]) => errors.filter((e) => !e.includes('Failed to load resource'));

/** A moment as the page's datetime-local input takes it: the browser's local time, to the second. */
const localInput = (page: Page, ms: number) =>
  page.evaluate((t) => {
    const d = new Date(t);
    const p = (n: number) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }, ms);

describe('admin UI: replay (SQLite, auth off)', () => {
  let browser: Browser;
  let server: UiServer;
  let loggedFrom: number;
  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.sqlite)]);
    expect((await server.api.put('/api/topic-configs/ui.pay', { replayable: true, replay_window_seconds: 3600 })).status).toBe(200);
    loggedFrom = Math.floor(Date.now() / 1000) * 1000 - 1000;
    const messages = Array.from({ length: 25 }, (_, i) => ({ topic: 'ui.pay', payload: `payment ${i + 1}` }));
    expect((await server.api.post('/api/messages/batch', { messages })).status).toBe(201);
    const ids = (await server.api.dequeue('ui.pay', { count: 25 })).body.messages.map((m: { id: string }) => m.id);
    expect((await server.api.post('/api/messages/ack', { ids })).body.acked).toHaveLength(25);
  });
  afterAll(async () => browser?.close());

  it('says plainly when a topic is not replayable and how to make it so', async () => {
    await server.api.put('/api/topic-configs/ui.plain', { max_retries: 2 });
    const { page, errors } = await openUi(browser, server, { path: '#/replay' });
    await page.getByLabel('Topic', { exact: true }).fill('ui.plain');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByText('ui.plain is not replayable').waitFor();
    expect(await page.getByRole('link', { name: 'its configuration' }).getAttribute('href')).toBe('#/topics?topic=ui.plain');
    expect(await page.getByRole('button', { name: 'Replay' }).count()).toBe(0);
    await expectAccessible(page);
    expect(unexpected(errors)).toEqual([]);
  });

  it('switching topics leaves one topic picker, and none behind on other screens', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/replay?topic=ui.pay' });
    await page.getByRole('heading', { name: 'Replay ui.pay' }).waitFor();
    for (const topic of ['ui.plain', 'ui.pay', 'ui.plain']) {
      await page.getByLabel('Topic', { exact: true }).fill(topic);
      await page.getByRole('button', { name: 'Show', exact: true }).click();
      await page.getByRole('heading', { name: `Replay ${topic}` }).waitFor();
    }
    expect(await page.getByLabel('Topic', { exact: true }).count()).toBe(1);
    await page.evaluate(() => (location.hash = '#/users'));
    await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
    expect(await page.getByLabel('Topic', { exact: true }).count()).toBe(0);
    expect(unexpected(errors)).toEqual([]);
  });

  it('pages through the message log', async () => {
    const { page } = await openUi(browser, server, { path: '#/replay?topic=ui.pay' });
    const pager = page.getByRole('navigation', { name: 'Message log pages' });
    await pager.getByText('1–20 of 25').waitFor();
    const log = page.getByRole('region', { name: 'Message log' });
    await expect.poll(() => log.getByRole('row').count()).toBe(21); // header + 20
    await log.getByText('payment 1', { exact: true }).waitFor(); // base64 in the API, text on screen
    await pager.getByRole('button', { name: 'Next' }).click();
    await pager.getByText('21–25 of 25').waitFor();
    await log.getByText('payment 25', { exact: true }).waitFor();
    expect(await log.getByRole('row').count()).toBe(6);
    expect(await pager.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true);
  });

  it("names the zone of the log's times and of the from-time: the browser's", async () => {
    const [entry] = (await server.api.get('/api/topics/ui.pay/message-log?limit=1')).body.items;
    // Tokyo is never this machine's zone (UTC here): a time shown unnamed, or in UTC, fails.
    const { page, errors } = await openUi(browser, server, { path: '#/replay?topic=ui.pay', timezoneId: 'Asia/Tokyo' });
    const log = page.getByRole('region', { name: 'Message log' });
    // The screen's first row is the API's first entry: created, then acked.
    const times = log.getByRole('row').nth(1).locator('time');
    await expect.poll(() => times.count()).toBe(2);
    for (const [i, iso] of [entry.created_at, entry.acked_at].entries()) {
      expect(await times.nth(i).getAttribute('datetime')).toBe(iso);
      expect(await times.nth(i).getAttribute('title')).toBe(iso);
      expect(await times.nth(i).textContent()).toMatch(/ GMT\+9$/);
    }
    await page.getByText('your local time, GMT+9; sent as UTC').waitFor();
    expect(unexpected(errors)).toEqual([]);
  });

  it('moves back to the last page when the log is trimmed under the reader', async () => {
    expect((await server.api.put('/api/topic-configs/ui.trim', { replayable: true })).status).toBe(200);
    const ackAll = async (count: number) => {
      const messages = Array.from({ length: count }, (_, i) => ({ topic: 'ui.trim', payload: `entry ${i}` }));
      expect((await server.api.post('/api/messages/batch', { messages })).status).toBe(201);
      const ids = (await server.api.dequeue('ui.trim', { count })).body.messages.map((m: { id: string }) => m.id);
      expect((await server.api.post('/api/messages/ack', { ids })).body.acked).toHaveLength(count);
    };
    // The oldest entry alone before the cut, then 20 after it: 21 entries, a second page of one.
    await ackAll(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const cut = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await ackAll(20);

    const { page, errors } = await openUi(browser, server, { path: '#/replay?topic=ui.trim' });
    const pager = page.getByRole('navigation', { name: 'Message log pages' });
    await pager.getByText('1–20 of 21').waitFor();
    await pager.getByRole('button', { name: 'Next' }).click();
    await pager.getByText('21–21 of 21').waitFor();
    // Trimmed as the archive reaper trims: the oldest entries go, and the second page is past the end.
    const trimmed = await server.api.delete(`/api/topics/ui.trim/message-log?before=${encodeURIComponent(cut)}`);
    expect(trimmed.body).toEqual({ deleted: 1 });
    // The page refetches when the person comes back to the tab (refetchOnWindowFocus).
    await expect
      .poll(async () => {
        await page.evaluate(() => window.dispatchEvent(new Event('visibilitychange')));
        return pager.locator('[aria-live]').textContent();
      })
      .toBe('1–20 of 20'); // not "21–20 of 20"
    const log = page.getByRole('region', { name: 'Message log' });
    await expect.poll(() => log.getByRole('row').count()).toBe(21); // header + 20
    expect(unexpected(errors)).toEqual([]);
  });

  it('fits a 375 px wide screen', async () => {
    const { page } = await openUi(browser, server, { path: '#/replay?topic=ui.pay', width: 375 });
    await page.getByRole('region', { name: 'Message log' }).waitFor();
    await page.getByLabel('Replay from').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
  });

  it('keeps the from-time within the replay window, replays the logged messages, and shows a 422 inline', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/replay?topic=ui.pay' });
    await page.getByText('Replay window: the last 1.0 h').waitFor();
    const from = page.getByLabel('Replay from');
    expect(await from.getAttribute('type')).toBe('datetime-local');
    // The window is the input's min (and now its max).
    const min = Date.parse(`${await from.getAttribute('min')}`); // local time, parsed in this process's zone = the browser's
    expect(Math.abs(min - (Date.now() - 3_600_000))).toBeLessThan(120_000);

    await from.fill(await localInput(page, Date.now() - 2 * 3_600_000));
    await page.getByText('That is before the replay window').waitFor();
    expect(await page.getByRole('button', { name: 'Replay' }).isDisabled()).toBe(true);
    expect((await server.api.get('/api/messages?topic=ui.pay')).body.total).toBe(0);

    await from.fill(await localInput(page, loggedFrom));
    await page.getByRole('button', { name: 'Replay' }).click();
    const dialog = page.getByRole('dialog', { name: 'Replay ui.pay' });
    await dialog.waitFor();
    await expectAccessible(page);
    await dialog.getByRole('button', { name: 'Replay' }).click();
    await page.getByRole('status').getByText(`Enqueued 25 messages again`).waitFor();
    expect(await page.getByRole('status').textContent()).toContain(new Date(loggedFrom).toISOString());
    const replayed = (await server.api.get('/api/messages?topic=ui.pay&limit=200')).body;
    expect(replayed.total).toBe(25);
    expect(new Set(replayed.items.map((m: { status: string }) => m.status))).toEqual(new Set(['pending']));
    expect(replayed.items.map((m: { payload: string }) => m.payload).sort()).toEqual(Array.from({ length: 25 }, (_, i) => `payment ${i + 1}`).sort());

    // The topic stops being replayable behind the screen's back: the service's 422 shows inline.
    expect((await server.api.put('/api/topic-configs/ui.pay', { replay_window_seconds: 3600 })).status).toBe(200);
    await page.getByRole('button', { name: 'Replay' }).click();
    await dialog.getByRole('button', { name: 'Replay' }).click();
    await page.getByRole('alert').getByText('topic "ui.pay" is not replayable').waitFor();
    expect((await server.api.get('/api/messages?topic=ui.pay')).body.total).toBe(25);
    expect(unexpected(errors)).toEqual([]);
  });
});
