import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { startFakeKube, type FakeKube } from './fake-kube/index.js';
import { leaseHolder, startControllerProcess, waitForReady, type ControllerProcess } from './helpers/controller.js';
import { describeEachEngine } from './helpers/engines.js';
import { metricValue, parseMetrics, valueOf } from './helpers/metrics.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const scratch = mkdtempSync(join(tmpdir(), 'conveyor-leader-'));
const topicConfig = (name: string) => {
  const path = join(scratch, `${name}.yaml`);
  writeFileSync(path, `apiVersion: conveyor.dev/v1alpha1\nkind: TopicConfig\nmetadata: {name: ${name}, namespace: default}\nspec: {maxRetries: 2}\n`);
  return path;
};

describeEachEngine('controller: leader election between two replicas', (engine) => {
  let kube: FakeKube;
  let server: TestServer;
  let kubeconfig: string;
  const running: ControllerProcess[] = [];

  beforeAll(async () => {
    kube = await startFakeKube();
    kubeconfig = kube.writeKubeconfig();
    server = await startTestServer(engine);
    expect((await kube.kubectl(['apply', '-f', 'crds/'])).code).toBe(0);
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((c) => c.stop('SIGKILL')));
  });
  afterAll(async () => {
    await server?.close();
    await kube?.close();
  });

  async function twoControllers(controller: Record<string, string> = {}): Promise<[leader: ControllerProcess, follower: ControllerProcess]> {
    const pair = await Promise.all([startControllerProcess(kubeconfig, server.database.url, controller), startControllerProcess(kubeconfig, server.database.url, controller)]);
    running.push(...pair);
    await expect.poll(() => leaseHolder(kube), { timeout: 15_000 }).toMatch(new RegExp(`^(${pair[0].identity}|${pair[1].identity})$`));
    const leader = pair.find((c) => c.identity === leaseHolder(kube))!;
    return [leader, pair.find((c) => c !== leader)!];
  }

  it('lets only the leader write, and the other take over within the lease duration when the leader dies', async () => {
    const [leader, follower] = await twoControllers();
    expect((await kube.kubectl(['apply', '-f', topicConfig('le-one')])).code).toBe(0);
    await waitForReady(kube, { plural: 'topicconfigs', namespace: 'default', name: 'le-one' });
    expect(await metricValue(leader.api, 'conveyor_controller_leader', {})).toBe(1);
    expect(await metricValue(follower.api, 'conveyor_controller_leader', {})).toBe(0);
    expect(await metricValue(leader.api, 'conveyor_controller_reconciles_total', { kind: 'TopicConfig', result: 'success' })).toBeGreaterThan(0);
    expect(await metricValue(follower.api, 'conveyor_controller_reconciles_total', { kind: 'TopicConfig', result: 'success' })).toBe(0);
    // Each reconcile is timed as well: as many durations as reconciles, only where they ran.
    const samples = parseMetrics((await leader.api.get('/metrics')).text);
    const reconciled = samples.filter((m) => m.name === 'conveyor_controller_reconciles_total' && m.labels.kind === 'TopicConfig').reduce((sum, m) => sum + m.value, 0);
    expect(reconciled).toBeGreaterThan(0);
    expect(valueOf(samples, 'conveyor_controller_reconcile_duration_seconds_count', { kind: 'TopicConfig' })).toBe(reconciled);
    expect(await metricValue(follower.api, 'conveyor_controller_reconcile_duration_seconds_count', { kind: 'TopicConfig' })).toBe(0);

    const killedAt = Date.now();
    await leader.stop('SIGKILL');
    await expect.poll(() => leaseHolder(kube), { timeout: 10_000, interval: 50 }).toBe(follower.identity);
    // Lease 3 s; the follower notices within a retry period (250 ms) of the lease running out.
    expect(Date.now() - killedAt).toBeLessThan(3000 + 1500);
    expect((await kube.kubectl(['apply', '-f', topicConfig('le-two')])).code).toBe(0);
    await waitForReady(kube, { plural: 'topicconfigs', namespace: 'default', name: 'le-two' });
    await expect.poll(async () => (await server.api.get('/api/topic-configs/le-two')).body.managed_by, { timeout: 5000 }).toEqual({ kind: 'TopicConfig', namespace: 'default', name: 'le-two' });
  });

  it('hands over at once when the leader stops with SIGTERM', async () => {
    // A long lease: only a released lease explains a quick takeover.
    const [leader, follower] = await twoControllers({ lease_duration: '20s', renew_deadline: '15s' });
    const stoppedAt = Date.now();
    await leader.stop('SIGTERM');
    expect(leader.process.exitCode).toBe(0);
    await expect.poll(() => leaseHolder(kube), { timeout: 10_000, interval: 50 }).toBe(follower.identity);
    expect(Date.now() - stoppedAt).toBeLessThan(5000);
    expect(leader.output()).toContain('released the leader lease');
  });
});
