import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expect } from 'vitest';
import { ADMIN, JWT_SECRET } from './auth.js';
import type { Engine, TestDatabase } from './engines.js';
import { onFileEnd } from './file-end.js';
import { Api } from './http.js';
import { startChildServer, type ChildServer } from './server.js';

export { launchBrowser } from './chromium.js';

/**
 * Servers started by the current file's tests, stopped (and their databases dropped) when the file ends (an
 * afterAll registered from inside a beforeAll never runs, so the test files do not register one each).
 */
const started: Array<() => Promise<void>> = [];
/**
 * Starts still under way: a beforeAll that fails early (no Chromium: `Promise.all([launchBrowser(),
 * startUiServer()])` rejects at once) must not leave behind a server that finishes starting afterwards.
 */
const starting: Array<Promise<unknown>> = [];
async function stopStarted(): Promise<void> {
  await Promise.allSettled(starting.splice(0));
  await Promise.all(started.splice(0).map((stop) => stop()));
}

export interface UiServer {
  url: string;
  /** The HTTP API; with auth on it carries the bootstrap admin's token. */
  api: Api;
  auth: boolean;
  child: ChildServer;
  /** The server's database (its `url` for a second process on the same data, e.g. the Kubernetes controller). */
  database: TestDatabase;
}

/**
 * A real `conveyor serve` (its own OS process, the UI served from dist/ui) on a fresh database of `engine`,
 * stopped after the file. With `auth`, the bootstrap admin is ADMIN and `api` is logged in as that admin.
 */
export function startUiServer(engine: Engine, options: { auth?: boolean; env?: Record<string, string> } = {}): Promise<UiServer> {
  const start = startServer(engine, options);
  // Every server passes through `starting`, which stays filled until the file ends: the first start registers.
  if (starting.length === 0) onFileEnd(stopStarted);
  starting.push(start);
  return start;
}

async function startServer(engine: Engine, options: { auth?: boolean; env?: Record<string, string> }): Promise<UiServer> {
  const database: TestDatabase = await engine.createDatabase();
  // Info: startChildServer reads the port from the start-up line.
  const env: Record<string, string> = { CONVEYOR_DB_URL: database.url, CONVEYOR_LOG_LEVEL: 'info', ...options.env };
  if (options.auth) Object.assign(env, { CONVEYOR_AUTH_ENABLED: 'true', CONVEYOR_AUTH_JWT_SECRET: JWT_SECRET, CONVEYOR_AUTH_USERNAME: ADMIN.username, CONVEYOR_AUTH_PASSWORD: ADMIN.password });
  const child = await startChildServer(env);
  started.push(async () => {
    await child.stop('SIGKILL');
    await database.drop();
  });
  let api = new Api(child.url);
  if (options.auth) {
    const login = await api.post('/api/auth/login', ADMIN);
    expect(login.status, login.text).toBe(200);
    api = api.withToken(login.body.token);
  }
  return { url: child.url, api, auth: options.auth === true, child, database };
}

export interface UiPage {
  page: Page;
  context: BrowserContext;
  /** Uncaught page errors and console errors seen so far (a test may expect some, e.g. refused requests). */
  errors: string[];
}

/**
 * A fresh browser context (own sessionStorage) on the UI at `path` (a fragment like `#/messages` included).
 * `timezoneId` (e.g. `Asia/Tokyo`) sets the browser's zone apart from this machine's, which is often UTC.
 */
export async function openUi(browser: Browser, server: UiServer, options: { path?: string; width?: number; height?: number; timezoneId?: string } = {}): Promise<UiPage> {
  const context = await browser.newContext({ viewport: { width: options.width ?? 1280, height: options.height ?? 800 }, timezoneId: options.timezoneId });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`console: ${msg.text()}`);
  });
  await page.goto(`${server.url}/${options.path ?? ''}`);
  return { page, context, errors };
}

/** Signs in through the login form the UI shows. */
export async function signIn(page: Page, username = ADMIN.username, password = ADMIN.password): Promise<void> {
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect.poll(() => page.getByRole('dialog', { name: 'Sign in' }).count()).toBe(0);
}

/**
 * axe-core's minified build: the package's `source` is its unminified one, 1.5 MB that a fresh renderer
 * parsed in about 150 ms more on every check.
 */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Runs axe-core in the page; serious and critical violations fail the test, listed with their nodes. */
export async function expectAccessible(page: Page): Promise<void> {
  // Evaluated through the DevTools protocol, which the page's Content-Security-Policy does not govern.
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<{ violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: string[] }> }> }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) }));
  });
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(serious, JSON.stringify(serious, null, 2)).toEqual([]);
}
