import { readFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineByName } from './helpers/engines.js';
import { expectAccessible, launchBrowser, openUi, startUiServer, type UiServer } from './helpers/browser.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const INITIAL_JS_LIMIT = 200 * 1024;

/** The screens as the router lists them, so a new screen is checked without touching this file. */
const SCREENS = JSON.parse(
  /export const SCREENS = (\[[^\]]*\])/.exec(readFileSync(join(ROOT, 'src/ui/router.ts'), 'utf8'))![1].replace(/'/g, '"'),
) as string[];

/**
 * An Ingress in miniature: serves the service under `/conveyor/` (prefix stripped), records every path the
 * browser asks for, and can play dead (connections dropped) to stand for a service that cannot be reached.
 */
async function startPrefixProxy(target: string): Promise<{ url: string; paths: string[]; setDown: (down: boolean) => void; close: () => Promise<void> }> {
  const paths: string[] = [];
  let down = false;
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    paths.push(path);
    if (down) return void req.socket.destroy();
    if (path === '/conveyor') {
      res.writeHead(301, { location: '/conveyor/' });
      return void res.end();
    }
    if (!path.startsWith('/conveyor/')) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      return void res.end('outside the prefix');
    }
    const forward = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: path.slice('/conveyor'.length), headers: { ...req.headers, host: upstream.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    paths,
    setDown: (value) => (down = value),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** axe on one screen, the screen named when it fails. */
async function expectScreenAccessible(page: Page, screen: string): Promise<void> {
  try {
    await expectAccessible(page);
  } catch (err) {
    throw new Error(`#/${screen}: ${(err as Error).message}`);
  }
}

const banner = (page: Page) => page.getByRole('alert').filter({ hasText: 'cannot be reached' });

describe('admin UI: serving, security, size, path prefix, reachability, narrow and dark (SQLite, auth off)', () => {
  let browser: Browser;
  let server: UiServer;
  beforeAll(async () => {
    [browser, server] = await Promise.all([launchBrowser(), startUiServer(engineByName.sqlite)]);
    expect((await server.api.put('/api/topic-configs/infra.orders', { max_retries: 2 })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await server.api.enqueue('infra.orders', JSON.stringify({ order: i }), { key: `k${i}` })).status).toBe(201);
  });
  afterAll(async () => browser?.close());

  it('serves the page with its Content-Security-Policy, which refuses an injected inline script', async () => {
    const res = await fetch(`${server.url}/`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');

    const { page, errors } = await openUi(browser, server, { path: '#/overview' });
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent(), { timeout: 10_000 }).toBe('Overview');
    const outcome = await page.evaluate(async () => {
      const violation = new Promise<string>((resolve) => document.addEventListener('securitypolicyviolation', (e) => resolve(e.effectiveDirective), { once: true }));
      const script = document.createElement('script');
      script.textContent = 'window.__inlineRan = true;';
      document.body.append(script);
      return { directive: await violation, ran: (window as unknown as { __inlineRan?: boolean }).__inlineRan === true };
    });
    expect(outcome).toEqual({ directive: 'script-src-elem', ran: false });
    expect(errors.some((e) => /Content Security Policy/.test(e))).toBe(true);
    // The UI itself needs nothing the policy refuses.
    expect(errors.filter((e) => !e.includes('__inlineRan') && !/inline script/.test(e))).toEqual([]);
  });

  it('keeps the initial JavaScript under 200 KB gzipped', () => {
    const html = readFileSync(join(ROOT, 'dist/ui/index.html'), 'utf8');
    const scripts = [...html.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g), ...html.matchAll(/<link\b[^>]*\brel="modulepreload"[^>]*\bhref="([^"]+)"/g)].map((m) => m[1]);
    expect(scripts.length).toBeGreaterThan(0);
    let total = 0;
    for (const src of scripts) total += gzipSync(readFileSync(join(ROOT, 'dist/ui', src)), { level: 9 }).length;
    console.log(`initial JavaScript: ${scripts.length} file(s), ${(total / 1024).toFixed(1)} KB gzipped (limit ${INITIAL_JS_LIMIT / 1024} KB)`);
    expect(total).toBeLessThan(INITIAL_JS_LIMIT);
  });

  it('works under a path prefix, and shows a banner while the service cannot be reached that clears when it can', async () => {
    const proxy = await startPrefixProxy(server.url);
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      await page.goto(`${proxy.url}/conveyor/#/overview`);
      await expect.poll(() => page.getByRole('link', { name: 'infra.orders' }).isVisible(), { timeout: 10_000 }).toBe(true);
      expect(proxy.paths).toEqual(expect.arrayContaining(['/conveyor/', '/conveyor/api/stats', '/conveyor/metrics', '/conveyor/api/version']));
      expect(proxy.paths.filter((p) => !p.startsWith('/conveyor/'))).toEqual([]);
      expect(await banner(page).count()).toBe(0);

      proxy.setDown(true);
      await expect.poll(() => banner(page).isVisible(), { timeout: 15_000 }).toBe(true);
      await expectAccessible(page);
      proxy.setDown(false);
      await expect.poll(() => banner(page).count(), { timeout: 15_000 }).toBe(0);
      await context.close();
    } finally {
      await proxy.close();
    }
  });

  it('fits a 375 px screen on every screen, and passes axe there', async () => {
    const { page, errors, context } = await openUi(browser, server, { path: '#/overview', width: 375, height: 740 });
    for (const screen of SCREENS) {
      await page.evaluate((s) => (location.hash = `#/${s}`), screen);
      await expect.poll(() => page.getByRole('main').getByRole('heading', { level: 1 }).count(), { timeout: 10_000 }).toBe(1);
      await expect.poll(() => page.getByRole('main').getByText('Loading…').count(), { timeout: 10_000 }).toBe(0);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width, `#/${screen} scrolls sideways at 375 px`).toBeLessThanOrEqual(375);
      await expectScreenAccessible(page, screen);
    }
    expect(errors).toEqual([]);
    await context.close();
  });

  it('passes axe in the dark colour scheme on every screen', async () => {
    const { page, errors, context } = await openUi(browser, server, { path: '#/overview' });
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await page.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches)).toBe(true);
    for (const screen of SCREENS) {
      await page.evaluate((s) => (location.hash = `#/${s}`), screen);
      await expect.poll(() => page.getByRole('main').getByRole('heading', { level: 1 }).count(), { timeout: 10_000 }).toBe(1);
      await expect.poll(() => page.getByRole('main').getByText('Loading…').count(), { timeout: 10_000 }).toBe(0);
      await expectScreenAccessible(page, screen);
    }
    expect(errors).toEqual([]);
    await context.close();
  });

  // Last: it stops the service.
  it('shows the unreachable banner when the service stops', async () => {
    const { page, context } = await openUi(browser, server, { path: '#/overview' });
    await expect.poll(() => page.getByRole('link', { name: 'infra.orders' }).isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await banner(page).count()).toBe(0);
    await server.child.stop();
    await expect.poll(() => banner(page).isVisible(), { timeout: 15_000 }).toBe(true);
    await context.close();
  });
});
