import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeKube } from './fake-kube/index.js';
import { expectAccessible, launchBrowser, openUi, signIn, startUiServer, type UiServer } from './helpers/browser.js';
import { startTestController, type TestController } from './helpers/controller.js';
import { engineByName } from './helpers/engines.js';
import { USER_PASSWORD } from './helpers/auth.js';

const ORDER_SCHEMA = JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'string' }] });

/** Console errors other than the browser's own line for a refused request (the tests provoke 4xx on purpose). */
const unexpected = (errors: string[]) => errors.filter((e) => !e.includes('Failed to load resource'));

const MANAGED_MANIFEST = `
apiVersion: v1
kind: Namespace
metadata: {name: team-ui}
---
apiVersion: conveyor.dev/v1alpha1
kind: TopicConfig
metadata: {name: ui-managed, namespace: team-ui}
spec: {topic: ui.managed, maxRetries: 4, replayable: true}
---
apiVersion: conveyor.dev/v1alpha1
kind: TopicSchema
metadata: {name: ui-managed-schema, namespace: team-ui}
spec:
  topic: ui.managed
  schema: {type: record, name: Click, fields: [{name: page, type: string}]}
---
apiVersion: conveyor.dev/v1alpha1
kind: ConsumerGroup
metadata: {name: ui-readers, namespace: team-ui}
spec: {topic: ui.managed}
`;

const region = (page: Page, name: 'Configuration' | 'Schema') => page.getByRole('region', { name, exact: true });

/** Opens the topics screen on `topic` the way a person does: typing its name and pressing "Open". */
async function openTopic(page: Page, topic: string): Promise<void> {
  await page.getByLabel('Topic', { exact: true }).fill(topic);
  await page.getByRole('button', { name: 'Open' }).click();
  await page.getByRole('heading', { level: 2, name: topic, exact: true }).waitFor();
  await region(page, 'Configuration').getByRole('button', { name: 'Save' }).waitFor();
}

