import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, USER_PASSWORD } from './helpers/auth.js';
import { expectAccessible, launchBrowser, startUiServer, type UiServer } from './helpers/browser.js';
import { engineByName } from './helpers/engines.js';
import { Api } from './helpers/http.js';

/** The two sizes every layout point is checked at: a laptop and a phone. */
const WIDE = { width: 1366, height: 900 };
const PHONE = { width: 375, height: 800 };
const SIZES = [WIDE, PHONE] as const;

const AVRO = JSON.stringify({
  type: 'record',
  name: 'Payment',
  fields: [
    { name: 'order_id', type: 'string' },
    { name: 'amount_cents', type: 'long' },
    { name: 'note', type: 'string', doc: 'A long schema pushes whatever follows it down: '.repeat(4) },
    { name: 'currency', type: { type: 'enum', name: 'Currency', symbols: ['EUR', 'USD', 'GBP'] } },
  ],
});

/** How many lines of text an element takes: its height over its line height. */
function lines(locator: Locator): Promise<number> {
  return locator.evaluate((el) => Math.round(el.getBoundingClientRect().height / parseFloat(getComputedStyle(el).lineHeight)));
}

/** The page never scrolls sideways (a table may scroll in its own box). */
async function expectNoSidewaysScroll(page: Page, width: number): Promise<void> {
  expect(await page.evaluate(() => document.documentElement.scrollWidth), `page wider than ${width} px`).toBeLessThanOrEqual(width);
}

async function login(url: string, username: string, password: string): Promise<string> {
  const res = await new Api(url).post('/api/auth/login', { username, password });
  expect(res.status, res.text).toBe(200);
  return res.body.token;
}

/**
 * Issue 47's admin UI points (12-19): the phone layout, one-line identifiers, the enqueue form, read-only
 * topics, the live chart, the audit log, stale notices and the message order. One service with auth on (the
 * read-only view needs a user without grants) and queue.max_retries 7 (the editor names the server default).
 */
