import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USER_PASSWORD } from './helpers/auth.js';
import { expectAccessible, launchBrowser, openUi, signIn, startUiServer, type UiServer } from './helpers/browser.js';
import { availableEngines, engineByName } from './helpers/engines.js';
import type { Api } from './helpers/http.js';
import { availabilityOf } from '../src/ui/messages/availability.js';

const rows = (page: Page) => page.locator('table.message-table tbody tr');

async function listOf(api: Api, query: string): Promise<{ items: any[]; total: number }> {
  const res = await api.get(`/api/messages?${query}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** Dead letters on `<topic>.dlq`: a topic whose max_retries is 1 dead-letters on the first nack. */
async function deadLetters(api: Api, topic: string, payloads: string[]): Promise<string[]> {
  expect((await api.put(`/api/topic-configs/${topic}`, { max_retries: 1 })).status).toBe(200);
  for (const payload of payloads) expect((await api.enqueue(topic, payload)).status).toBe(201);
  const { body } = await api.dequeue(topic, { count: payloads.length });
  for (const m of body.messages) expect((await api.post(`/api/messages/${m.id}/nack`, { error: `broke on ${m.payload}` })).status).toBe(204);
  const dlq = await listOf(api, `topic=${topic}.dlq`);
  expect(dlq.total).toBe(payloads.length);
  return dlq.items.map((m) => m.id);
}

/** `iso`'s wall-clock time in Tokyo (UTC+9, no summer time), the hour as a 12- or a 24-hour clock writes it. */
function tokyoClock(iso: string): RegExp {
  const t = new Date(Date.parse(iso) + 9 * 3_600_000);
  const p = (n: number) => String(n).padStart(2, '0');
  const hours = t.getUTCHours();
  return new RegExp(`\\b0?(${hours}|${hours % 12 || 12}):${p(t.getUTCMinutes())}:${p(t.getUTCSeconds())}\\b`);
}

/** As global-setup.ts has it: without MYSQL_URL or Docker the MariaDB suite skips, and the SQLite ones still run. */
const hasMysql = availableEngines().includes(engineByName.mysql);

let browser: Browser;
let sqlite: UiServer;
let mariadb: UiServer;
let secured: UiServer;
// One browser and the three servers start together: each start is mostly waiting.
beforeAll(async () => {
  [browser, sqlite, mariadb, secured] = await Promise.all([
    launchBrowser(),
    startUiServer(engineByName.sqlite),
    hasMysql ? startUiServer(engineByName.mysql) : (undefined as unknown as UiServer),
    startUiServer(engineByName.sqlite, { auth: true }),
  ]);
});
afterAll(async () => browser?.close());

describe('admin UI messages screen (SQLite, auth off)', () => {
  let server: UiServer;
  beforeAll(() => {
    server = sqlite;
  });

  it('keeps topic, status and paging in the URL and pages 250 messages at 200 a page', async () => {
    const messages = Array.from({ length: 250 }, (_, i) => ({ topic: 'page.t', payload: `message ${i}` }));
    expect((await server.api.post('/api/messages/batch', { messages })).status).toBe(201);
    const { body } = await server.api.dequeue('page.t', { count: 3 });
    expect(body.messages).toHaveLength(3);

    const { page, errors } = await openUi(browser, server, { path: '#/messages' });
    await page.getByLabel('Topic').fill('page.t');
    await page.getByRole('button', { name: 'Show' }).click();
    await expect.poll(() => page.getByRole('navigation', { name: 'Message pages' }).textContent()).toContain('1–50 of 250');
    await page.getByLabel('Page size').selectOption('200');
    await expect.poll(() => rows(page).count()).toBe(200);
    expect(page.url()).toContain('topic=page.t');
    expect(page.url()).toContain('limit=200');
    await expectAccessible(page);

    await page.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => rows(page).count()).toBe(50);
    await expect.poll(() => page.getByRole('navigation', { name: 'Message pages' }).textContent()).toContain('201–250 of 250');
    expect(page.url()).toContain('offset=200');
    // The page's rows are the API's second page, in the same order (newest first, the list's default).
    const second = await listOf(server.api, 'topic=page.t&limit=200&offset=200&order=newest');
    expect(await rows(page).nth(0).getByRole('button').getAttribute('title')).toBe(second.items[0].id);

    await page.reload();
    await expect.poll(() => rows(page).count()).toBe(50);
    await page.goBack();
    await expect.poll(() => rows(page).count()).toBe(200);

    await page.getByLabel('Status').selectOption('processing');
    await expect.poll(() => rows(page).count()).toBe(3);
    expect(page.url()).toContain('status=processing');
    expect((await listOf(server.api, 'topic=page.t&status=processing')).total).toBe(3);
    for (const cell of await rows(page).locator('.status').allTextContents()) expect(cell).toBe('processing');

    // A 400 from the service is shown with its own message.
    await page.getByLabel('Topic').fill('not a topic!');
    await page.getByRole('button', { name: 'Show' }).click();
    const refused = await server.api.get('/api/messages?topic=not%20a%20topic!');
    expect(refused.status).toBe(400);
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain(refused.body.error);
    expect(errors.filter((e) => !e.includes('400'))).toEqual([]);
  });

  it("names the zone of the times it shows (the browser's), the exact UTC value at hand", async () => {
    expect((await server.api.put('/api/topic-configs/zoned', { message_ttl_seconds: 3600 })).status).toBe(200);
    expect((await server.api.enqueue('zoned', 'tick')).status).toBe(201);
    const [message] = (await listOf(server.api, 'topic=zoned')).items;
    // Tokyo is never this machine's zone (UTC here) and has no summer time: an unnamed or a UTC time fails.
    const { page, errors } = await openUi(browser, server, { path: '#/messages?topic=zoned', timezoneId: 'Asia/Tokyo' });
    const created = rows(page).first().locator('time');
    await expect.poll(() => created.textContent()).toMatch(/ GMT\+9$/);
    expect(await created.textContent()).toMatch(tokyoClock(message.created_at));
    expect(await created.getAttribute('datetime')).toBe(message.created_at);
    expect(await created.getAttribute('title')).toBe(message.created_at);

    await rows(page).first().getByRole('button').click();
    const drawer = page.getByRole('dialog', { name: 'Message details' });
    for (const iso of [message.created_at, message.expires_at]) {
      const time = drawer.locator(`time[datetime="${iso}"]`);
      expect(await time.textContent()).toMatch(tokyoClock(iso));
      expect(await time.textContent()).toMatch(/ GMT\+9$/);
      expect(await time.getAttribute('title')).toBe(iso);
    }
    await expectAccessible(page);
    expect(errors).toEqual([]);
  });

  it('shows when each message is available: delayed until, leased until, and in the drawer', async () => {
    const delayed = (await server.api.enqueue('timing', 'later', { delay_seconds: 7200 })).body.id;
    const leased = (await server.api.enqueue('timing', 'taken')).body.id;
    const ready = (await server.api.enqueue('timing', 'ready')).body.id;
    const { body } = await server.api.dequeue('timing', { count: 1, visibility_timeout_seconds: 600 });
    expect(body.messages.map((m: any) => m.id)).toEqual([leased]);
    const byId = new Map((await listOf(server.api, 'topic=timing')).items.map((m) => [m.id, m]));
    expect(byId.get(leased).available_at).toBe(body.messages[0].available_at);

    const { page, errors } = await openUi(browser, server, { path: '#/messages?topic=timing', timezoneId: 'Asia/Tokyo' });
    const row = (id: string) => page.getByRole('row').filter({ has: page.getByRole('button', { name: `Details of message ${id}` }) });
    await expect.poll(() => rows(page).count()).toBe(3);
    const delayedBadge = row(delayed).locator('.badge-delayed');
    expect(await delayedBadge.textContent()).toMatch(/^delayed until .* GMT\+9$/);
    expect(await delayedBadge.textContent()).toMatch(tokyoClock(byId.get(delayed).available_at));
    expect(await delayedBadge.locator('time').getAttribute('datetime')).toBe(byId.get(delayed).available_at);
    expect(await row(leased).locator('.badge').textContent()).toMatch(tokyoClock(byId.get(leased).available_at));
    expect(await row(leased).locator('.badge').textContent()).toMatch(/^leased until /);
    // Available now: nothing to say beyond "pending".
    expect(await row(ready).locator('.badge').count()).toBe(0);
    await expectAccessible(page);

    const drawer = page.getByRole('dialog', { name: 'Message details' });
    const available = drawer.locator('dt', { hasText: 'Available to consumers' }).locator('xpath=following-sibling::dd[1]');
    await row(delayed).getByRole('button').click();
    await expect.poll(() => available.textContent()).toMatch(/^delayed until .* GMT\+9$/);
    expect(await available.locator('time').getAttribute('datetime')).toBe(byId.get(delayed).available_at);
    await expectAccessible(page);
    await drawer.getByRole('button', { name: 'Close' }).click();
    await row(leased).getByRole('button').click();
    await expect.poll(() => available.textContent()).toMatch(/^when its lease ends, /);
    await drawer.getByRole('button', { name: 'Close' }).click();
    await row(ready).getByRole('button').click();
    await expect.poll(() => available.textContent()).toBe('since it was created');
    expect(errors).toEqual([]);
  });

  it('shows ordering keys, and a message waiting behind an earlier one of its key, in the list and the drawer', async () => {
    const head = (await server.api.enqueue('lines', 'first of a', { ordering_key: 'acct-a' })).body.id;
    const behind = (await server.api.enqueue('lines', 'second of a', { ordering_key: 'acct-a' })).body.id;
    const free = (await server.api.enqueue('lines', 'no key')).body.id;
    const claimed = (await server.api.dequeue('lines', { count: 10, visibility_timeout_seconds: 600 })).body.messages.map((m: any) => m.id);
    expect(claimed.sort()).toEqual([head, free].sort());
    const byId = new Map((await listOf(server.api, 'topic=lines')).items.map((m) => [m.id, m]));
    expect(byId.get(behind)).toMatchObject({ status: 'pending', available_at: null, ordering_key: 'acct-a' });

    const { page, errors } = await openUi(browser, server, { path: '#/messages?topic=lines' });
    const row = (id: string) => page.getByRole('row').filter({ has: page.getByRole('button', { name: `Details of message ${id}` }) });
    await expect.poll(() => rows(page).count()).toBe(3);
    const orderingColumn = (await page.locator('table.message-table thead th').allTextContents()).indexOf('Ordering key');
    const orderingCell = (id: string) => row(id).locator('td').nth(orderingColumn);
    expect([await orderingCell(head).textContent(), await orderingCell(behind).textContent(), await orderingCell(free).textContent()]).toEqual(['acct-a', 'acct-a', '—']);
    expect(await row(behind).locator('.badge-waiting').textContent()).toBe('waiting behind an earlier message of its ordering key');
    // The head is leased like any processing message; only the one behind it waits.
    expect(await row(head).locator('.badge').textContent()).toMatch(/^leased until /);
    expect(await row(head).locator('.badge-waiting').count()).toBe(0);
    await expectAccessible(page);

    const drawer = page.getByRole('dialog', { name: 'Message details' });
    const detail = (term: string) => drawer.locator('dt', { hasText: new RegExp(`^${term}$`) }).locator('xpath=following-sibling::dd[1]');
    await row(behind).getByRole('button').click();
    await expect.poll(() => detail('Ordering key').textContent()).toBe('acct-a');
    expect(await detail('Available to consumers').textContent()).toBe(
      'waiting behind an earlier message of its ordering key: its turn comes once the earlier messages of that key are gone (acked, dead-lettered, failed, expired or deleted)',
    );
    expect(await detail('Key').textContent()).toBe('— (none)');
    await expectAccessible(page);
    await drawer.getByRole('button', { name: 'Close' }).click();
    await row(free).getByRole('button').click();
    await expect.poll(() => detail('Ordering key').textContent()).toBe('— (none)');
    expect(errors).toEqual([]);
  });

  it('reads a null available_at as waiting behind the ordering key only for a pending message', () => {
    const now = Date.now();
    expect(availabilityOf({ status: 'pending', available_at: null }, now)).toBe('waiting');
    for (const status of ['failed', 'expired', 'processing'] as const) expect(availabilityOf({ status, available_at: null }, now)).toBe('none');
    expect(availabilityOf({ status: 'pending', available_at: new Date(now - 1000).toISOString() }, now)).toBe('available');
    expect(availabilityOf({ status: 'pending', available_at: new Date(now + 60_000).toISOString() }, now)).toBe('delayed');
  });

  it('shows a message in the drawer and requeues dead letters from it and from the list', async () => {
    const ids = await deadLetters(server.api, 'jobs', ['{"job":1}', 'two', 'three']);
    const { page, errors } = await openUi(browser, server, { path: '#/messages?topic=jobs.dlq' });
    await expect.poll(() => rows(page).count()).toBe(3);

    await page.getByRole('button', { name: `Details of message ${ids[0]}` }).click();
    const drawer = page.getByRole('dialog', { name: 'Message details' });
    await expect.poll(() => drawer.isVisible()).toBe(true);
    const text = await drawer.textContent();
    expect(text).toContain(ids[0]);
    expect(text).toContain('broke on {"job":1}');
    expect(text).toContain('jobs.dlq');
    // JSON is pretty-printed, with the raw text one toggle away.
    expect(await drawer.getByRole('region', { name: 'Payload' }).textContent()).toBe('{\n  "job": 1\n}');
    await drawer.getByRole('button', { name: 'Show raw text' }).click();
    expect(await drawer.getByRole('region', { name: 'Payload' }).textContent()).toBe('{"job":1}');
    await expectAccessible(page);
    await drawer.getByRole('button', { name: 'Requeue' }).click();
    await expect.poll(() => drawer.count()).toBe(0);
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Requeued 1 dead letter');
    await expect.poll(async () => (await listOf(server.api, 'topic=jobs')).items.map((m) => [m.payload, m.status])).toEqual([['{"job":1}', 'pending']]);

    await expect.poll(() => rows(page).count()).toBe(2);
    await page.getByLabel('Select all dead letters on this page').check();
    await page.getByRole('button', { name: 'Requeue selected (2)' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Requeued 2 dead letters');
    await expect.poll(async () => (await listOf(server.api, 'topic=jobs&status=pending')).total).toBe(3);
    expect((await listOf(server.api, 'topic=jobs.dlq')).total).toBe(0);

    // Requeue is offered on dead letters only: none on the original topic.
    await page.getByLabel('Topic').fill('jobs');
    await page.getByRole('button', { name: 'Show' }).click();
    await expect.poll(() => rows(page).count()).toBe(3);
    expect(await page.locator('table.message-table').getByRole('checkbox').count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Requeue/ }).count()).toBe(0);
    await rows(page).first().getByRole('button').click();
    await expect.poll(() => drawer.isVisible()).toBe(true);
    expect(await drawer.getByRole('button', { name: 'Requeue' }).count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('lays JSON out token by token: large integers, trailing zeros and repeated keys as stored', async () => {
    const payload = '{"order_id": 12345678901234567890, "price": 1.10, "dup": 1, "dup": 2, "note": "\\u00e9, [x]"}';
    expect((await server.api.enqueue('ui.exact', payload)).status).toBe(201);
    const { page, errors } = await openUi(browser, server, { path: '#/messages?topic=ui.exact' });
    await expect.poll(() => rows(page).count()).toBe(1);
    await rows(page).first().getByRole('button').click();
    const drawer = page.getByRole('dialog', { name: 'Message details' });
    // JSON.parse and JSON.stringify would show 12345678901234567000, 1.1, one "dup" and "é".
    expect(await drawer.getByRole('region', { name: 'Payload' }).textContent()).toBe(
      '{\n  "order_id": 12345678901234567890,\n  "price": 1.10,\n  "dup": 1,\n  "dup": 2,\n  "note": "\\u00e9, [x]"\n}',
    );
    expect(errors).toEqual([]);
  });

  it('moves back to the last page when the last page empties under the reader', async () => {
    // 51 dead letters: two pages at the default page size (50), the second holding one.
    await deadLetters(server.api, 'lastpage', Array.from({ length: 51 }, (_, i) => `job ${i}`));
    const { page, errors } = await openUi(browser, server, { path: '#/messages?topic=lastpage.dlq' });
    const pager = page.getByRole('navigation', { name: 'Message pages' });
    await expect.poll(() => pager.textContent()).toContain('1–50 of 51');
    await pager.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => pager.textContent()).toContain('51–51 of 51');
    // The pager may show the new page a render before the table does.
    await expect.poll(() => rows(page).count()).toBe(1);
    const last = (await listOf(server.api, 'topic=lastpage.dlq&offset=50&order=newest')).items[0].id;

    await page.getByRole('button', { name: `Details of message ${last}` }).click();
    await page.getByRole('dialog', { name: 'Message details' }).getByRole('button', { name: 'Requeue' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Requeued 1 dead letter');
    // The first page, the one that still exists, with a pager that agrees with it.
    await expect.poll(() => pager.locator('[aria-live]').textContent()).toBe('1–50 of 50'); // not "51–50 of 50"
    await expect.poll(() => rows(page).count()).toBe(50);
    expect(await page.getByText('No messages').count()).toBe(0);
    expect(page.url()).not.toContain('offset=');
    expect(await rows(page).nth(0).getByRole('button').getAttribute('title')).toBe((await listOf(server.api, 'topic=lastpage.dlq&order=newest')).items[0].id);
    expect(errors).toEqual([]);
  });

  it('deletes by key after a confirmation and purges by status behind the typed topic name', async () => {
    const api = server.api;
    expect((await api.enqueue('maint', 'first k1', { key: 'k1' })).status).toBe(201);
    expect((await api.dequeue('maint')).body.messages).toHaveLength(1); // k1 now processing
    expect((await api.enqueue('maint', 'second k1', { key: 'k1' })).status).toBe(201); // a new pending k1
    for (const p of ['a', 'b', 'c']) expect((await api.enqueue('maint', p)).status).toBe(201);
    expect((await api.dequeue('maint')).body.messages[0].payload).toBe('second k1');
    expect((await api.enqueue('maint', 'busy')).status).toBe(201);

    const { page, errors } = await openUi(browser, server, { path: '#/messages?topic=maint' });
    await expect.poll(() => rows(page).count()).toBe(6);
    await page.getByLabel('Key to delete').fill('k1');
    await page.getByRole('button', { name: 'Delete by key…' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete by key' });
    await expect.poll(() => confirm.textContent()).toContain('"k1"');
    await expectAccessible(page);
    await confirm.getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('Deleted 2 messages with key "k1" from maint.');
    expect((await listOf(api, 'topic=maint')).items.filter((m) => m.key === 'k1')).toEqual([]);
    await expect.poll(() => rows(page).count()).toBe(4);

    expect((await api.dequeue('maint')).body.messages[0].payload).toBe('a'); // one processing, three pending
    await page.getByRole('checkbox', { name: 'pending' }).check();
    await page.getByRole('button', { name: 'Purge…' }).click();
    const purge = page.getByRole('dialog', { name: 'Purge topic' });
    const action = purge.getByRole('button', { name: 'Purge' });
    expect(await action.isDisabled()).toBe(true);
    await purge.getByLabel('Type maint to confirm').fill('main');
    expect(await action.isDisabled()).toBe(true);
    await purge.getByLabel('Type maint to confirm').fill('maint');
    await expectAccessible(page);
    await action.click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('Purged 3 messages from maint.');
    const left = await listOf(api, 'topic=maint');
    expect(left.items.map((m) => m.status)).toEqual(['processing']);
    await expect.poll(() => rows(page).count()).toBe(1);
    expect(errors).toEqual([]);
  });

  it('says why a key "." or ".." cannot be deleted from a browser, instead of a 404 for the wrong path', async () => {
    const api = server.api;
    expect((await api.enqueue('dots', 'one dot', { key: '.' })).status).toBe(201);
    expect((await api.enqueue('dots', 'two dots', { key: '..' })).status).toBe(201);
    const { page, errors } = await openUi(browser, server, { path: '#/messages?topic=dots' });
    await expect.poll(() => rows(page).count()).toBe(2);
    for (const key of ['.', '..']) {
      await page.getByLabel('Key to delete').fill(key);
      await page.getByRole('button', { name: 'Delete by key…' }).click();
      const confirm = page.getByRole('dialog', { name: 'Delete by key' });
      await confirm.getByRole('button', { name: 'Delete' }).click();
      await expect
        .poll(() => confirm.getByRole('alert').textContent())
        .toBe(`A browser cannot send the key "${key}" in a URL path: it reads it as a step of the path. Delete these messages with curl --path-as-is.`);
      await confirm.getByRole('button', { name: 'Cancel' }).click();
    }
    expect((await listOf(api, 'topic=dots')).items).toHaveLength(2);
    expect(errors).toEqual([]);
  });

  it('renders hostile payloads, keys and metadata as text, never as HTML', async () => {
    const img = '<img src=x onerror="window.__xss=1">';
    const script = '<script>window.__xss=2</script>';
    const json = JSON.stringify({ html: '<img src=x onerror="window.__xss=3">', s: '<script>window.__xss=4</script>' });
    expect((await server.api.enqueue('xss', img, { key: script, metadata: { [script]: img } })).status).toBe(201);
    expect((await server.api.enqueue('xss', json, { key: img, metadata: { note: script } })).status).toBe(201);

    // Oldest first: the rows in the order they were enqueued.
    const { page, errors } = await openUi(browser, server, { path: '#/messages?topic=xss&order=oldest' });
    await expect.poll(() => rows(page).count()).toBe(2);
    expect(await rows(page).nth(0).textContent()).toContain(img);
    expect(await rows(page).nth(0).textContent()).toContain(script);
    expect(await page.getByText(img, { exact: true }).count()).toBeGreaterThan(0);

    await rows(page).nth(0).getByRole('button').click();
    const drawer = page.getByRole('dialog', { name: 'Message details' });
    await expect.poll(() => drawer.isVisible()).toBe(true);
    expect(await drawer.getByRole('region', { name: 'Payload' }).textContent()).toBe(img);
    expect(await drawer.getByRole('cell', { name: script }).count()).toBe(1);
    expect(await drawer.getByRole('cell', { name: img }).count()).toBe(1);
    expect(await drawer.textContent()).toContain(script);
    await drawer.getByRole('button', { name: 'Close' }).click();

    await rows(page).nth(1).getByRole('button').click();
    await expect.poll(() => drawer.isVisible()).toBe(true);
    expect(await drawer.getByRole('region', { name: 'Payload' }).textContent()).toBe(JSON.stringify(JSON.parse(json), null, 2));
    expect(await drawer.textContent()).toContain(img);

    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.locator('img, script:not([src])').count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('fits a 375 px screen with the list and the drawer', async () => {
    expect((await server.api.enqueue('narrow', JSON.stringify({ long: 'x'.repeat(400) }), { key: 'k'.repeat(120), metadata: { m: 'y'.repeat(300) } })).status).toBe(201);
    const { page } = await openUi(browser, server, { path: '#/messages?topic=narrow', width: 375 });
    await expect.poll(() => rows(page).count()).toBe(1);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await rows(page).first().getByRole('button').click();
    await expect.poll(() => page.getByRole('dialog', { name: 'Message details' }).isVisible()).toBe(true);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    const dialogWidth = await page.getByRole('dialog', { name: 'Message details' }).evaluate((d) => d.scrollWidth);
    expect(dialogWidth).toBeLessThanOrEqual(375);
    await expectAccessible(page);
  });
});

describe.skipIf(!hasMysql)('admin UI messages screen (MariaDB)', () => {
  let server: UiServer;
  beforeAll(() => {
    server = mariadb;
  });

  it('requeues a dead letter and purges a topic', async () => {
    const [id] = await deadLetters(server.api, 'mdb.jobs', ['only']);
    const { page, errors } = await openUi(browser, server, { path: '#/messages?topic=mdb.jobs.dlq' });
    await page.getByRole('button', { name: `Details of message ${id}` }).click();
    const drawer = page.getByRole('dialog', { name: 'Message details' });
    await drawer.getByRole('button', { name: 'Requeue' }).click();
    await expect.poll(async () => (await listOf(server.api, 'topic=mdb.jobs&status=pending')).total).toBe(1);
    // The drawer closes once the lists are refreshed; until then it is modal and the filters behind it are inert.
    await expect.poll(() => drawer.isVisible()).toBe(false);

    await page.getByLabel('Topic').fill('mdb.jobs');
    await page.getByRole('button', { name: 'Show' }).click();
    await expect.poll(() => rows(page).count()).toBe(1);
    await page.getByRole('button', { name: 'Purge…' }).click();
    const purge = page.getByRole('dialog', { name: 'Purge topic' });
    await purge.getByLabel('Type mdb.jobs to confirm').fill('mdb.jobs');
    await purge.getByRole('button', { name: 'Purge' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('Purged 1 message from mdb.jobs.');
    expect((await listOf(server.api, 'topic=mdb.jobs')).total).toBe(0);
    expect(errors).toEqual([]);
  });
});

describe('admin UI messages screen (auth on)', () => {
  let server: UiServer;
  beforeAll(() => {
    server = secured;
  });

  async function createUser(isAdmin: boolean, grants: Array<{ action: string; topic_pattern: string }>): Promise<{ id: string; username: string }> {
    const username = `u${Math.random().toString(36).slice(2, 10)}`;
    const created = await server.api.post('/api/users', { username, password: USER_PASSWORD, is_admin: isAdmin });
    expect(created.status, created.text).toBe(201);
    for (const grant of grants) expect((await server.api.post(`/api/users/${created.body.id}/grants`, grant)).status).toBe(201);
    return { id: created.body.id, username };
  }

  it('a reader sees no purge or delete-by-key, and a refused action shows the 403 message', async () => {
    const [id] = await deadLetters(server.api, 'secure', ['kept']);
    const reader = await createUser(false, [{ action: 'read', topic_pattern: 'secure.*' }]);
    const { page, errors } = await openUi(browser, server, { path: '#/messages?topic=secure.dlq' });
    await signIn(page, reader.username, USER_PASSWORD);
    await expect.poll(() => rows(page).count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Purge…' }).count()).toBe(0);
    expect(await page.getByLabel('Key to delete').count()).toBe(0);

    await page.getByRole('button', { name: `Details of message ${id}` }).click();
    const drawer = page.getByRole('dialog', { name: 'Message details' });
    await drawer.getByRole('button', { name: 'Requeue' }).click();
    await expect.poll(() => drawer.getByRole('alert').textContent()).toBe('Permission denied: insufficient permissions. Ask an administrator for a grant.');
    expect((await listOf(server.api, 'topic=secure.dlq')).total).toBe(1);
    expect(errors.every((e) => e.includes('403'))).toBe(true);
  });

  it('an admin demoted while the purge dialog is open gets the 403 message, nothing is purged, and the admin screens go', async () => {
    expect((await server.api.enqueue('secure2', 'stays')).status).toBe(201);
    const ops = await createUser(true, []);
    const { page } = await openUi(browser, server, { path: '#/messages?topic=secure2' });
    await signIn(page, ops.username, USER_PASSWORD);
    await expect.poll(() => rows(page).count()).toBe(1);
    const nav = page.getByRole('navigation', { name: 'Main' });
    for (const admin of ['Users', 'Maintenance']) expect(await nav.getByRole('link', { name: admin }).count()).toBe(1);
    await page.getByRole('button', { name: 'Purge…' }).click();
    const purge = page.getByRole('dialog', { name: 'Purge topic' });
    await purge.getByLabel('Type secure2 to confirm').fill('secure2');
    expect((await server.api.put(`/api/users/${ops.id}`, { is_admin: false })).status).toBe(200);
    await purge.getByRole('button', { name: 'Purge' }).click();
    await expect.poll(() => purge.getByRole('alert').textContent()).toBe('Permission denied: admin access required. Ask an administrator for a grant.');
    expect((await listOf(server.api, 'topic=secure2')).total).toBe(1);
    // The 403 made the tab ask again who it is: no more admin screens, without a reload.
    await expect.poll(() => nav.getByRole('link', { name: 'Users' }).count()).toBe(0);
    expect(await nav.getByRole('link', { name: 'Maintenance' }).count()).toBe(0);
  });
});
