import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeKube, type FakeKube } from './fake-kube/index.js';
import { expectAccessible, launchBrowser, openUi, signIn, startUiServer, type UiServer } from './helpers/browser.js';
import { startTestController, type TestController } from './helpers/controller.js';
import { engineByName } from './helpers/engines.js';

/**
 * The users screen with programs among the users (docs/admin-ui.md, Users): a Kubernetes service account's
 * principal is marked as one, and the grants a ConveyorAccess manages are read-only, naming the resource.
 */
const WORKER = 'system:serviceaccount:team-ui:worker';
const MANIFEST = `apiVersion: conveyor.dev/v1alpha1
kind: ConveyorAccess
metadata: {name: worker, namespace: team-ui}
spec:
  serviceAccount: worker
  grants:
    - {action: write, topicPattern: ui.jobs}
`;

describe('admin UI: service accounts and grants managed by Kubernetes (SQLite, auth on)', () => {
  let browser: Browser;
  let server: UiServer;
  let kube: FakeKube;
  let controller: TestController;

  beforeAll(async () => {
    [browser, server, kube] = await Promise.all([launchBrowser(), startUiServer(engineByName.sqlite, { auth: true }), startFakeKube()]);
    controller = await startTestController(kube, server.database.url);
    for (const args of [['apply', '-f', 'crds/'], ['apply', '-f', '-']]) {
      const run = await kube.kubectl(args, { input: MANIFEST });
      expect(run.code, run.stderr).toBe(0);
    }
  });
  afterAll(async () => {
    await controller?.close();
    await kube?.close();
    await browser?.close();
  });

  it('marks the service account in the list, and shows its managed grant read-only beside a grant made here', async () => {
    const principal = async () => (await server.api.get('/api/users')).body.items.find((u: any) => u.username === WORKER);
    await expect.poll(principal, { timeout: 20_000 }).toMatchObject({ service_account: true });
    const { id } = await principal();
    await expect.poll(async () => (await server.api.get(`/api/users/${id}/grants`)).body.items.length, { timeout: 20_000 }).toBe(1);
    expect((await server.api.post(`/api/users/${id}/grants`, { action: 'read', topic_pattern: 'ui.*' })).status).toBe(201);

    const { page, errors } = await openUi(browser, server, { path: '#/users' });
    await signIn(page);
    const row = page.getByRole('table', { name: 'Users' }).getByRole('row', { name: new RegExp(WORKER) });
    await expect.poll(() => row.textContent()).toContain('service account');
    expect(await page.getByRole('table', { name: 'Users' }).getByRole('row', { name: /^admin/ }).textContent()).not.toContain('service account');

    await row.getByRole('link', { name: WORKER }).click();
    await expect.poll(() => page.getByRole('heading', { level: 2, name: WORKER }).count()).toBe(1);
    await page.getByText('Kubernetes service account').waitFor();
    expect(await page.getByRole('button', { name: 'Change password' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Make administrator' }).count()).toBe(0);

    const grants = page.getByRole('table', { name: `Grants of ${WORKER}` });
    const managed = grants.getByRole('row', { name: /write ui\.jobs/ });
    await expect.poll(() => managed.textContent()).toContain('ConveyorAccess team-ui/worker');
    expect(await managed.getByRole('button').count()).toBe(0);
    await page.getByText('read-only here').waitFor();
    const manual = grants.getByRole('row', { name: /read ui\.\*/ });
    expect(await manual.getByRole('button', { name: 'Delete grant read ui.*' }).count()).toBe(1);
    await expectAccessible(page);
    expect(errors).toEqual([]);
  });
});