describe('admin UI: phone layout and readability (SQLite, auth on)', () => {
  let browser: Browser;
  let server: UiServer;
  let adminToken: string;
  let readerToken: string;
  let readerId: string;

  /** A fresh context signed in with `token` (put where the UI keeps it: no login form, no login attempts). */
  async function open(path: string, size: { width: number; height: number } = WIDE, token = adminToken, setup?: (page: Page) => Promise<void>) {
    const context = await browser.newContext({ viewport: size });
    await context.addInitScript((t) => sessionStorage.setItem('conveyor.token', t), token);
    const page = await context.newPage();
    await setup?.(page);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
    await page.goto(`${server.url}/${path}`);
    return { page, context, errors };
  }

  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.sqlite, { auth: true, env: { CONVEYOR_QUEUE_MAX_RETRIES: '7' } })]);
    const api = server.api;
    const reader = await api.post('/api/users', { username: 'ui-reader', password: USER_PASSWORD, is_admin: false });
    expect(reader.status, reader.text).toBe(201);
    readerId = reader.body.id;
    expect((await api.post(`/api/users/${readerId}/grants`, { action: 'read', topic_pattern: 'rd.*' })).status).toBe(201);
    [adminToken, readerToken] = await Promise.all([login(server.url, ADMIN.username, ADMIN.password), login(server.url, 'ui-reader', USER_PASSWORD)]);

    // rd.orders: pending and in-flight work, a consumer group; rd.jobs: a dead letter; rd.pay: an Avro schema.
    expect((await api.put('/api/topic-configs/rd.jobs', { max_retries: 1 })).status).toBe(200);
    expect((await api.put('/api/topic-schemas/rd.pay', { schema_json: AVRO })).status).toBe(200);
    expect((await api.post('/api/topics/rd.orders/consumer-groups', { consumer_group: 'billing' })).status).toBe(201);
    for (let i = 0; i < 3; i++) expect((await api.enqueue('rd.orders', `{"order_id":"A-10${i}","customer":"customer-${i}"}`, { key: `order-10${i}` })).status).toBe(201);
    expect((await api.enqueue('rd.jobs', 'job')).status).toBe(201);
    const [job] = (await api.dequeue('rd.jobs')).body.messages;
    expect((await api.post(`/api/messages/${job.id}/nack`, { error: 'boom' })).status).toBe(204);
  });
  afterAll(async () => browser?.close());

  it('12: the overview is a table on a laptop and a card per topic on a phone, with a one-row menu', async () => {
    for (const size of SIZES) {
      const { page, errors, context } = await open('#/overview', size);
      const nav = page.getByRole('navigation', { name: 'Main' });
      if (size === WIDE) {
        await page.getByRole('table').waitFor();
        expect(await page.getByRole('columnheader', { name: 'Consumer groups' }).count()).toBe(1);
        expect(await nav.getByRole('button', { name: /Menu/ }).count()).toBe(0);
        expect(await nav.getByRole('link', { name: 'Messages' }).isVisible()).toBe(true);
      } else {
        const cards = page.getByRole('list', { name: 'Topics' }).getByRole('listitem');
        await expect.poll(() => cards.count(), { timeout: 10_000 }).toBe(3); // rd.jobs (its .dlq folded in), rd.orders, rd.pay
        expect(await page.locator('main table').count()).toBe(0);
        // Each card lies within the screen and reads figure by figure; no blank group line for a topic without groups.
        for (const card of await cards.all()) {
          const box = (await card.boundingBox())!;
          expect(box.x).toBeGreaterThanOrEqual(0);
          expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
        }
        const orders = cards.filter({ hasText: 'rd.orders' });
        const jobs = cards.filter({ hasText: 'rd.jobs' });
        expect(await orders.getByRole('definition').first().textContent()).toBe('3');
        expect(await orders.textContent()).toContain('billing: 3 pending');
        expect(await jobs.textContent()).toMatch(/Dead letters1/);
        expect(await jobs.textContent()).not.toContain('Consumer groups');
        // The navigation is one row: a Menu button that opens the links and closes once one is chosen.
        const menu = nav.getByRole('button', { name: /Menu/ });
        expect((await nav.boundingBox())!.height).toBeLessThan(60);
        expect(await nav.getByRole('link', { name: 'Messages' }).isVisible()).toBe(false);
        await menu.click();
        expect(await menu.getAttribute('aria-expanded')).toBe('true');
        await nav.getByRole('link', { name: 'Messages' }).click();
        await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Messages');
        expect(await menu.getAttribute('aria-expanded')).toBe('false');
        expect(await nav.getByRole('link', { name: 'Overview' }).isVisible()).toBe(false);
        await page.goBack();
        await cards.first().waitFor();
      }
      await expectNoSidewaysScroll(page, size.width);
      await expectAccessible(page);
      expect(errors).toEqual([]);
      await context.close();
    }
  });

  it('13: keys stay on one line; a long key or payload ends in an ellipsis, whole on hover and focus', async () => {
    const longKey = `customer-${'k'.repeat(150)}-end`;
    const payload = JSON.stringify({ order_id: 'A-1001', items: Array.from({ length: 12 }, (_, i) => ({ sku: `sku-${i}`, quantity: i })) });
    expect((await server.api.enqueue('rd.keys', payload, { key: longKey })).status).toBe(201);
    expect((await server.api.enqueue('rd.keys', 'short', { key: 'order-1010' })).status).toBe(201);
    for (const size of SIZES) {
      const { page, errors, context } = await open('#/messages?topic=rd.keys', size);
      const table = page.getByRole('region', { name: 'Message list' });
      const short = table.getByText('order-1010', { exact: true });
      await short.waitFor();
      expect(await lines(short)).toBe(1);
      expect(await short.getAttribute('title')).toBeNull();
      expect(await short.getAttribute('tabindex')).toBeNull();

      const long = table.getByText(longKey, { exact: true });
      expect(await lines(long)).toBe(1);
      expect(await long.evaluate((el) => [getComputedStyle(el).textOverflow, el.scrollWidth > el.clientWidth])).toEqual(['ellipsis', true]);
      expect(await long.getAttribute('title')).toBe(longKey);
      // Focused (from the keyboard too), the key shows whole over several lines.
      expect(await long.getAttribute('tabindex')).toBe('0');
      await long.focus();
      expect(await lines(long)).toBeGreaterThan(1);
      expect(await long.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);

      // The payload preview: one line, never broken inside a token, the payload in its title.
      const preview = table.getByRole('row').filter({ hasText: 'A-1001' }).locator('.payload-preview');
      expect(await lines(preview)).toBe(1);
      expect(await preview.getAttribute('title')).toBe(payload);
      await expectNoSidewaysScroll(page, size.width);
      expect(errors).toEqual([]);
      await context.close();
    }
  });

  it('14: the Avro schema stays folded, and refusals show beside the field they are about', async () => {
    expect((await server.api.put('/api/topic-configs/rd.full', { max_depth: 1 })).status).toBe(200);
    expect((await server.api.enqueue('rd.full', 'first')).status).toBe(201);
    for (const size of SIZES) {
      const { page, context } = await open('#/enqueue?topic=rd.pay', size);
      const panel = page.getByRole('region', { name: /Avro schema/ });
      await panel.waitFor();
      expect(await panel.locator('details').getAttribute('open')).toBeNull();
      expect(await panel.locator('pre.schema').isVisible()).toBe(false);
      // The payload editor starts within the first screen on a laptop; on a phone the panel stays small.
      const payload = page.getByLabel('Payload');
      if (size === WIDE) expect((await payload.boundingBox())!.y).toBeLessThan(WIDE.height);
      expect((await panel.boundingBox())!.height).toBeLessThan(200);
      await panel.getByText('Show the schema').click();
      expect(await panel.locator('pre.schema').isVisible()).toBe(true);
      await expectNoSidewaysScroll(page, size.width);

      // A full topic (429) is about the topic: at the topic field, nothing under the button.
      await page.getByLabel('Topic', { exact: true }).fill('rd.full');
      await payload.fill('second');
      await page.getByRole('button', { name: 'Enqueue', exact: true }).click();
      const topic = page.getByLabel('Topic', { exact: true });
      await expect.poll(() => topic.getAttribute('aria-invalid')).toBe('true');
      const full = await server.api.post('/api/messages', { topic: 'rd.full', payload: 'second' });
      expect(full.status).toBe(429);
      const describedBy = (await topic.getAttribute('aria-describedby'))!.split(' ').pop();
      expect(await page.locator(`[id="${describedBy}"]`).textContent()).toBe(full.body.error);
      expect(await page.locator('form .form-actions ~ .error, form > p.error').count()).toBe(0);
      await context.close();
    }

    // The topic editor: the service's refusal of max_depth 0 is shown at Max depth, not under Save.
    const { page, context } = await open('#/topics?topic=rd.full', PHONE);
    const config = page.getByRole('region', { name: 'Configuration' });
    const depth = config.getByLabel('Max depth');
    await expect.poll(() => depth.inputValue()).toBe('1');
    await depth.fill('0');
    await config.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => depth.getAttribute('aria-invalid')).toBe('true');
    const refused = await server.api.put('/api/topic-configs/rd.full', { max_depth: 0 });
    expect(refused.status).toBe(400);
    const describedBy = (await depth.getAttribute('aria-describedby'))!.split(' ').pop();
    expect(await page.locator(`[id="${describedBy}"]`).textContent()).toBe(refused.body.error);
    expect(await config.locator('.editor-actions ~ .error').count()).toBe(0);
    await expectNoSidewaysScroll(page, PHONE.width);
    await context.close();
  });

  it('15: a user without an admin grant on the topic sees it read-only: no form, no Save, no "Permission denied"', async () => {
    for (const size of SIZES) {
      const { page, context } = await open('#/topics?topic=rd.pay', size, readerToken);
      const readOnly = page.getByRole('region', { name: 'Configuration and schema (read-only)' });
      await readOnly.waitFor({ timeout: 10_000 });
      expect(await readOnly.textContent()).toContain('needs an admin grant');
      // What the reader may know: the topic's schema version (GET /api/topics, with the read grant).
      await expect.poll(() => readOnly.textContent()).toContain('version 1');
      expect(await page.getByRole('button', { name: 'Save' }).count()).toBe(0);
      expect(await page.getByLabel('Max retries').count()).toBe(0);
      expect(await page.getByLabel('Avro schema (JSON)').count()).toBe(0);
      expect(await page.getByText('Permission denied').count()).toBe(0);
      await expectNoSidewaysScroll(page, size.width);
      await expectAccessible(page);
      await context.close();
    }
    // An admin gets the editors for the same topic.
    const { page, context } = await open('#/topics?topic=rd.pay');
    await page.getByRole('region', { name: 'Configuration' }).getByRole('button', { name: 'Save' }).waitFor();
    await context.close();
  });

  it('16: the chart shows real times from its first sample, and a stable, distinct style per topic', async () => {
    // Ten topics: the old palette of eight repeated from the ninth.
    for (let i = 0; i < 10; i++) expect((await server.api.enqueue(`rd.chart${i}`, 'x')).status).toBe(201);
    // Only the first topic list is answered: the chart must draw from that one sample.
    let answered = 0;
    const { page, context } = await open('#/overview', WIDE, adminToken, (p) =>
      p.route('**/api/topics?*', async (route) => {
        if (answered++ === 0) await route.continue();
        // Later polls never answer: the chart keeps its single sample while it is looked at.
      }),
    );
    const chart = page.getByRole('img', { name: /backlog per topic/ });
    await expect.poll(() => chart.getAttribute('data-points'), { timeout: 10_000 }).toBe('1');
    // Times of day near now on the axis, not 00:00:00 on every tick.
    const ticks = (await chart.getAttribute('data-x-ticks'))!.split(' | ');
    expect(ticks.length).toBeGreaterThan(1);
    expect(new Set(ticks).size).toBe(ticks.length);
    for (const tick of ticks) expect(tick).toMatch(/^\d\d:\d\d:\d\d$/);
    // The lone sample is drawn: pixels of rd.orders' colour on the canvas.
    const legend = page.getByRole('list', { name: 'Latest backlog' });
    const ordersColour = (await legend.locator('[data-topic="rd.orders"] line').getAttribute('stroke'))!;
    const drawn = await chart.locator('canvas').evaluate((canvas: HTMLCanvasElement, hex: string) => {
      const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
      const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      let n = 0;
      for (let i = 0; i < data.length; i += 4) if (Math.abs(data[i] - r) < 8 && Math.abs(data[i + 1] - g) < 8 && Math.abs(data[i + 2] - b) < 8) n++;
      return n;
    }, ordersColour);
    expect(drawn).toBeGreaterThan(10);

    const styles = async () =>
      Object.fromEntries(
        await legend.getByRole('listitem').evaluateAll((items) => items.map((li) => [li.getAttribute('data-topic')!, `${li.querySelector('line')!.getAttribute('stroke')} ${li.querySelector('line')!.getAttribute('stroke-dasharray') ?? 'solid'}`])),
      );
    const before = await styles();
    expect(Object.keys(before).length).toBeGreaterThanOrEqual(12);
    // No two topics share a colour and dash pattern.
    expect(new Set(Object.values(before)).size).toBe(Object.keys(before).length);
    // The unanswered polls are dropped with their handlers, so closing does not wait for them.
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await context.close();

    // A reload (a new page) draws every topic as before.
    const again = await open('#/overview');
    const legendAgain = again.page.getByRole('list', { name: 'Latest backlog' });
    await expect.poll(() => legendAgain.getByRole('listitem').count(), { timeout: 10_000 }).toBe(Object.keys(before).length);
    const after = Object.fromEntries(
      await legendAgain.getByRole('listitem').evaluateAll((items) => items.map((li) => [li.getAttribute('data-topic')!, `${li.querySelector('line')!.getAttribute('stroke')} ${li.querySelector('line')!.getAttribute('stroke-dasharray') ?? 'solid'}`])),
    );
    expect(after).toEqual(before);
    await again.context.close();
  });

  it('17: the audit log names users and says what happened in one line, the record on expand', async () => {
    const bob = await server.api.post('/api/users', { username: 'audit-bob', password: USER_PASSWORD, is_admin: false });
    expect(bob.status).toBe(201);
    expect((await server.api.post(`/api/users/${bob.body.id}/grants`, { action: 'write', topic_pattern: 'rd.orders' })).status).toBe(201);
    expect((await server.api.put('/api/topic-configs/rd.audit', { max_retries: 2 })).status).toBe(200);
    expect((await server.api.put('/api/topic-configs/rd.audit', { max_retries: 5 })).status).toBe(200);
    for (const size of SIZES) {
      const { page, errors, context } = await open('#/maintenance', size);
      const table = page.getByRole('table', { name: 'Audit records' });
      const rows = table.getByRole('row').filter({ has: page.getByRole('cell') });
      const grant = rows.filter({ hasText: 'Granted write on rd.orders to audit-bob' });
      await grant.waitFor({ timeout: 10_000 });
      expect(await rows.filter({ hasText: 'Created user audit-bob' }).count()).toBe(1);
      expect(await rows.filter({ hasText: 'Set the configuration of rd.audit: max_retries 2 → 5' }).count()).toBe(1);
      // The user's id is not on show; the row is one line.
      expect(await grant.innerText()).not.toContain(bob.body.id);
      const summary = grant.locator('.audit-summary .truncate');
      expect(await lines(summary)).toBe(1);
      // Expanded: the record's target id and details.
      await grant.getByText('Details').click();
      expect(await grant.innerText()).toContain(bob.body.id);
      expect(await grant.innerText()).toContain('"topic_pattern": "rd.orders"');
      await expectNoSidewaysScroll(page, size.width);
      expect(errors).toEqual([]);
      await context.close();
    }
  });

  it('18: no stale notice after switching topic, no pager for an empty list, and the server defaults named', async () => {
    const { page, errors, context } = await open('#/messages?topic=rd.jobs.dlq', PHONE);
    await page.getByRole('checkbox', { name: 'Select all dead letters on this page' }).check();
    await page.getByRole('button', { name: /Requeue selected/ }).click();
    const notice = page.getByRole('status').filter({ hasText: /Requeued/ });
    await expect.poll(() => notice.count()).toBe(1);
    await page.getByRole('form', { name: 'Filters' }).getByLabel('Topic').fill('rd.none');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByText('No messages in rd.none.').waitFor();
    expect(await page.getByText(/Requeued/).count()).toBe(0);
    expect(await page.getByRole('navigation', { name: 'Message pages' }).count()).toBe(0);
    expect(await page.getByText('0–0 of 0').count()).toBe(0);
    await context.close();

    for (const size of SIZES) {
      const editor = await open('#/topics?topic=rd.defaults', size);
      const config = editor.page.getByRole('region', { name: 'Configuration' });
      const hint = async (label: string) => {
        const field = config.getByLabel(label);
        return editor.page.locator(`[id="${(await field.getAttribute('aria-describedby'))!.split(' ')[0]}"]`).textContent();
      };
      await expect.poll(() => hint('Max retries'), { timeout: 10_000 }).toMatch(/Empty: the server default, 7 \(queue\.max_retries\)\.$/);
      expect(await hint('Message TTL (seconds)')).toMatch(/Empty: the server default, 86400 \(1\.0 d\) \(queue\.message_ttl\)\.$/);
      expect(await hint('Retry backoff (seconds)')).toMatch(/Empty: the server default, 0 \(queue\.retry_backoff_seconds\)\.$/);
      expect(await hint('Retry backoff cap (seconds)')).toMatch(/Empty: the server default, 3600 \(1\.0 h\) \(queue\.retry_backoff_max_seconds\)\.$/);
      await expectNoSidewaysScroll(editor.page, size.width);
      await editor.context.close();
    }
    expect(errors).toEqual([]);
  });

  it('19: the unfiltered list is newest first, sortable, with dead letters marked', async () => {
    expect((await server.api.enqueue('rd.jobs', 'fails again')).status).toBe(201);
    const [job] = (await server.api.dequeue('rd.jobs', { count: 10 })).body.messages;
    expect((await server.api.post(`/api/messages/${job.id}/nack`, { error: 'boom' })).status).toBe(204);
    expect((await server.api.enqueue('rd.sort', 'older')).status).toBe(201);
    const latest = (await server.api.enqueue('rd.sort', 'newer')).body.id;
    const dead = (await server.api.get('/api/messages?topic=rd.jobs.dlq')).body.items;
    expect(dead.length).toBeGreaterThan(0);
    for (const size of SIZES) {
      const { page, errors, context } = await open('#/messages', size);
      const rows = page.getByRole('region', { name: 'Message list' }).getByRole('row').filter({ has: page.getByRole('cell') });
      const idOf = (row: Locator) => row.getByRole('button').first().getAttribute('title');
      await expect.poll(() => idOf(rows.first()), { timeout: 10_000 }).toBe(latest);
      await page.getByLabel('Order', { exact: true }).selectOption('oldest');
      await expect.poll(() => page.evaluate(() => location.hash)).toContain('order=oldest');
      await expect.poll(() => idOf(rows.first())).not.toBe(latest);
      const oldest = (await server.api.get('/api/messages?limit=1')).body.items[0].id;
      expect(await idOf(rows.first())).toBe(oldest);
      // A dead letter is marked as one in the list, whatever topic it lies in.
      for (const d of dead) expect(await rows.filter({ has: page.locator(`[title="${d.id}"]`) }).getByText('dead letter', { exact: true }).count()).toBe(1);
      expect(await rows.filter({ hasText: 'rd.sort' }).getByText('dead letter', { exact: true }).count()).toBe(0);
      await expectNoSidewaysScroll(page, size.width);
      expect(errors).toEqual([]);
      await context.close();
    }
  });
});