describe('admin UI: topics (SQLite, auth off)', () => {
  let browser: Browser;
  let server: UiServer;
  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.sqlite)]);
  });
  afterAll(async () => browser?.close());

  it('configures a new topic by name with every setting, lists it, and deletes the configuration', async () => {
    const { page, errors } = await openUi(browser, server, { path: '#/topics' });
    await openTopic(page, 'ui.orders');
    const config = region(page, 'Configuration');
    await config.getByText('Not configured yet').waitFor();
    await config.getByLabel('Max retries').fill('5');
    await config.getByLabel('Message TTL').fill('3600');
    await config.getByLabel('Max depth').fill('100');
    await config.getByLabel('Throughput limit').fill('20');
    await config.getByLabel('Replayable').check();
    await config.getByLabel('Replay window').fill('86400');
    await config.getByRole('button', { name: 'Save' }).click();
    await config.getByRole('status').getByText('Saved.').waitFor();
    expect((await server.api.get('/api/topic-configs/ui.orders')).body).toEqual({
      topic: 'ui.orders',
      max_retries: 5,
      message_ttl_seconds: 3600,
      max_depth: 100,
      throughput_limit: 20,
      replayable: true,
      replay_window_seconds: 86400,
      delivery_delay_seconds: null,
      retry_backoff_seconds: null,
      retry_backoff_max_seconds: null,
      visibility_timeout_seconds: null,
      receive_wait_seconds: null,
      content_based_deduplication: null,
      managed_by: null,
    });
    // An emptied field goes back to the server default (null), as the API's PUT semantics say.
    await config.getByLabel('Max depth').fill('');
    await config.getByRole('button', { name: 'Save' }).click();
    await expect.poll(async () => (await server.api.get('/api/topic-configs/ui.orders')).body.max_depth).toBeNull();
    const row = page.getByRole('row', { name: /ui\.orders/ });
    await expect.poll(() => row.textContent()).toContain('yes, 1.0 d');

    await config.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete the configuration' });
    await dialog.waitFor();
    await expectAccessible(page);
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await expect.poll(async () => (await server.api.get('/api/topic-configs/ui.orders')).status).toBe(404);
    await config.getByText('Not configured yet').waitFor();
    expect(await page.getByRole('dialog').count()).toBe(0);
    expect(unexpected(errors)).toEqual([]);
  });

  it('edits the delivery delay and the retry backoff, lists them, and stores null for a cleared field', async () => {
    expect((await server.api.put('/api/topic-configs/ui.timing', { max_retries: 3 })).status).toBe(200);
    const { page, errors } = await openUi(browser, server, { path: '#/topics?topic=ui.timing' });
    const config = region(page, 'Configuration');
    const delay = config.getByLabel('Delivery delay (seconds)');
    const backoff = config.getByLabel('Retry backoff (seconds)');
    const cap = config.getByLabel('Retry backoff cap (seconds)');
    const visibility = config.getByLabel('Visibility timeout (seconds)');
    const wait = config.getByLabel('SQS receive wait (seconds)');
    await expect.poll(() => config.getByLabel('Max retries').inputValue()).toBe('3');
    // Each field is described by its hint, which names the setting as the API does.
    for (const [field, hint] of [
      [delay, /^delivery_delay_seconds: .*Empty: none\.$/],
      // What empty means on this service, with its value (GET /api/topic-configs `defaults`).
      [backoff, /^retry_backoff_seconds: .*Empty: the server default, 0 \(queue\.retry_backoff_seconds\)\.$/],
      [cap, /^retry_backoff_max_seconds: .*Empty: the server default, 3600 \(1\.0 h\) \(queue\.retry_backoff_max_seconds\)\.$/],
      [visibility, /^visibility_timeout_seconds: .*Empty: the server default, 30 \(queue\.visibility_timeout\)\.$/],
      [wait, /^receive_wait_seconds: .*Empty: 0, no wait\.$/],
    ] as const) {
      expect(await field.inputValue()).toBe('');
      // The server's defaults come with GET /api/topic-configs, which may answer after the form is drawn.
      const described = page.locator(`[id="${await field.getAttribute('aria-describedby')}"]`);
      await expect.poll(() => described.textContent()).toMatch(hint);
    }

    await delay.fill('30');
    await backoff.fill('5');
    await cap.fill('600');
    await config.getByRole('button', { name: 'Save' }).click();
    await config.getByRole('status').getByText('Saved.').waitFor();
    expect((await server.api.get('/api/topic-configs/ui.timing')).body).toMatchObject({ max_retries: 3, delivery_delay_seconds: 30, retry_backoff_seconds: 5, retry_backoff_max_seconds: 600 });
    const row = page.getByRole('row', { name: /ui\.timing/ });
    await expect.poll(() => row.locator('td').allTextContents()).toEqual(['3', 'default', 'no cap', 'unlimited', '30 s', '5 s, capped at 10 min', 'no', 'none', '—']);
    // The stored values fill the form again after a reload.
    await page.reload();
    await expect.poll(() => delay.inputValue()).toBe('30');
    expect([await backoff.inputValue(), await cap.inputValue()]).toEqual(['5', '600']);

    // The topic's delay applies to a new message enqueued without one.
    const enqueued = await server.api.enqueue('ui.timing', 'waits');
    const [message] = (await server.api.get('/api/messages?topic=ui.timing')).body.items;
    expect(message.id).toBe(enqueued.body.id);
    expect(Date.parse(message.available_at) - Date.parse(message.created_at)).toBe(30_000);
    expect((await server.api.dequeue('ui.timing')).body.messages).toEqual([]);

    // Out of range: the service's 400 inline, nothing stored.
    await delay.fill('700000');
    await config.getByRole('button', { name: 'Save' }).click();
    await config.getByRole('alert').getByText('delivery_delay_seconds must be at most 604800').waitFor();
    expect((await server.api.get('/api/topic-configs/ui.timing')).body.delivery_delay_seconds).toBe(30);

    // Cleared fields store null: no delay, and the server's backoff defaults.
    await delay.fill('');
    await backoff.fill('');
    await cap.fill('');
    await config.getByRole('button', { name: 'Save' }).click();
    await config.getByRole('status').getByText('Saved.').waitFor();
    expect((await server.api.get('/api/topic-configs/ui.timing')).body).toMatchObject({ max_retries: 3, delivery_delay_seconds: null, retry_backoff_seconds: null, retry_backoff_max_seconds: null });
    await expect.poll(() => row.locator('td').allTextContents()).toEqual(['3', 'default', 'no cap', 'unlimited', 'none', 'default', 'no', 'none', '—']);

    // 0 is a value of its own: retries at once, whatever the server default.
    await backoff.fill('0');
    await config.getByRole('button', { name: 'Save' }).click();
    await expect.poll(async () => (await server.api.get('/api/topic-configs/ui.timing')).body.retry_backoff_seconds).toBe(0);
    await expect.poll(() => row.locator('td').nth(5).textContent()).toBe('at once');
    await expectAccessible(page);
    expect(unexpected(errors)).toEqual([]);
  });

  it("shows the service's 400 inline for a negative value and for a .dlq topic, storing nothing", async () => {
    const { page } = await openUi(browser, server, { path: '#/topics?topic=ui.jobs' });
    const config = region(page, 'Configuration');
    await config.getByLabel('Max depth').fill('-1');
    await config.getByRole('button', { name: 'Save' }).click();
    await config.getByRole('alert').getByText('max_depth must not be negative').waitFor();
    expect((await server.api.get('/api/topic-configs/ui.jobs')).status).toBe(404);
    // Correcting the field clears the error; the next save stores.
    await config.getByLabel('Max depth').fill('7');
    expect(await config.getByRole('alert').count()).toBe(0);
    await config.getByRole('button', { name: 'Save' }).click();
    await expect.poll(async () => (await server.api.get('/api/topic-configs/ui.jobs')).body.max_depth).toBe(7);

    await openTopic(page, 'ui.jobs.dlq');
    const dlq = region(page, 'Configuration');
    const reserved = dlq.getByRole('alert').filter({ hasText: 'names ending in .dlq are reserved for dead-letter topics' });
    await reserved.first().waitFor(); // the load already says so
    const before = await reserved.count();
    await dlq.getByLabel('Max retries').fill('2');
    await dlq.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => reserved.count()).toBe(before + 1);
    expect((await server.api.get('/api/topic-configs')).body.items.map((c: { topic: string }) => c.topic)).not.toContain('ui.jobs.dlq');
  });

  it('refuses a number field holding text that is not a number, keeping the stored setting', async () => {
    expect((await server.api.put('/api/topic-configs/ui.badnum', { max_retries: 3, max_depth: 9 })).status).toBe(200);
    const { page } = await openUi(browser, server, { path: '#/topics?topic=ui.badnum' });
    const config = region(page, 'Configuration');
    const retries = config.getByLabel('Max retries');
    await expect.poll(() => retries.inputValue()).toBe('3');
    // Typed key by key as a person does: the browser keeps the text on screen but reads the value as "".
    // (Chromium drops a typed "," in a number input, so "1,000" arrives as 1000: not a case to test here.)
    for (const text of ['5e', '-']) {
      await retries.click();
      await page.keyboard.press('ControlOrMeta+A');
      await page.keyboard.type(text);
      expect(await retries.evaluate((el: HTMLInputElement) => [el.value, el.validity.badInput])).toEqual(['', true]);
      await config.getByRole('button', { name: 'Save' }).click();
      await config.getByRole('alert').getByText('Not a number').waitFor();
      expect(await retries.getAttribute('aria-invalid')).toBe('true');
      expect(await config.getByRole('status').count()).toBe(0);
      const stored = await server.api.get('/api/topic-configs/ui.badnum');
      expect(stored.body).toMatchObject({ max_retries: 3, max_depth: 9 });
    }
    // Editing the field clears the error; a number saves.
    await retries.fill('6');
    await expect.poll(() => config.getByRole('alert').count()).toBe(0);
    await config.getByRole('button', { name: 'Save' }).click();
    await config.getByRole('status').getByText('Saved.').waitFor();
    expect((await server.api.get('/api/topic-configs/ui.badnum')).body).toMatchObject({ max_retries: 6, max_depth: 9 });
  });

  it('saves an Avro schema (version shown), shows invalid Avro inline, and deletes it', async () => {
    const { page } = await openUi(browser, server, { path: '#/topics?topic=ui.events' });
    const schema = region(page, 'Schema');
    await schema.getByText('No schema').waitFor();
    const text = schema.getByLabel('Avro schema (JSON)');
    expect(await text.evaluate((el) => getComputedStyle(el).fontFamily)).toMatch(/mono/i);

    await text.fill('{"type": "record", "name": "Order"');
    await schema.getByRole('button', { name: 'Save' }).click();
    await schema.getByRole('alert').getByText('schema_json is not valid JSON').waitFor();
    await text.fill('{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "strin"}]}');
    await schema.getByRole('button', { name: 'Save' }).click();
    await schema.getByRole('alert').getByText(/schema_json is not a valid Avro schema/).waitFor();
    expect((await server.api.get('/api/topic-schemas/ui.events')).status).toBe(404);

    await text.fill(ORDER_SCHEMA);
    await schema.getByRole('button', { name: 'Save' }).click();
    await schema.getByText('Version 1,').waitFor();
    const stored = await server.api.get('/api/topic-schemas/ui.events');
    expect(stored.body).toMatchObject({ topic: 'ui.events', schema_json: ORDER_SCHEMA, version: 1, managed_by: null });
    // The schema is live: the service now refuses a payload that does not match.
    expect((await server.api.enqueue('ui.events', JSON.stringify({ id: 7 }))).status).toBe(422);
    await schema.getByRole('button', { name: 'Save' }).click();
    await schema.getByText('Version 2,').waitFor();
    expect((await server.api.get('/api/topic-schemas/ui.events')).body.version).toBe(2);
    await expect.poll(() => page.getByRole('row', { name: /ui\.events/ }).textContent()).toContain('version 2');

    await schema.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete the schema' });
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await expect.poll(async () => (await server.api.get('/api/topic-schemas/ui.events')).status).toBe(404);
    await schema.getByText('No schema').waitFor();
    expect((await server.api.enqueue('ui.events', JSON.stringify({ id: 7 }))).status).toBe(201);
  });

  it('fits a 375 px wide screen and passes axe', async () => {
    await server.api.put('/api/topic-configs/ui.narrow', { max_retries: 1, replayable: true });
    const { page, errors } = await openUi(browser, server, { path: '#/topics?topic=ui.narrow', width: 375 });
    await region(page, 'Configuration').getByRole('button', { name: 'Delete' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await expectAccessible(page);
    expect(unexpected(errors)).toEqual([]);
  });

  it('shows a topic managed by Kubernetes read-only, naming the resource', async () => {
    // The controller (in this process, against a fake kube-apiserver) writes into the UI server's database.
    const kube = await startFakeKube();
    let controller: TestController | undefined;
    try {
      controller = await startTestController(kube, server.database.url);
      const crds = await kube.kubectl(['apply', '-f', 'crds/']);
      expect(crds.code, crds.stderr).toBe(0);
      const applied = await kube.kubectl(['apply', '-f', '-'], { input: MANAGED_MANIFEST });
      expect(applied.code, applied.stderr).toBe(0);
      // The UI's server sees the controller's rows on its next catalog poll.
      await expect.poll(async () => (await server.api.get('/api/topic-configs/ui.managed')).body?.managed_by, { timeout: 20_000 }).toEqual({ kind: 'TopicConfig', namespace: 'team-ui', name: 'ui-managed' });
      await expect.poll(async () => (await server.api.get('/api/topic-schemas/ui.managed')).body?.managed_by, { timeout: 20_000 }).toEqual({ kind: 'TopicSchema', namespace: 'team-ui', name: 'ui-managed-schema' });

      const { page, errors } = await openUi(browser, server, { path: '#/topics?topic=ui.managed' });
      const config = region(page, 'Configuration');
      await config.getByText('Managed by TopicConfig team-ui/ui-managed').waitFor();
      expect(await config.getByLabel('Max retries').inputValue()).toBe('4');
      expect(await config.getByLabel('Max retries').isDisabled()).toBe(true);
      expect(await config.getByLabel('Replayable').isDisabled()).toBe(true);
      expect(await config.getByRole('button').count()).toBe(0); // neither Save nor Delete

      const schema = region(page, 'Schema');
      await schema.getByText('Managed by TopicSchema team-ui/ui-managed-schema').waitFor();
      expect(await schema.getByLabel('Avro schema (JSON)').getAttribute('readonly')).not.toBeNull();
      expect(JSON.parse(await schema.getByLabel('Avro schema (JSON)').inputValue())).toMatchObject({ name: 'Click' });
      expect(await schema.getByRole('button').count()).toBe(0);

      const row = page.getByRole('row', { name: /ui\.managed/ });
      await expect.poll(() => row.textContent()).toContain('TopicConfig team-ui/ui-managed, TopicSchema team-ui/ui-managed-schema');
      await expectAccessible(page);

      // Consumer groups: the one the ConsumerGroup resource registered names it and cannot be unregistered
      // here (the controller would register it again); one registered through the API can.
      expect((await server.api.post('/api/topics/ui.managed/consumer-groups', { consumer_group: 'ui-manual' })).status).toBe(201);
      await expect.poll(async () => (await server.api.get('/api/topics/ui.managed/consumer-groups')).body.items, { timeout: 20_000 }).toEqual(['ui-manual', 'ui-readers']);
      await page.evaluate(() => (location.hash = '#/groups?topic=ui.managed'));
      const managed = page.getByRole('row', { name: /^ui-readers/ });
      await expect.poll(() => managed.textContent(), { timeout: 10_000 }).toContain('ConsumerGroup team-ui/ui-readers');
      expect(await managed.getByRole('button').count()).toBe(0);
      expect(await page.getByRole('row', { name: /^ui-manual/ }).getByRole('button', { name: 'Unregister ui-manual' }).count()).toBe(1);
      expect(unexpected(errors)).toEqual([]);
    } finally {
      await controller?.close();
      await kube.close();
    }
  });
});

describe('admin UI: topics with authentication (SQLite)', () => {
  let browser: Browser;
  let server: UiServer;
  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.sqlite, { auth: true })]);
  });
  afterAll(async () => browser?.close());

  it('shows a user without admin rights or grants the topic read-only: no form to fill in only to be refused', async () => {
    const created = await server.api.post('/api/users', { username: 'ui-reader', password: USER_PASSWORD, is_admin: false });
    expect(created.status, created.text).toBe(201);
    const { page } = await openUi(browser, server, { path: '#/topics?topic=ui.secret' });
    await signIn(page, 'ui-reader', USER_PASSWORD);
    const readOnly = page.getByRole('region', { name: 'Configuration and schema (read-only)' });
    await readOnly.waitFor({ timeout: 10_000 });
    expect(await readOnly.textContent()).toContain('needs an admin grant on it');
    expect(await page.getByRole('button', { name: 'Save' }).count()).toBe(0);
    expect(await page.getByLabel('Max retries').count()).toBe(0);
    expect(await page.getByRole('alert').filter({ hasText: 'Permission denied' }).count()).toBe(0);
    expect((await server.api.get('/api/topic-configs/ui.secret')).status).toBe(404);
  });
});
