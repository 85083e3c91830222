import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineByName } from './helpers/engines.js';
import { expectAccessible, launchBrowser, openUi, startUiServer, type UiServer } from './helpers/browser.js';

/** The overview table as {topic: {column header: cell text}}, read the way a person reads it. */
async function readTable(page: Page): Promise<Record<string, Record<string, string>>> {
  return page.evaluate(() => {
    const table = document.querySelector('main table');
    if (!table) return {};
    const headers = [...table.querySelectorAll('thead th')].map((th) => th.textContent!.trim());
    const out: Record<string, Record<string, string>> = {};
    for (const tr of table.querySelectorAll('tbody tr')) {
      const cells = [...tr.children].map((c) => c.textContent!.trim());
      out[cells[0]] = Object.fromEntries(headers.map((h, i) => [h, cells[i]]));
    }
    return out;
  });
}

async function legendValue(page: Page, topic: string): Promise<string | null> {
  const item = page.getByRole('list', { name: 'Latest backlog' }).getByRole('listitem').filter({ hasText: `${topic}:` });
  return (await item.count()) === 1 ? item.locator('.chart-value').textContent() : null;
}

describe('admin UI: overview (SQLite, auth off)', () => {
  let browser: Browser;
  let server: UiServer;
  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.sqlite)]);
  });
  afterAll(async () => browser?.close());

  it('shows an empty state when there are no topics', async () => {
    const { page, errors, context } = await openUi(browser, server, { path: '#/overview' });
    await expect.poll(() => page.getByText('No topics yet').isVisible(), { timeout: 10_000 }).toBe(true);
    expect((await server.api.get('/api/stats')).body.topics).toEqual([]);
    await expect.poll(() => page.getByRole('link', { name: 'Enqueue a message' }).getAttribute('href')).toBe('#/enqueue');
    await expectAccessible(page);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('shows every topic with depth, dead letters, groups, age and rates, and updates live without a reload', async () => {
    const api = server.api;
    expect((await api.put('/api/topic-configs/ov.jobs', { max_retries: 1 })).status).toBe(200);
    expect((await api.put('/api/topic-configs/ov.idle', { max_retries: 3 })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await api.enqueue('ov.orders', `order ${i}`)).status).toBe(201);
    for (let i = 0; i < 2; i++) expect((await api.enqueue('ov.jobs', `job ${i}`)).status).toBe(201);
    // One job fails once with max_retries 1: it moves to ov.jobs.dlq.
    const [job] = (await api.dequeue('ov.jobs')).body.messages;
    expect((await api.post(`/api/messages/${job.id}/nack`, { error: 'boom' })).status).toBe(204);
    // Registering a group adopts the topic's three pending messages.
    expect((await api.post('/api/topics/ov.orders/consumer-groups', { consumer_group: 'billing' })).status).toBe(201);
    const stats = (await api.get('/api/stats')).body;
    expect(stats.topics).toEqual(expect.arrayContaining([{ topic: 'ov.jobs.dlq', status: 'pending', count: 1 }]));
    expect(stats.consumer_groups).toEqual([{ topic: 'ov.orders', consumer_group: 'billing', status: 'pending', count: 3 }]);

    const { page, errors } = await openUi(browser, server, { path: '#/overview' });
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 42));
    await expect.poll(async () => Object.keys(await readTable(page)).sort(), { timeout: 10_000 }).toEqual(['ov.idle', 'ov.jobs', 'ov.orders']);
    const table = await readTable(page);
    expect(table['ov.orders']).toMatchObject({ Pending: '3', Processing: '0', 'Dead letters': '0', 'Consumer groups': 'billing: 3 pending' });
    expect(table['ov.jobs']).toMatchObject({ Pending: '1', Processing: '0', Failed: '0', 'Dead letters': '1', 'Consumer groups': '—' });
    expect(table['ov.idle']).toMatchObject({ Pending: '0', 'Dead letters': '0', 'Oldest pending': '—' });
    // The oldest pending age comes from /metrics (conveyor_oldest_pending_age_seconds).
    await expect.poll(async () => (await readTable(page))['ov.orders']['Oldest pending'], { timeout: 20_000 }).toMatch(/^\d+ s$/);
    expect(await page.getByRole('link', { name: 'ov.orders' }).getAttribute('href')).toBe('#/messages?topic=ov.orders');
    expect(await page.getByRole('link', { name: '1', exact: true }).getAttribute('href')).toBe('#/messages?topic=ov.jobs.dlq');
    await expect.poll(() => legendValue(page, 'ov.orders'), { timeout: 10_000 }).toBe('3');
    const pointsBefore = Number(await page.getByRole('img', { name: /backlog per topic/ }).getAttribute('data-points'));
    await expectAccessible(page);

    // More traffic: the numbers, the rate and the chart follow without a reload.
    for (let i = 0; i < 4; i++) expect((await api.enqueue('ov.orders', `more ${i}`)).status).toBe(201);
    await expect.poll(async () => (await readTable(page))['ov.orders'].Pending, { timeout: 15_000 }).toBe('7');
    expect((await readTable(page))['ov.orders']['Consumer groups']).toBe('billing: 7 pending');
    await expect.poll(() => legendValue(page, 'ov.orders'), { timeout: 15_000 }).toBe('7');
    expect(Number(await page.getByRole('img', { name: /backlog per topic/ }).getAttribute('data-points'))).toBeGreaterThan(pointsBefore);
    await expect.poll(async () => (await readTable(page))['ov.orders'].Enqueued, { timeout: 15_000 }).toMatch(/^(?!0\/s)[\d.]+\/s$/);
    // An ack shows up as an acked rate.
    const [claimed] = (await api.dequeue('ov.jobs')).body.messages;
    expect((await api.post(`/api/messages/${claimed.id}/ack`)).status).toBe(204);
    await expect.poll(async () => (await readTable(page))['ov.jobs'].Acked, { timeout: 15_000 }).toMatch(/^(?!0\/s)[\d.]+\/s$/);
    await expect.poll(async () => (await readTable(page))['ov.jobs'].Pending, { timeout: 15_000 }).toBe('0');
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(42);
    expect(errors).toEqual([]);
  });

  it('counts the ordering keys of each topic and group, and the keys waiting behind a message a consumer holds', async () => {
    const api = server.api;
    const { page, errors } = await openUi(browser, server, { path: '#/overview' });
    const header = page.getByRole('columnheader', { name: 'Ordering keys' });
    await expect.poll(async () => Object.keys(await readTable(page)).length, { timeout: 10_000 }).toBeGreaterThan(0);
    // No topic has ordering keys yet: no column for them.
    expect(await header.count()).toBe(0);

    for (const [key, payload] of [['a', 'a1'], ['a', 'a2'], ['b', 'b1']]) expect((await api.enqueue('ov.lines', payload, { ordering_key: key })).status).toBe(201);
    expect((await api.post('/api/topics/ov.fan/consumer-groups', { consumer_group: 'billing' })).status).toBe(201);
    for (const payload of ['f1', 'f2']) expect((await api.enqueue('ov.fan', payload, { ordering_key: 'f' })).status).toBe(201);
    // The heads a1 and b1 are taken: a2 waits behind a1, nothing waits behind b1.
    expect((await api.dequeue('ov.lines', { count: 10 })).body.messages.map((m: any) => m.payload).sort()).toEqual(['a1', 'b1']);
    expect((await api.dequeue('ov.fan', { count: 10, consumer_group: 'billing' })).body.messages.map((m: any) => m.payload)).toEqual(['f1']);
    const { ordering } = (await api.get('/api/stats')).body;
    expect(ordering).toEqual([
      { topic: 'ov.fan', consumer_group: 'billing', keys: 1, waiting_keys: 1 },
      { topic: 'ov.lines', consumer_group: '', keys: 2, waiting_keys: 1 },
    ]);

    await expect.poll(async () => (await readTable(page))['ov.lines']?.['Ordering keys'], { timeout: 15_000 }).toBe('2 keys, 1 waiting');
    const table = await readTable(page);
    expect(table['ov.fan']['Ordering keys']).toBe('billing: 1 key, 1 waiting');
    expect(table['ov.orders']['Ordering keys']).toBe('—');
    // The column is described by the note that says what it counts.
    const note = page.locator(`[id="${await header.getAttribute('aria-describedby')}"]`);
    expect(await note.textContent()).toMatch(/^Ordering keys: how many keys have messages not yet done, and how many of those are waiting/);
    await expectAccessible(page);

    // A service that does not count ordering keys answers without the list: the column goes, nothing breaks.
    await page.route('**/api/stats', async (route) => {
      const response = await route.fetch();
      const { ordering: _, ...older } = await response.json();
      await route.fulfill({ response, json: older });
    });
    await expect.poll(() => header.count(), { timeout: 15_000 }).toBe(0);
    expect((await readTable(page))['ov.lines']).toMatchObject({ Pending: '1', Processing: '2' });
    expect(errors).toEqual([]);
  });
});
