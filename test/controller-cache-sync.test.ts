import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeKube, type FakeKube } from './fake-kube/index.js';
import { conveyorResource, readyOf, startTestController, waitForReady, type ResourceRef, type TestController } from './helpers/controller.js';
import { describeEachEngine } from './helpers/engines.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const scratch = mkdtempSync(join(tmpdir(), 'conveyor-cache-sync-'));

async function applyTopicConfig(kube: FakeKube, ref: ResourceRef, maxRetries: number): Promise<void> {
  const path = join(scratch, `${ref.namespace}-${ref.name}.yaml`);
  writeFileSync(path, `apiVersion: conveyor.dev/v1alpha1\nkind: TopicConfig\nmetadata: {name: ${ref.name}, namespace: ${ref.namespace}}\nspec: {maxRetries: ${maxRetries}}\n`);
  const run = await kube.kubectl(['apply', '-f', path]);
  expect(run.code, run.stderr).toBe(0);
}

describeEachEngine('controller: reconciles only once every cache is synced', (engine) => {
  let kube: FakeKube;
  let server: TestServer;
  let controller: TestController | undefined;

  beforeAll(async () => {
    kube = await startFakeKube();
    server = await startTestServer(engine);
    const crds = await kube.kubectl(['apply', '-f', 'crds/']);
    expect(crds.code, crds.stderr).toBe(0);
  });
  afterAll(async () => {
    await controller?.close();
    await server?.close();
    await kube?.close();
  });

  it('lets no younger resource take a row while the namespace of an older one cannot be listed', async () => {
    const older: ResourceRef = { plural: 'topicconfigs', namespace: 'sync-slow', name: 'shared' };
    const younger: ResourceRef = { plural: 'topicconfigs', namespace: 'sync-fast', name: 'shared' };
    const unrelated: ResourceRef = { plural: 'topicconfigs', namespace: 'sync-fast', name: 'solo' };
    await applyTopicConfig(kube, older, 2);
    await new Promise((resolve) => setTimeout(resolve, 1100)); // creationTimestamp has second resolution
    await applyTopicConfig(kube, younger, 4);
    await applyTopicConfig(kube, unrelated, 1);
    // Say RBAC for one watched namespace arrives late: its list is refused, the other namespace's succeeds.
    const unrefuse = kube.failRequests({ method: 'GET', pathPattern: /^\/apis\/conveyor\.dev\/v1alpha1\/namespaces\/sync-slow\/topicconfigs$/, status: 403 });
    controller = await startTestController(kube, server.database.url, { controller: { namespaces: 'sync-fast,sync-slow', resync_period: '5m' } });
    await expect.poll(() => controller!.isLeader(), { timeout: 10_000 }).toBe(true);
    // Leading, with the database there: a reconcile would have run by now.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(conveyorResource(kube, younger).status).toBeUndefined();
    expect(conveyorResource(kube, unrelated).status).toBeUndefined();
    expect((await server.api.get('/api/topic-configs/shared')).status).toBe(404);
    expect((await controller.api.get('/readyz')).body.error).toBe('caches not synced with the Kubernetes API yet');

    unrefuse();
    await waitForReady(kube, older, 'True', undefined, 20_000);
    expect(readyOf(await waitForReady(kube, younger, 'False', 'Conflict')).message).toContain('already managed by TopicConfig sync-slow/shared');
    await expect.poll(async () => (await server.api.get('/api/topic-configs/shared')).body).toMatchObject({ max_retries: 2, managed_by: { namespace: 'sync-slow' } });
    // Resources the wait held back are reconciled once the caches are synced, not a resync period later.
    await waitForReady(kube, unrelated);
    const applied = kube.list({ group: '', version: 'v1', plural: 'events', namespace: 'sync-fast' }).filter((e) => e.involvedObject?.name === 'shared' && e.reason === 'Applied');
    expect(applied).toEqual([]);
  }, 45_000);
});
