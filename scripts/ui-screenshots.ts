/**
 * Captures the admin UI's main screens for the README and docs/admin-ui.md (`npm run screenshots`): a real
 * `conveyor serve` on a throwaway SQLite file with auth on, sample traffic through the HTTP API, Debian's
 * Chromium. Writes docs/images/ui-*.png.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { launchBrowser } from '../test/helpers/chromium.js';
import { Api } from '../test/helpers/http.js';
import { startChildServer } from '../test/helpers/server.js';

const OUT = fileURLToPath(new URL('../docs/images/', import.meta.url));
const ADMIN = { username: 'admin', password: 'screenshot-password-1' };

async function must(what: string, call: Promise<{ status: number; text: string }>): Promise<void> {
  const res = await call;
  if (res.status >= 300) throw new Error(`${what}: HTTP ${res.status} ${res.text}`);
}

/** A small shop: orders with dead letters, payments with an Avro schema and a consumer group, e-mails. */
async function seed(api: Api): Promise<string> {
  await must('orders config', api.put('/api/topic-configs/shop.orders', { max_retries: 1, replayable: true, replay_window_seconds: 86_400 }));
  await must('emails config', api.put('/api/topic-configs/shop.emails', { message_ttl_seconds: 3600 }));
  const schema = {
    type: 'record',
    name: 'Payment',
    fields: [
      { name: 'order_id', type: 'string' },
      { name: 'amount_cents', type: 'long' },
      { name: 'currency', type: { type: 'enum', name: 'Currency', symbols: ['EUR', 'USD', 'GBP'] } },
    ],
  };
  await must('payments schema', api.put('/api/topic-schemas/shop.payments', { schema_json: JSON.stringify(schema) }));
  await must('payments group', api.post('/api/topics/shop.payments/consumer-groups', { consumer_group: 'ledger' }));
  for (let i = 1; i <= 60; i++) {
    const order = { order_id: `A-${1000 + i}`, customer: `customer-${i % 7}`, items: i % 4 + 1, total_eur: (i * 7.5).toFixed(2) };
    await must('order', api.post('/api/messages', { topic: 'shop.orders', key: `order-${1000 + i}`, payload: JSON.stringify(order), metadata: { source: 'web' } }));
  }
  for (let i = 1; i <= 25; i++) {
    const payment = { order_id: `A-${1000 + i}`, amount_cents: i * 750, currency: ['EUR', 'USD', 'GBP'][i % 3] };
    await must('payment', api.post('/api/messages', { topic: 'shop.payments', payload: JSON.stringify(payment) }));
  }
  for (let i = 1; i <= 12; i++) await must('email', api.post('/api/messages', { topic: 'shop.emails', payload: `Your order A-${1000 + i} has shipped.` }));
  // Some orders fail twice and land in shop.orders.dlq; some stay in flight.
  const taken = await api.post('/api/messages/dequeue', { topic: 'shop.orders', count: 8, visibility_timeout_seconds: 600 });
  for (const m of (taken.body as { messages: Array<{ id: string }> }).messages.slice(0, 4)) await must('nack', api.post(`/api/messages/${m.id}/nack`, { error: 'payment provider timed out' }));
  const again = await api.post('/api/messages/dequeue', { topic: 'shop.orders', count: 4, visibility_timeout_seconds: 600 });
  for (const m of (again.body as { messages: Array<{ id: string }> }).messages) await must('nack', api.post(`/api/messages/${m.id}/nack`, { error: 'payment provider timed out' }));
  const user = await api.post('/api/users', { username: 'orders-service', password: 'orders-service-password', is_admin: false });
  const userId = (user.body as { id: string }).id;
  await must('grant', api.post(`/api/users/${userId}/grants`, { action: 'write', topic_pattern: 'shop.*' }));
  await must('grant', api.post(`/api/users/${userId}/grants`, { action: 'read', topic_pattern: 'shop.orders' }));
  await must('consume grant', api.post(`/api/users/${userId}/consumer-group-grants`, { topic_pattern: 'shop.payments', consumer_group: 'ledger' }));
  return userId;
}

