/**
 * Many teams on one cluster (issue 44): controllers scoped to an instance (controller.instance), topic
 * ownership by namespace (controller.topic_ownership) and adopt_existing=false, against the fake API server.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, validateConfig } from '../src/config/load.js';
import { startFakeKube, type FakeKube } from './fake-kube/index.js';
import { CONTROLLER_NAMESPACE, conveyorResource, readyOf, startTestController, waitForReady, type ResourceRef, type TestController } from './helpers/controller.js';
import { describeEachEngine } from './helpers/engines.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const scratch = mkdtempSync(join(tmpdir(), 'conveyor-instances-'));
let manifests = 0;

async function apply(kube: FakeKube, yaml: string): Promise<void> {
  const path = join(scratch, `m${++manifests}.yaml`);
  writeFileSync(path, yaml);
  const run = await kube.kubectl(['apply', '-f', path]);
  expect(run.code, run.stderr).toBe(0);
}

async function kubectlOk(kube: FakeKube, args: string[]): Promise<string> {
  const run = await kube.kubectl(args);
  expect(run.code, `kubectl ${args.join(' ')}\n${run.stderr}`).toBe(0);
  return run.stdout;
}

const topicConfig = (namespace: string, name: string, spec: Record<string, unknown>, metadata: Record<string, unknown> = {}) =>
  `apiVersion: conveyor.dev/v1alpha1\nkind: TopicConfig\nmetadata: ${JSON.stringify({ name, namespace, ...metadata })}\nspec: ${JSON.stringify(spec)}\n`;
const instanceLabel = (instance: string) => ({ labels: { 'conveyor.dev/instance': instance } });
const lease = (kube: FakeKube, name: string) => kube.get({ group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespace: CONTROLLER_NAMESPACE, name });
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('controller.instance and controller.topic_ownership: configuration', () => {
  const refused = (controller: Record<string, unknown>) => {
    try {
      validateConfig({ controller });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error(`accepted ${JSON.stringify(controller)}`);
  };

  it('takes a DNS label as the instance and namespace=pattern lists as the ownership', () => {
    const config = validateConfig({ controller: { instance: 'staging', topic_ownership: ' team-a = orders, orders.* ; team-b=payments*', adopt_existing: 'false' } });
    expect(config.controller).toMatchObject({ instance: 'staging', adopt_existing: false });
    expect(validateConfig({}).controller).toMatchObject({ instance: '', topic_ownership: '', adopt_existing: true });
  });

  it('refuses what cannot name a finalizer or a label, and a malformed ownership, saying why', () => {
    expect(refused({ instance: 'Staging' })).toMatch(/controller\.instance.*lowercase DNS label/s);
    expect(refused({ instance: 'x'.repeat(54) })).toMatch(/controller\.instance/);
    expect(refused({ topic_ownership: 'team-a' })).toMatch(/"team-a": expected <namespace>=<pattern>/);
    expect(refused({ topic_ownership: 'team-a=orders/eu' })).toMatch(/"orders\/eu" is not a topic pattern/);
    expect(refused({ topic_ownership: 'Team_A=orders' })).toMatch(/"Team_A" is not a namespace name/);
    expect(refused({ topic_ownership: 'team-a=' })).toMatch(/no topic pattern/);
  });
});

describeEachEngine('controller: two instances on one cluster, each with its own database', (engine) => {
  let kube: FakeKube;
  let staging: TestServer;
  let production: TestServer;
  const controllers: TestController[] = [];
  const ref = (name: string): ResourceRef => ({ plural: 'topicconfigs', namespace: 'team-a', name });

  beforeAll(async () => {
    kube = await startFakeKube();
    await kubectlOk(kube, ['apply', '-f', 'crds/']);
    [staging, production] = await Promise.all([startTestServer(engine), startTestServer(engine)]);
    controllers.push(await startTestController(kube, staging.database.url, { controller: { instance: 'staging' } }));
    controllers.push(await startTestController(kube, production.database.url, { controller: { instance: 'production' } }));
    // One topic, one namespace, a resource for each instance: unscoped controllers would call this a Conflict.
    await apply(kube, topicConfig('team-a', 'orders-staging', { topic: 'orders', maxRetries: 2 }, instanceLabel('staging')));
    await apply(kube, topicConfig('team-a', 'orders-production', { topic: 'orders', maxRetries: 4 }, instanceLabel('production')));
    await apply(kube, topicConfig('team-a', 'orders-unlabelled', { topic: 'orders', maxRetries: 9 }));
  });
  afterAll(async () => {
    for (const controller of controllers) await controller.close();
    await staging?.close();
    await production?.close();
    await kube?.close();
  });

  it('each reconciles only the resources labelled for it, into its own database', async () => {
    const ownStaging = await waitForReady(kube, ref('orders-staging'));
    const ownProduction = await waitForReady(kube, ref('orders-production'));
    expect(readyOf(ownStaging)).toMatchObject({ reason: 'Applied', message: 'topic configuration of "orders" applied' });
    expect(readyOf(ownProduction)).toMatchObject({ reason: 'Applied' });
    await expect.poll(async () => (await staging.api.get('/api/topic-configs/orders')).body).toMatchObject({ max_retries: 2, managed_by: { namespace: 'team-a', name: 'orders-staging' } });
    await expect.poll(async () => (await production.api.get('/api/topic-configs/orders')).body).toMatchObject({ max_retries: 4, managed_by: { namespace: 'team-a', name: 'orders-production' } });
  });

  it('neither touches the other\'s finalizers or status, and a resource labelled for no instance is left alone', async () => {
    expect(conveyorResource(kube, ref('orders-staging')).metadata.finalizers).toEqual(['conveyor.dev/finalizer-staging']);
    expect(conveyorResource(kube, ref('orders-production')).metadata.finalizers).toEqual(['conveyor.dev/finalizer-production']);
    await pause(2500); // more than a resync period
    const unlabelled = conveyorResource(kube, ref('orders-unlabelled'));
    expect(unlabelled.metadata.finalizers).toBeUndefined();
    expect(unlabelled.status).toBeUndefined();
    // Status writes went to each instance's own resource only.
    const statusWrites = kube.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith('/status')).map((r) => r.path.split('/').at(-2));
    expect(new Set(statusWrites)).toEqual(new Set(['orders-staging', 'orders-production']));
  });

  it('lists and watches with the instance label selector, so other resources never reach it', () => {
    const reads = kube.requests.filter((r) => r.method === 'GET' && /\/apis\/conveyor\.dev\/v1alpha1\/(topicconfigs|topicschemas|consumergroups)$/.test(r.path));
    expect(reads.length).toBeGreaterThanOrEqual(6); // a list per kind per controller
    const selectors = new Set(reads.map((r) => new URLSearchParams(r.query).get('labelSelector')));
    expect(selectors).toEqual(new Set(['conveyor.dev/instance=staging', 'conveyor.dev/instance=production']));
  });

  it('each leads with its own Lease', async () => {
    await expect.poll(() => lease(kube, 'conveyor-controller-staging')?.spec?.holderIdentity).toBe(controllers[0].identity);
    expect(lease(kube, 'conveyor-controller-production')?.spec?.holderIdentity).toBe(controllers[1].identity);
    expect(lease(kube, 'conveyor-controller')).toBeUndefined();
    expect(controllers.every((c) => c.isLeader())).toBe(true);
  });

  it('a deletion is finalized by its own instance only; the other instance\'s row stays', async () => {
    await kubectlOk(kube, ['delete', 'topicconfig', 'orders-staging', '-n', 'team-a', '--wait=false']);
    await expect.poll(() => conveyorResource(kube, ref('orders-staging')), { timeout: 10_000 }).toBeUndefined();
    await expect.poll(async () => (await staging.api.get('/api/topic-configs/orders')).status).toBe(404);
    expect((await production.api.get('/api/topic-configs/orders')).body).toMatchObject({ max_retries: 4, managed_by: { name: 'orders-production' } });
    expect(readyOf(conveyorResource(kube, ref('orders-production')))).toMatchObject({ status: 'True', reason: 'Applied' });
  });

  it('takes over the unscoped finalizer of a resource labelled for it after an unscoped controller managed it', async () => {
    await apply(kube, topicConfig('team-a', 'legacy', { topic: 'legacy', maxRetries: 1 }, { ...instanceLabel('staging'), finalizers: ['conveyor.dev/finalizer'] }));
    const ready = await waitForReady(kube, ref('legacy'));
    expect(ready.metadata.finalizers).toEqual(['conveyor.dev/finalizer', 'conveyor.dev/finalizer-staging']);
    await kubectlOk(kube, ['delete', 'topicconfig', 'legacy', '-n', 'team-a', '--wait=false']);
    await expect.poll(() => conveyorResource(kube, ref('legacy')), { timeout: 10_000 }).toBeUndefined();
    await expect.poll(async () => (await staging.api.get('/api/topic-configs/legacy')).status).toBe(404);
  });
});

describeEachEngine('controller: topic ownership by namespace, and adopt_existing=false', (engine) => {
  let kube: FakeKube;
  let server: TestServer;
  let controller: TestController;

  beforeAll(async () => {
    kube = await startFakeKube();
    await kubectlOk(kube, ['apply', '-f', 'crds/']);
    server = await startTestServer(engine);
    controller = await startTestController(kube, server.database.url, {
      controller: { topic_ownership: 'team-orders=orders,orders.*;team-payments=payments.*', adopt_existing: 'false' },
    });
  });
  afterAll(async () => {
    await controller?.close();
    await server?.close();
    await kube?.close();
  });

  it('refuses a resource outside its namespace\'s patterns with TopicNotAllowed, naming them, and writes nothing', async () => {
    // The squatter is the older resource: refused resources do not count in "oldest wins".
    await apply(kube, topicConfig('team-payments', 'orders', { maxRetries: 1 }));
    const squatter = await waitForReady(kube, { plural: 'topicconfigs', namespace: 'team-payments', name: 'orders' }, 'False', 'TopicNotAllowed');
    expect(readyOf(squatter).message).toBe(
      'topic "orders" is not this namespace\'s: resources in namespace "team-payments" may manage only topics matching payments.* (controller.topic_ownership)',
    );
    expect(squatter.metadata.finalizers).toBeUndefined();
    expect((await server.api.get('/api/topic-configs/orders')).status).toBe(404);

    await apply(kube, 'apiVersion: conveyor.dev/v1alpha1\nkind: ConsumerGroup\nmetadata: {name: fanout, namespace: team-payments}\nspec: {topic: orders.eu}\n');
    await waitForReady(kube, { plural: 'consumergroups', namespace: 'team-payments', name: 'fanout' }, 'False', 'TopicNotAllowed');
    expect((await server.api.get('/api/topics/orders.eu/consumer-groups')).body.items).toEqual([]);

    await apply(kube, 'apiVersion: conveyor.dev/v1alpha1\nkind: TopicSchema\nmetadata: {name: s, namespace: team-x}\nspec: {topic: payments.v1, schema: {type: string}}\n');
    const unlisted = await waitForReady(kube, { plural: 'topicschemas', namespace: 'team-x', name: 's' }, 'False', 'TopicNotAllowed');
    expect(readyOf(unlisted).message).toContain('resources in namespace "team-x" may manage no topic');
    expect((await server.api.get('/api/topic-schemas/payments.v1')).status).toBe(404);
    const warnings = kube.list({ group: '', version: 'v1', plural: 'events', namespace: 'team-payments' }).filter((e) => e.reason === 'TopicNotAllowed');
    expect(warnings.map((e) => e.type)).toEqual(['Warning', 'Warning']);
  });

  it('applies a resource inside its patterns, though a refused one for the same topic is older', async () => {
    await pause(1100); // creationTimestamp has second resolution
    await apply(kube, topicConfig('team-orders', 'orders', { maxRetries: 6 }));
    await apply(kube, 'apiVersion: conveyor.dev/v1alpha1\nkind: ConsumerGroup\nmetadata: {name: eu-billing, namespace: team-orders}\nspec: {topic: orders.eu}\n');
    await waitForReady(kube, { plural: 'topicconfigs', namespace: 'team-orders', name: 'orders' });
    await waitForReady(kube, { plural: 'consumergroups', namespace: 'team-orders', name: 'eu-billing' });
    await expect.poll(async () => (await server.api.get('/api/topic-configs/orders')).body).toMatchObject({ max_retries: 6, managed_by: { namespace: 'team-orders', name: 'orders' } });
    expect(readyOf(conveyorResource(kube, { plural: 'topicconfigs', namespace: 'team-payments', name: 'orders' })).reason).toBe('TopicNotAllowed');
  });

  it('adopt_existing=false: a resource for a row made through the HTTP API reports TopicExists and leaves it as it is', async () => {
    expect((await server.api.put('/api/topic-configs/orders.legacy', { max_retries: 8 })).status).toBe(200);
    expect((await server.api.post('/api/topics/orders/consumer-groups', { consumer_group: 'audit' })).status).toBeLessThan(300);
    await apply(kube, topicConfig('team-orders', 'legacy', { topic: 'orders.legacy', maxRetries: 1 }));
    await apply(kube, 'apiVersion: conveyor.dev/v1alpha1\nkind: ConsumerGroup\nmetadata: {name: audit, namespace: team-orders}\nspec: {topic: orders}\n');
    const exists = await waitForReady(kube, { plural: 'topicconfigs', namespace: 'team-orders', name: 'legacy' }, 'False', 'TopicExists');
    expect(readyOf(exists).message).toBe(
      'topic "orders.legacy" already has settings made through the HTTP API, and controller.adopt_existing is false; delete them through the API (or set adopt_existing) for this resource to take over',
    );
    await waitForReady(kube, { plural: 'consumergroups', namespace: 'team-orders', name: 'audit' }, 'False', 'TopicExists');
    expect((await server.api.get('/api/topic-configs/orders.legacy')).body).toMatchObject({ max_retries: 8, managed_by: null });
    expect((await server.api.get('/api/topics/orders/consumer-groups/audit')).body.managed_by).toBeNull();

    // Once the HTTP settings are gone, the resource applies at its next reconcile.
    expect((await server.api.delete('/api/topic-configs/orders.legacy')).status).toBeLessThan(300);
    await waitForReady(kube, { plural: 'topicconfigs', namespace: 'team-orders', name: 'legacy' }, 'True', 'Applied');
    await expect.poll(async () => (await server.api.get('/api/topic-configs/orders.legacy')).body).toMatchObject({ max_retries: 1, managed_by: { name: 'legacy' } });
  });

  it('kubectl get conveyor -A shows every resource with its Ready state and reason', async () => {
    const table = await kubectlOk(kube, ['get', 'conveyor', '-A']);
    expect(table).toMatch(/team-payments\s+topicconfig\.conveyor\.dev\/orders\s+False\s+TopicNotAllowed/);
    expect(table).toMatch(/team-orders\s+topicconfig\.conveyor\.dev\/orders\s+orders\s+True\s+Applied/);
    expect(table).toMatch(/team-orders\s+consumergroup\.conveyor\.dev\/audit\s+orders\s+False\s+TopicExists/);
    expect(table).toMatch(/team-x\s+topicschema\.conveyor\.dev\/s\s+payments\.v1\s+False\s+TopicNotAllowed/);
  });
});
