import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSchema, validatePayload } from '../src/queue/avro.js';
import { avroExample } from '../src/ui/avro-example.js';
import { expectAccessible, launchBrowser, openUi, startUiServer, type UiServer } from './helpers/browser.js';
import { engineByName } from './helpers/engines.js';

/** Nested record, enum, array, map, unions (plain and ambiguous) and the logical types, namespaces and references. */
const ORDER_SCHEMA = {
  type: 'record',
  name: 'Order',
  namespace: 'shop',
  fields: [
    { name: 'id', type: { type: 'string', logicalType: 'uuid' } },
    { name: 'placed_at', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'placed_on', type: { type: 'int', logicalType: 'date' } },
    { name: 'at_micros', type: { type: 'long', logicalType: 'timestamp-micros' } },
    { name: 'time', type: { type: 'int', logicalType: 'time-millis' } },
    { name: 'status', type: { type: 'enum', name: 'Status', symbols: ['NEW', 'PAID', 'SHIPPED'] } },
    {
      name: 'customer',
      type: { type: 'record', name: 'Customer', fields: [{ name: 'name', type: 'string' }, { name: 'address', type: { type: 'record', name: 'Address', namespace: 'geo', fields: [{ name: 'city', type: 'string' }, { name: 'zip', type: ['null', 'string'] }] } }] },
    },
    { name: 'lines', type: { type: 'array', items: { type: 'record', name: 'Line', fields: [{ name: 'sku', type: 'string' }, { name: 'qty', type: 'int' }, { name: 'price', type: 'double' }, { name: 'weight', type: 'float' }] } } },
    { name: 'tags', type: { type: 'map', values: 'string' } },
    { name: 'counters', type: { type: 'map', values: 'long' } },
    { name: 'note', type: ['string', 'null'] },
    { name: 'gift', type: 'boolean' },
    { name: 'previous_status', type: ['Status', 'null'] },
    { name: 'shipping', type: ['geo.Address', { type: 'map', values: 'string' }] },
    { name: 'amount', type: ['int', 'double'] },
    { name: 'parent', type: ['null', 'Order'] },
    { name: 'later', type: ['null', { type: 'record', name: 'Later', fields: [{ name: 'n', type: 'long' }] }] },
    { name: 'again', type: 'Later' },
  ],
};

describe('Avro example payloads', () => {
  const schemas: Record<string, unknown> = {
    'the order schema': ORDER_SCHEMA,
    'a primitive': 'string',
    'a top-level union': ['null', 'int'],
    'an ambiguous union in an array': { type: 'array', items: ['int', 'long'] },
    'an enum in a wrapped union': { type: 'record', name: 'R', fields: [{ name: 'e', type: ['string', { type: 'enum', name: 'x.E', symbols: ['A'] }] }, { name: 'f', type: { type: 'enum', name: 'E2', namespace: '', symbols: ['B'] } }] },
    'a dotted name': { type: 'record', name: 'a.b.C', fields: [{ name: 'self', type: ['null', 'C'] }, { name: 'other', type: { type: 'record', name: 'D', fields: [{ name: 'c', type: ['null', 'a.b.C'] }] } }] },
  };
  for (const [name, schema] of Object.entries(schemas)) {
    it(`are accepted by the service's validation: ${name}`, () => {
      const text = JSON.stringify(schema);
      const example = avroExample(text);
      expect(example.notes).toEqual([]);
      expect(() => validatePayload(compileSchema(text), Buffer.from(example.json))).not.toThrow();
    });
  }

  it('say which fields no JSON payload can satisfy (bytes, fixed, decimal)', () => {
    const example = avroExample(JSON.stringify({ type: 'record', name: 'B', fields: [{ name: 'd', type: { type: 'bytes', logicalType: 'decimal', precision: 4, scale: 2 } }, { name: 'h', type: { type: 'fixed', name: 'Hash', size: 4 } }] }));
    expect(example.notes).toHaveLength(2);
    expect(example.notes.join(' ')).toContain('decimal');
    expect(example.notes.join(' ')).toContain('"Hash" is fixed');
  });

  it('refuse a schema whose recursion has no end', () => {
    expect(() => avroExample(JSON.stringify({ type: 'record', name: 'Loop', fields: [{ name: 'next', type: 'Loop' }] }))).toThrow(/recursive/);
  });
});