/** Enqueues and acks at a growing rate while the overview samples, so its chart and rates have something to show. */
async function traffic(api: Api, page: Page): Promise<void> {
  for (let tick = 0; tick < 36; tick++) {
    for (let i = 0; i < 1 + Math.floor(tick / 6); i++) await api.post('/api/messages', { topic: 'shop.emails', payload: `Receipt ${tick}-${i}` });
    if (tick % 2 === 0) {
      const taken = await api.post('/api/messages/dequeue', { topic: 'shop.orders', count: 1, visibility_timeout_seconds: 600 });
      for (const m of (taken.body as { messages: Array<{ id: string }> }).messages) await api.post(`/api/messages/${m.id}/ack`);
    }
    await page.waitForTimeout(500);
  }
}

async function settle(page: Page): Promise<void> {
  await page.waitForLoadState('networkidle');
  await page.waitForTimeout(1500);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'conveyor-screenshots-'));
  const server = await startChildServer({
    CONVEYOR_DB_URL: `sqlite:${join(dir, 'conveyor.db')}`,
    CONVEYOR_AUTH_ENABLED: 'true',
    CONVEYOR_AUTH_JWT_SECRET: 'screenshot-secret-that-is-at-least-32-bytes',
    CONVEYOR_AUTH_USERNAME: ADMIN.username,
    CONVEYOR_AUTH_PASSWORD: ADMIN.password,
  });
  const browser = await launchBrowser();
  try {
    const login = await server.api.post('/api/auth/login', ADMIN);
    const token = (login.body as { token: string }).token;
    const api = server.api.withToken(token);
    const userId = await seed(api);
    mkdirSync(OUT, { recursive: true });
    const shots: Array<{ name: string; hash: string; width?: number; dark?: boolean; full?: boolean; before?: (page: Page) => Promise<unknown> }> = [
      { name: 'overview', hash: '#/overview', before: (page) => traffic(api, page) },
      { name: 'overview-dark', hash: '#/overview', dark: true, before: (page) => traffic(api, page) },
      { name: 'messages', hash: '#/messages?topic=shop.orders', before: async (page) => page.getByRole('button', { name: /^Details of message/ }).first().click() },
      { name: 'dead-letters', hash: '#/messages?topic=shop.orders.dlq' },
      { name: 'enqueue', hash: '#/enqueue?topic=shop.payments', full: true, before: async (page) => page.getByRole('button', { name: 'Insert example' }).click() },
      { name: 'topics', hash: '#/topics?topic=shop.orders' },
      { name: 'replay', hash: '#/replay?topic=shop.orders' },
      { name: 'users', hash: `#/users?user=${userId}` },
      { name: 'maintenance', hash: '#/maintenance', full: true },
      { name: 'overview-phone', hash: '#/overview', width: 375 },
      { name: 'messages-phone', hash: '#/messages?topic=shop.orders', width: 375 },
      { name: 'menu-phone', hash: '#/messages?topic=shop.orders.dlq', width: 375, before: async (page) => page.getByRole('button', { name: /Menu/ }).click() },
    ];
    for (const shot of shots) {
      const context = await browser.newContext({ viewport: { width: shot.width ?? 1280, height: shot.width ? 760 : 800 }, colorScheme: shot.dark ? 'dark' : 'light' });
      // Signed in as the UI keeps it (the tab's sessionStorage): one login in all, not one per shot, which
      // would meet the login rate limit (ten a minute per address).
      await context.addInitScript((t) => sessionStorage.setItem('conveyor.token', t), token);
      const page = await context.newPage();
      await page.goto(`${server.url}/${shot.hash}`);
      await settle(page);
      await shot.before?.(page);
      await page.waitForTimeout(500);
      await page.screenshot({ path: join(OUT, `ui-${shot.name}.png`), fullPage: shot.full === true });
      process.stdout.write(`docs/images/ui-${shot.name}.png\n`);
      await context.close();
    }
  } finally {
    await browser.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`screenshots: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
