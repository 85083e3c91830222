import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible, launchBrowser, openUi, startUiServer, type UiServer } from './helpers/browser.js';
import { engineByName } from './helpers/engines.js';
import { QueueClient } from './helpers/grpc.js';

const card = (page: Page, id: string) => page.getByRole('article', { name: `Message ${id}` });

async function dequeueInUi(page: Page, fields: { topic: string; count?: string; visibility?: string; group?: string }): Promise<void> {
  await page.getByLabel('Topic').fill(fields.topic);
  if (fields.count) await page.getByLabel('Count').fill(fields.count);
  if (fields.visibility) await page.getByLabel('Visibility timeout (seconds)').fill(fields.visibility);
  if (fields.group) await page.getByLabel('Consumer group (optional)').fill(fields.group);
  await page.getByRole('button', { name: 'Dequeue', exact: true }).click();
}

describe('admin UI consume screen (SQLite, auth off)', () => {
  let browser: Browser;
  let server: UiServer;
  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.sqlite)]);
  });
  afterAll(async () => browser?.close());

  it('marks a binary payload (bytes that are not UTF-8, enqueued over gRPC) as base64 in the list, the drawer and the consume card', async () => {
    const grpcPort = Number(/"grpcPort":(\d+)/.exec(server.child.output())![1]);
    const client = new QueueClient(grpcPort);
    try {
      await client.call('Enqueue', { topic: 'ui.bytes', payload: Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x80]) });
      // Bytes whose base64 is "1234", which would parse as JSON.
      await client.call('Enqueue', { topic: 'ui.digits', payload: Buffer.from([0xd7, 0x6d, 0xf8]) });
    } finally {
      client.close();
    }
    const { page, errors } = await openUi(browser, server, { path: '#/messages?topic=ui.bytes' });
    const row = page.locator('table.message-table tbody tr');
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.first().locator('.payload-cell').textContent()).toBe('binary, base64//4AAYA=');
    await row.first().getByRole('button').click();
    const drawer = page.getByRole('dialog', { name: 'Message details' });
    expect(await drawer.getByRole('heading', { name: 'Payload (binary, as base64)' }).count()).toBe(1);
    await page.keyboard.press('Escape');
    await page.evaluate(() => (location.hash = '#/messages?topic=ui.digits'));
    await expect.poll(() => row.first().locator('.payload-cell').textContent()).toBe('binary, base641234');
    await row.first().getByRole('button').click();
    expect(await drawer.getByRole('region', { name: 'Payload (binary, as base64)' }).textContent()).toBe('1234');
    expect(await drawer.getByRole('button', { name: 'Show raw text' }).count()).toBe(0);
    await page.keyboard.press('Escape');

    await page.evaluate(() => (location.hash = '#/consume'));
    await dequeueInUi(page, { topic: 'ui.bytes' });
    await expect.poll(() => page.getByRole('article').count()).toBe(1);
    const text = await page.getByRole('article').first().textContent();
    expect(text).toContain('Binary payload (its bytes are not UTF-8 text), shown as base64.');
    expect(text).toContain('//4AAYA=');
    expect(errors).toEqual([]);
  });

  it('dequeues, then acks and nacks each message with its state shown, and a lost lease shows the 404', async () => {
    expect((await server.api.put('/api/topic-configs/work', { max_retries: 5 })).status).toBe(200);
    for (const payload of ['{"n":1}', 'two', 'three']) expect((await server.api.enqueue('work', payload, { key: `k-${payload.length}`, metadata: { origin: 'test' } })).status).toBe(201);
    const { page, errors } = await openUi(browser, server, { path: '#/consume' });
    await dequeueInUi(page, { topic: 'work', count: '3', visibility: '120' });
    await expect.poll(() => page.getByRole('article').count()).toBe(3);
    await expect.poll(() => page.locator('.notice').textContent()).toBe('Dequeued 3 from work.');
    const listed = (await server.api.get('/api/messages?topic=work')).body.items;
    expect(listed.map((m: any) => m.status)).toEqual(['processing', 'processing', 'processing']);
    const [first, second, third] = listed.map((m: any) => m.id);
    expect(await card(page, first).textContent()).toContain('"n": 1');
    expect(await card(page, first).textContent()).toContain('origin');
    await expectAccessible(page);

    await card(page, first).getByRole('button', { name: 'Ack', exact: true }).click();
    await expect.poll(() => card(page, first).locator('.status').textContent()).toBe('acked');
    // Ack deletes the message (contract §3).
    expect((await server.api.get('/api/messages?topic=work')).body.items.map((m: any) => m.id)).not.toContain(first);

    await card(page, second).getByLabel('Nack error text (optional)').fill('downstream said no');
    await card(page, second).getByLabel('Retry after (seconds, optional)').fill('600');
    await card(page, second).getByRole('button', { name: 'Nack' }).click();
    await expect.poll(() => card(page, second).locator('.status').textContent()).toBe('nacked');
    expect(await card(page, second).getByRole('status').textContent()).toContain('not before 600 s from now');
    const retried = (await server.api.get('/api/messages?topic=work&status=pending')).body.items;
    expect(retried).toMatchObject([{ id: second, retry_count: 1, last_error: 'downstream said no' }]);
    // The delay keeps the retry from consumers.
    expect((await server.api.dequeue('work')).body.messages).toEqual([]);

    expect((await server.api.post(`/api/messages/${third}/ack`)).status).toBe(204);
    await card(page, third).getByRole('button', { name: 'Ack', exact: true }).click();
    await expect.poll(() => card(page, third).getByRole('alert').textContent()).toBe(
      'message not found: it was already acked or nacked, or its visibility timeout passed and the lease is gone.',
    );
    expect(await card(page, third).locator('.status').textContent()).toBe('lease gone');
    await expectAccessible(page);
    expect(errors.filter((e) => !e.includes('404'))).toEqual([]);
  });

  it("shows the lease's end, and a nack without a delay waits the topic's retry backoff while 0 retries at once", async () => {
    expect((await server.api.put('/api/topic-configs/ui.backoff', { retry_backoff_seconds: 300 })).status).toBe(200);
    for (const payload of ['backs off', 'at once']) expect((await server.api.enqueue('ui.backoff', payload)).status).toBe(201);
    const { page, errors } = await openUi(browser, server, { path: '#/consume' });
    await dequeueInUi(page, { topic: 'ui.backoff', count: '2', visibility: '120' });
    await expect.poll(() => page.getByRole('article').count()).toBe(2);
    const listed = (await server.api.get('/api/messages?topic=ui.backoff')).body.items;
    const [slow, fast] = listed.map((m: any) => m.id);
    const lease = card(page, slow).locator('dt', { hasText: 'Leased until' }).locator('xpath=following-sibling::dd[1]/time');
    expect(await lease.getAttribute('datetime')).toBe(listed[0].available_at);

    await card(page, slow).getByRole('button', { name: 'Nack' }).click();
    await expect.poll(() => card(page, slow).getByRole('status').textContent()).toContain("it is retried (after the topic's retry backoff, if it has one)");
    await card(page, fast).getByLabel('Retry after (seconds, optional)').fill('0');
    await card(page, fast).getByRole('button', { name: 'Nack' }).click();
    await expect.poll(() => card(page, fast).getByRole('status').textContent()).toContain('it is retried (at once)');

    const pending = new Map((await server.api.get('/api/messages?topic=ui.backoff&status=pending')).body.items.map((m: any) => [m.id, m]));
    // 300 s ±10 % jitter from the nack.
    expect(Date.parse(pending.get(slow).available_at) - Date.now()).toBeGreaterThan(250_000);
    expect(Date.parse(pending.get(fast).available_at)).toBeLessThanOrEqual(Date.now());
    expect((await server.api.dequeue('ui.backoff', { count: 10 })).body.messages.map((m: any) => m.id)).toEqual([fast]);
    expect(errors).toEqual([]);
  });

  it("shows the ordering key, and that the key's later messages wait for this one until it is acked", async () => {
    for (const payload of ['first', 'second']) expect((await server.api.enqueue('ui.ordered', payload, { ordering_key: 'cart-9' })).status).toBe(201);
    const { page, errors } = await openUi(browser, server, { path: '#/consume' });
    // Count 2, yet one message: the second waits behind the first.
    await dequeueInUi(page, { topic: 'ui.ordered', count: '2' });
    await expect.poll(() => page.locator('.notice').textContent()).toBe('Dequeued 1 from ui.ordered.');
    const [first, second] = (await server.api.get('/api/messages?topic=ui.ordered')).body.items.map((m: any) => m.id);
    const orderingKey = card(page, first).locator('dt', { hasText: 'Ordering key' }).locator('xpath=following-sibling::dd[1]');
    expect(await orderingKey.textContent()).toBe('cart-9');
    await expectAccessible(page);

    await card(page, first).getByRole('button', { name: 'Ack', exact: true }).click();
    await expect.poll(() => card(page, first).getByRole('status').textContent()).toBe(
      'Acked: the message is done and removed from the topic. The next message of its ordering key, if there is one, can be dequeued now.',
    );
    await dequeueInUi(page, { topic: 'ui.ordered', count: '2' });
    await expect.poll(() => card(page, second).count()).toBe(1);
    await card(page, second).getByRole('button', { name: 'Nack' }).click();
    await expect.poll(() => card(page, second).getByRole('status').textContent()).toContain('While it is retried, the later messages of its ordering key wait for it.');
    expect(errors).toEqual([]);
  });

  it('extends a lease past its timeout and gives a message back without counting an attempt', async () => {
    expect((await server.api.enqueue('leases', 'long job')).status).toBe(201);
    expect((await server.api.enqueue('leases', 'not now')).status).toBe(201);
    const { page, errors } = await openUi(browser, server, { path: '#/consume' });
    await dequeueInUi(page, { topic: 'leases', count: '2', visibility: '5' });
    await expect.poll(() => page.getByRole('article').count()).toBe(2);
    const [long, later] = (await server.api.get('/api/messages?topic=leases')).body.items.map((m: any) => m.id);

    await card(page, long).getByLabel('Keep the lease for (seconds)').fill('300');
    await card(page, long).getByRole('button', { name: 'Extend lease' }).click();
    await expect.poll(() => card(page, long).getByRole('status').textContent()).toMatch(/^Lease extended: the message stays yours until /);
    await card(page, later).getByRole('button', { name: 'Give back' }).click();
    await expect.poll(() => card(page, later).locator('.status').textContent()).toBe('given back');
    expect((await server.api.get('/api/messages?topic=leases&status=pending')).body.items).toMatchObject([{ id: later, retry_count: 0 }]);

    // Past the dequeue's 5 s the extended message is still held: a dequeue gets only the one given back.
    await new Promise((resolve) => setTimeout(resolve, 5_500));
    expect((await server.api.dequeue('leases', { count: 10 })).body.messages.map((m: any) => m.id)).toEqual([later]);
    await card(page, long).getByRole('button', { name: 'Ack', exact: true }).click();
    await expect.poll(() => card(page, long).locator('.status').textContent()).toBe('acked');
    await expectAccessible(page);
    expect(errors).toEqual([]);
  });

  it('uses the consumer group for dequeue and ack, and shows a 400 inline', async () => {
    expect((await server.api.post('/api/topics/fan/consumer-groups', { consumer_group: 'billing' })).status).toBe(201);
    expect((await server.api.enqueue('fan', 'for every group')).status).toBe(201);
    const { page } = await openUi(browser, server, { path: '#/consume' });

    await dequeueInUi(page, { topic: 'fan' });
    const refused = await server.api.post('/api/messages/dequeue', { topic: 'fan' });
    expect(refused.status).toBe(400);
    await expect.poll(() => page.getByRole('alert').textContent()).toBe(refused.body.error);

    await page.getByLabel('Consumer group (optional)').fill('billing');
    await page.getByRole('button', { name: 'Dequeue', exact: true }).click();
    await expect.poll(() => page.getByRole('article').count()).toBe(1);
    await page.getByRole('article').getByRole('button', { name: 'Ack', exact: true }).click();
    await expect.poll(() => page.getByRole('article').locator('.status').textContent()).toBe('acked');
    // The only group has acked: the message has left the topic.
    await expect.poll(async () => (await server.api.get('/api/messages?topic=fan')).body.total).toBe(0);

    await page.getByRole('button', { name: 'Dequeue', exact: true }).click();
    await expect.poll(() => page.locator('.notice').textContent()).toBe('No message available on fan.');
  });

  it('checks count and visibility timeout before sending', async () => {
    expect((await server.api.enqueue('checked', 'untouched')).status).toBe(201);
    const { page } = await openUi(browser, server, { path: '#/consume' });
    await dequeueInUi(page, { topic: 'checked', count: '0', visibility: '50000' });
    await expect.poll(() => page.getByText('Count is a whole number from 1 to 1000.').isVisible()).toBe(true);
    expect(await page.getByText('The visibility timeout is a whole number of seconds from 1 to 43200.').isVisible()).toBe(true);
    expect((await server.api.get('/api/messages?topic=checked')).body.items[0].status).toBe('pending');

    // Text the number field cannot read ("5e") leaves its value empty, which would mean the server's default.
    await page.getByLabel('Count').fill('1');
    const visibility = page.getByLabel('Visibility timeout (seconds)');
    await visibility.fill('');
    await visibility.click();
    await page.keyboard.type('5e');
    expect(await visibility.inputValue()).toBe('');
    await page.getByRole('button', { name: 'Dequeue', exact: true }).click();
    await expect.poll(() => page.getByText('The visibility timeout is a whole number of seconds from 1 to 43200.').isVisible()).toBe(true);
    expect(await page.getByText('Count is a whole number from 1 to 1000.').count()).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await server.api.get('/api/messages?topic=checked')).body.items[0].status).toBe('pending');
  });
});