describe('admin UI enqueue screen (SQLite, auth off)', () => {
  let browser: Browser;
  let server: UiServer;
  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.sqlite, { env: { CONVEYOR_QUEUE_MAX_PAYLOAD_BYTES: '4096' } })]);
  });
  afterAll(async () => browser?.close());

  it('enqueues with a key and metadata, shows the new id and links to the messages', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/enqueue?topic=ui.orders' });
    expect(await page.getByLabel('Topic').inputValue()).toBe('ui.orders');
    await page.getByLabel('Key (optional)', { exact: true }).fill('order-7');
    await page.getByLabel('Metadata (optional)').fill('{"source": "admin-ui", "trace": "t-1"}');
    await page.getByLabel('Payload').fill('{"order": 7}');
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Enqueue' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/Enqueued message [0-9a-f-]{36} to ui\.orders/);
    const id = (await page.getByRole('status').locator('.mono').textContent())!;

    const list = await server.api.get('/api/messages?topic=ui.orders');
    expect(list.body.items).toHaveLength(1);
    expect(list.body.items[0]).toMatchObject({ id, key: 'order-7', payload: '{"order": 7}', metadata: { source: 'admin-ui', trace: 't-1' }, status: 'pending' });

    await page.getByRole('link', { name: 'Show the messages of ui.orders' }).click();
    await expect.poll(() => page.url()).toContain('#/messages?topic=ui.orders');
    await expect.poll(() => page.getByRole('button', { name: `Details of message ${id}` }).count()).toBe(1);
    // The one refused request is the schema lookup: 404 means the topic has no schema.
    expect(errors.filter((e) => !e.includes('404'))).toEqual([]);
  });

  it('checks metadata before sending: an object of strings', async () => {
    const { page } = await openUi(browser, server, { path: '#/enqueue?topic=ui.meta' });
    const metadata = page.getByLabel('Metadata (optional)');
    await page.getByLabel('Payload').fill('x');
    await metadata.fill('{"retries": 3}');
    await expect.poll(() => page.getByText('Metadata value "retries" must be a string, not a number.').isVisible()).toBe(true);
    await page.getByRole('button', { name: 'Enqueue' }).click();
    await metadata.fill('["a"]');
    await expect.poll(() => page.getByText('Metadata must be a JSON object of text values').isVisible()).toBe(true);
    await metadata.fill('{"a": ');
    await expect.poll(() => page.getByText('Metadata is not valid JSON').isVisible()).toBe(true);
    expect(await metadata.getAttribute('aria-invalid')).toBe('true');
    await page.getByRole('button', { name: 'Enqueue' }).click();
    expect((await server.api.get('/api/messages?topic=ui.meta')).body.total).toBe(0);
    await metadata.fill('{"retries": "3"}');
    await page.getByRole('button', { name: 'Enqueue' }).click();
    await expect.poll(async () => (await server.api.get('/api/messages?topic=ui.meta')).body.items.map((m: any) => m.metadata)).toEqual([{ retries: '3' }]);
  });

  it('shows the Avro schema, inserts an example the service accepts, and shows a 422 next to the payload', async () => {
    const put = await server.api.put('/api/topic-schemas/ui.avro', { schema_json: JSON.stringify(ORDER_SCHEMA) });
    expect(put.status, put.text).toBe(200);
    const { page, errors } = await openUi(browser, server, { path: '#/enqueue?topic=ui.avro' });
    await expect.poll(() => page.getByRole('heading', { name: /Avro schema/ }).isVisible()).toBe(true);
    expect(await page.locator('pre.schema').textContent()).toContain('"timestamp-millis"');
    await page.getByRole('button', { name: 'Insert example' }).click();
    const payload = page.getByLabel('Payload');
    const example = await payload.inputValue();
    expect(JSON.parse(example)).toMatchObject({ status: 'NEW', amount: { int: 42 }, shipping: { 'geo.Address': { city: 'example', zip: null } } });
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Enqueue' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Enqueued message');
    const stored = await server.api.get('/api/messages?topic=ui.avro');
    expect(stored.body.items.map((m: any) => m.payload)).toEqual([example]);

    await payload.fill(example.replace('"status": "NEW"', '"status": "LOST"'));
    await page.getByRole('button', { name: 'Enqueue' }).click();
    const refused = await server.api.post('/api/messages', { topic: 'ui.avro', payload: await payload.inputValue() });
    expect(refused.status).toBe(422);
    await expect.poll(() => page.locator('.field-error').textContent()).toBe(refused.body.error);
    // The message is tied to the payload editor, so a screen reader reads it with the field.
    const describedBy = (await payload.getAttribute('aria-describedby'))!;
    expect(await page.locator(`[id="${describedBy.split(' ').pop()}"]`).textContent()).toContain('payload does not match the topic schema');
    expect(await payload.getAttribute('aria-invalid')).toBe('true');
    await expectAccessible(page);
    expect((await server.api.get('/api/messages?topic=ui.avro')).body.total).toBe(1);
    // The 404: the topic has no schema (the screen asks for one); the 422: the refusal itself.
    expect(errors.filter((e) => !/status of (404|422)/.test(e))).toEqual([]);
  });

  it('refuses a pasted key over 255 characters instead of cutting it, and counts an emoji as one', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/enqueue?topic=ui.keys' });
    const key = page.getByLabel('Key (optional)', { exact: true });
    await page.getByLabel('Payload').fill('keyed');
    // Pasted: insertText goes through the browser's editing, as a paste does (and as maxlength would cut it).
    await key.click();
    await page.keyboard.insertText('k'.repeat(300));
    expect(await key.inputValue()).toHaveLength(300);
    const error = page.locator('.field-error');
    await expect.poll(() => error.textContent()).toBe('The key is 300 characters long; the service takes at most 255.');
    expect(await key.getAttribute('aria-invalid')).toBe('true');
    await page.getByRole('button', { name: 'Enqueue' }).click();
    expect((await server.api.get('/api/messages?topic=ui.keys')).body.total).toBe(0);
    expect(await page.locator('[role="status"]').textContent()).toBe('');

    // 200 emoji: 400 UTF-16 units, 200 characters as the service counts them.
    const emoji = '😀'.repeat(200);
    await key.fill('');
    await page.keyboard.insertText(emoji);
    await expect.poll(() => error.count()).toBe(0);
    await page.getByRole('button', { name: 'Enqueue' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Enqueued message');
    expect((await server.api.get('/api/messages?topic=ui.keys')).body.items.map((m: any) => m.key)).toEqual([emoji]);
    expect(errors.filter((e) => !e.includes('404'))).toEqual([]);
  });

  it('enqueues with a delay: listed as delayed until its time, and no dequeue gets it before then', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/enqueue?topic=ui.later' });
    await page.getByLabel('Delay (seconds, optional)').fill('3600');
    await page.getByLabel('Payload').fill('in an hour');
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Enqueue' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/Enqueued message [0-9a-f-]{36} to ui\.later; no consumer gets it for 3600 s\./);
    const id = (await page.getByRole('status').locator('.mono').textContent())!;

    const [stored] = (await server.api.get('/api/messages?topic=ui.later')).body.items;
    expect(stored).toMatchObject({ id, status: 'pending' });
    expect(Date.parse(stored.available_at) - Date.parse(stored.created_at)).toBe(3_600_000);
    expect((await server.api.dequeue('ui.later', { count: 10 })).body.messages).toEqual([]);

    await page.getByRole('link', { name: 'Show the messages of ui.later' }).click();
    const row = page.getByRole('row').filter({ has: page.getByRole('button', { name: `Details of message ${id}` }) });
    const badge = row.locator('.badge-delayed');
    await expect.poll(() => badge.textContent()).toMatch(/^delayed until /);
    expect(await badge.locator('time').getAttribute('datetime')).toBe(stored.available_at);
    expect((await server.api.dequeue('ui.later', { count: 10 })).body.messages).toEqual([]);
    expect(errors.filter((e) => !e.includes('404'))).toEqual([]);
  });

  it('a short delay ends: the dequeue gets the message only from its available_at, and the list stops saying delayed', async () => {
    const { page } = await openUi(browser, server, { path: '#/enqueue?topic=ui.soon' });
    await page.getByLabel('Delay (seconds, optional)').fill('4');
    await page.getByLabel('Payload').fill('in a moment');
    await page.getByRole('button', { name: 'Enqueue' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('no consumer gets it for 4 s');
    const [stored] = (await server.api.get('/api/messages?topic=ui.soon')).body.items;
    const due = Date.parse(stored.available_at);
    expect(due - Date.parse(stored.created_at)).toBe(4_000);
    expect((await server.api.dequeue('ui.soon', { count: 10 })).body.messages).toEqual([]);

    await page.getByRole('link', { name: 'Show the messages of ui.soon' }).click();
    const badge = page.locator('table.message-table .badge-delayed');
    await expect.poll(() => badge.count()).toBe(1);
    // The rows follow the clock (without a refetch): the badge goes when the delay ends.
    await expect.poll(() => badge.count(), { timeout: 15_000 }).toBe(0);
    expect(Date.now()).toBeGreaterThanOrEqual(due);
    const got = await server.api.dequeue('ui.soon', { count: 10 });
    expect(got.body.messages.map((m: any) => m.id)).toEqual([stored.id]);
  });

  it('shows a refused or unreadable delay at the delay field, and sends no delay when it is empty', async () => {
    expect((await server.api.put('/api/topic-configs/ui.ttl', { message_ttl_seconds: 60 })).status).toBe(200);
    const { page, errors } = await openUi(browser, server, { path: '#/enqueue?topic=ui.ttl' });
    const delay = page.getByLabel('Delay (seconds, optional)');
    const enqueue = page.getByRole('button', { name: 'Enqueue' });
    const fieldError = async () => page.locator(`[id="${(await delay.getAttribute('aria-describedby'))!.split(' ').pop()}"]`).textContent();
    await page.getByLabel('Payload').fill('x');

    for (const [typed, body] of [
      ['700000', { delay_seconds: 700000 }],
      ['1.5', { delay_seconds: 1.5 }],
      ['120', { delay_seconds: 120 }], // past the topic's 60 s TTL: the message would expire unseen
    ] as const) {
      await delay.fill(typed);
      await enqueue.click();
      const refused = await server.api.post('/api/messages', { topic: 'ui.ttl', payload: 'x', ...body });
      expect(refused.status).toBe(400);
      await expect.poll(() => fieldError()).toBe(refused.body.error);
      expect(await delay.getAttribute('aria-invalid')).toBe('true');
      expect(await page.locator('.field-error').count()).toBe(1);
    }
    // Typed key by key: the browser keeps "5e" on screen but reads the value as "", which must not enqueue undelayed.
    await delay.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('5e');
    await enqueue.click();
    await expect.poll(() => fieldError()).toBe('Not a number: enter a whole number of seconds, or leave the field empty.');
    expect((await server.api.get('/api/messages?topic=ui.ttl')).body.total).toBe(0);

    await delay.fill('');
    await enqueue.click();
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/to ui\.ttl\. /);
    expect(await delay.getAttribute('aria-invalid')).toBeNull();
    const [stored] = (await server.api.get('/api/messages?topic=ui.ttl')).body.items;
    expect(stored.available_at).toBe(stored.created_at);
    expect(errors.filter((e) => !/status of (400|404)/.test(e))).toEqual([]);
  });

  it('enqueues with an ordering key: the later message waits behind the first, and is available once that one is acked', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/enqueue?topic=ui.ordered' });
    await page.getByLabel('Ordering key (optional)').fill('order-1');
    const payload = page.getByLabel('Payload');
    const status = page.getByRole('status');
    await payload.fill('created');
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Enqueue' }).click();
    await expect.poll(() => status.textContent()).toMatch(/Enqueued message [0-9a-f-]{36} to ui\.ordered\./);
    const first = (await status.locator('.mono').textContent())!;
    // The form keeps its fields: the second message goes out under the same ordering key.
    await payload.fill('paid');
    await page.getByRole('button', { name: 'Enqueue' }).click();
    await expect.poll(() => status.locator('.mono').textContent()).not.toBe(first);
    const second = (await status.locator('.mono').textContent())!;

    const stored = new Map((await server.api.get('/api/messages?topic=ui.ordered')).body.items.map((m: any) => [m.id, m]));
    expect(stored.get(first)).toMatchObject({ ordering_key: 'order-1', payload: 'created', status: 'pending' });
    expect(stored.get(first).available_at).toBe(stored.get(first).created_at);
    expect(stored.get(second)).toMatchObject({ ordering_key: 'order-1', payload: 'paid', status: 'pending', available_at: null });

    await page.getByRole('link', { name: 'Show the messages of ui.ordered' }).click();
    const row = (id: string) => page.getByRole('row').filter({ has: page.getByRole('button', { name: `Details of message ${id}` }) });
    await expect.poll(() => row(second).locator('.badge-waiting').textContent()).toBe('waiting behind an earlier message of its ordering key');
    for (const id of [first, second]) expect(await row(id).getByRole('cell', { name: 'order-1', exact: true }).count()).toBe(1);
    // The head is available: nothing beside its status.
    expect(await row(first).locator('.badge').count()).toBe(0);
    await expectAccessible(page);

    // A consumer takes the head: the second still waits, behind a processing message now.
    expect((await server.api.dequeue('ui.ordered', { count: 10 })).body.messages.map((m: any) => m.id)).toEqual([first]);
    const refresh = page.getByRole('button', { name: 'Refresh', exact: true });
    await refresh.click();
    await expect.poll(() => row(first).locator('.status').textContent()).toBe('processing');
    expect(await row(second).locator('.badge-waiting').count()).toBe(1);

    expect((await server.api.post(`/api/messages/${first}/ack`)).status).toBe(204);
    await refresh.click();
    await expect.poll(() => row(first).count()).toBe(0);
    expect(await row(second).locator('.badge').count()).toBe(0);
    expect(await row(second).locator('.status').textContent()).toBe('pending');
    const [next] = (await server.api.get('/api/messages?topic=ui.ordered')).body.items;
    expect(next).toMatchObject({ id: second, ordering_key: 'order-1' });
    expect(next.available_at).not.toBeNull();
    await row(second).getByRole('button').click();
    const drawer = page.getByRole('dialog', { name: 'Message details' });
    const available = drawer.locator('dt', { hasText: 'Available to consumers' }).locator('xpath=following-sibling::dd[1]');
    await expect.poll(() => available.textContent()).toMatch(/^since /);
    expect((await server.api.dequeue('ui.ordered', { count: 10 })).body.messages.map((m: any) => m.id)).toEqual([second]);
    expect(errors.filter((e) => !e.includes('404'))).toEqual([]);
  });

  it('shows the refusal of an ordering key over 255 bytes at its field, and sends none when it is empty', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/enqueue?topic=ui.ordering.long' });
    const orderingKey = page.getByLabel('Ordering key (optional)');
    const enqueue = page.getByRole('button', { name: 'Enqueue' });
    await page.getByLabel('Payload').fill('x');
    // 128 characters, 256 bytes of UTF-8: the service counts bytes.
    const long = 'é'.repeat(128);
    await orderingKey.fill(long);
    await enqueue.click();
    const refused = await server.api.post('/api/messages', { topic: 'ui.ordering.long', payload: 'x', ordering_key: long });
    expect([refused.status, refused.body.error]).toEqual([400, 'ordering_key must be 1-255 bytes of UTF-8']);
    await expect.poll(() => orderingKey.getAttribute('aria-invalid')).toBe('true');
    const describedBy = (await orderingKey.getAttribute('aria-describedby'))!;
    expect(await page.locator(`[id="${describedBy.split(' ').pop()}"]`).textContent()).toBe(refused.body.error);
    expect(await page.locator('.field-error').count()).toBe(1);
    expect(await page.getByLabel('Payload').getAttribute('aria-invalid')).toBeNull();
    await expectAccessible(page);
    expect((await server.api.get('/api/messages?topic=ui.ordering.long')).body.total).toBe(0);

    // 255 bytes is still one key; an emptied field sends none.
    await orderingKey.fill(`${'é'.repeat(127)}k`);
    await enqueue.click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Enqueued message');
    expect(await orderingKey.getAttribute('aria-invalid')).toBeNull();
    await orderingKey.fill('');
    await enqueue.click();
    await expect.poll(async () => (await server.api.get('/api/messages?topic=ui.ordering.long')).body.total).toBe(2);
    const keys = (await server.api.get('/api/messages?topic=ui.ordering.long')).body.items.map((m: any) => m.ordering_key);
    expect(keys).toEqual([`${'é'.repeat(127)}k`, null]);
    expect(errors.filter((e) => !/status of (400|404)/.test(e))).toEqual([]);
  });

  it('shows the 413 for metadata over 64 KiB at the metadata editor, not at the payload', async () => {
    const { page } = await openUi(browser, server, { path: '#/enqueue?topic=ui.bigmeta' });
    const big = JSON.stringify({ note: 'm'.repeat(66_000) });
    expect(Buffer.byteLength(big)).toBeGreaterThan(65_536);
    const metadata = page.getByLabel('Metadata (optional)');
    const payload = page.getByLabel('Payload');
    await metadata.fill(big);
    await payload.fill('small');
    await page.getByRole('button', { name: 'Enqueue' }).click();
    const refused = await server.api.post('/api/messages', { topic: 'ui.bigmeta', payload: 'small', metadata: JSON.parse(big) });
    expect([refused.status, refused.body.error]).toEqual([413, 'metadata exceeds 65536 bytes (as JSON)']);
    // The message is the metadata editor's own: its described-by error, and the payload stays unmarked.
    await expect.poll(() => metadata.getAttribute('aria-invalid')).toBe('true');
    const describedBy = (await metadata.getAttribute('aria-describedby'))!;
    expect(await page.locator(`[id="${describedBy.split(' ').pop()}"]`).textContent()).toBe(refused.body.error);
    expect(await payload.getAttribute('aria-invalid')).toBeNull();
    expect(await page.locator('.field-error').count()).toBe(1);
    expect((await server.api.get('/api/messages?topic=ui.bigmeta')).body.total).toBe(0);
  });

  it('shows the 422 of an unregistered topic at the topic field, not at the payload', async () => {
    const strict = await startUiServer(engineByName.sqlite, { env: { CONVEYOR_QUEUE_REQUIRE_TOPIC_REGISTRATION: 'true' } });
    const { page, errors } = await openUi(browser, strict, { path: '#/enqueue?topic=ui.unregistered' });
    await page.getByLabel('Payload').fill('hello');
    await page.getByRole('button', { name: 'Enqueue' }).click();
    const topic = page.getByLabel('Topic', { exact: true });
    await expect.poll(() => topic.getAttribute('aria-invalid')).toBe('true');
    const describedBy = (await topic.getAttribute('aria-describedby'))!;
    expect(await page.locator(`[id="${describedBy.split(' ').pop()}"]`).textContent()).toBe('topic "ui.unregistered" is not registered (queue.require_topic_registration is on)');
    expect(await page.getByLabel('Payload').getAttribute('aria-invalid')).toBeNull();
    expect(await page.locator('.field-error').count()).toBe(1);
    // The 404: the topic has no schema (the screen asks for one); the 422: the refusal itself.
    expect(errors.filter((e) => !/status of (404|422)/.test(e))).toEqual([]);
  });

  it('shows 413, 429 and 400 answers inline', async () => {
    expect((await server.api.put('/api/topic-configs/ui.full', { max_depth: 1 })).status).toBe(200);
    expect((await server.api.enqueue('ui.full', 'first')).status).toBe(201);
    const { page } = await openUi(browser, server, { path: '#/enqueue?topic=ui.full' });
    const payload = page.getByLabel('Payload');
    const enqueue = page.getByRole('button', { name: 'Enqueue' });

    await payload.fill('second');
    await enqueue.click();
    const full = await server.api.post('/api/messages', { topic: 'ui.full', payload: 'second' });
    expect(full.status).toBe(429);
    await expect.poll(() => page.getByRole('alert').textContent()).toBe(full.body.error);

    await payload.fill('x'.repeat(5000));
    await enqueue.click();
    const large = await server.api.post('/api/messages', { topic: 'ui.full', payload: 'x'.repeat(5000) });
    expect(large.status).toBe(413);
    await expect.poll(() => page.locator('.field-error').textContent()).toBe(large.body.error);

    await page.getByLabel('Topic').fill('ui.full.dlq');
    await payload.fill('to a dead-letter topic');
    await enqueue.click();
    const reserved = await server.api.post('/api/messages', { topic: 'ui.full.dlq', payload: 'x' });
    expect(reserved.status).toBe(400);
    await expect.poll(() => page.getByRole('alert').textContent()).toBe(reserved.body.error);
    expect((await server.api.get('/api/messages?topic=ui.full')).body.total).toBe(1);
  });
});
