import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeKube, type FakeKube } from './fake-kube/index.js';
import { conveyorResource, readyOf, startTestController, waitForReady, type TestController } from './helpers/controller.js';
import { describeEachEngine, type Engine } from './helpers/engines.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const scratch = mkdtempSync(join(tmpdir(), 'conveyor-gitops-'));
function manifest(name: string, yaml: string): string {
  const path = join(scratch, name);
  writeFileSync(path, yaml);
  return path;
}

async function kubectlOk(kube: FakeKube, args: string[]): Promise<string> {
  const run = await kube.kubectl(args);
  expect(run.code, `kubectl ${args.join(' ')}\n${run.stderr}`).toBe(0);
  return run.stdout;
}

const EXAMPLES = [
  { plural: 'topicconfigs', namespace: 'team-orders', name: 'orders' },
  { plural: 'topicschemas', namespace: 'team-orders', name: 'orders' },
  { plural: 'consumergroups', namespace: 'team-orders', name: 'billing' },
  { plural: 'consumergroups', namespace: 'team-orders', name: 'shipping' },
  { plural: 'topicconfigs', namespace: 'team-orders', name: 'notifications.email' },
  { plural: 'topicconfigs', namespace: 'team-payments', name: 'payments' },
  { plural: 'consumergroups', namespace: 'team-payments', name: 'payments-fraud-check' },
] as const;

/** A fake API server with the CRDs (and `manifests`), a service on `engine` and a controller over the same database. */
function useKubernetesFixture(engine: Engine, manifests: string[] = []): { kube: FakeKube; server: TestServer } {
  const fixture = {} as { kube: FakeKube; server: TestServer; controller: TestController };
  beforeAll(async () => {
    fixture.kube = await startFakeKube();
    fixture.server = await startTestServer(engine);
    fixture.controller = await startTestController(fixture.kube, fixture.server.database.url);
    for (const path of ['crds/', ...manifests]) await kubectlOk(fixture.kube, ['apply', '-f', path]);
  });
  afterAll(async () => {
    await fixture.controller?.close();
    await fixture.server?.close();
    await fixture.kube?.close();
  });
  return fixture;
}

describeEachEngine('controller: GitOps with the example manifests', (engine) => {
  const fixture = useKubernetesFixture(engine, ['deploy/examples/']);
  let kube: FakeKube;
  let server: TestServer;
  beforeAll(() => void ({ kube, server } = fixture));

  it('makes every example resource Ready=True for its generation', async () => {
    for (const ref of EXAMPLES) {
      const obj = await waitForReady(kube, ref);
      expect(readyOf(obj)).toMatchObject({ status: 'True', reason: 'Applied', observedGeneration: obj.metadata.generation });
      expect(obj.metadata.finalizers).toContain('conveyor.dev/finalizer');
    }
    const table = await kubectlOk(kube, ['get', 'topicconfigs', '-A']);
    expect(table).toMatch(/orders\s+orders\s+True\s+Applied/);
  });

  it('writes the rows the manifests describe, marked as managed by their resources', async () => {
    // The API server reads its cache, refreshed by a catalog poll (200 ms in tests).
    await expect.poll(async () => (await server.api.get('/api/topic-configs/orders')).body).toEqual({
      topic: 'orders',
      max_retries: 5,
      message_ttl_seconds: 86400,
      max_depth: 100000,
      throughput_limit: null,
      replayable: true,
      replay_window_seconds: 604800,
      delivery_delay_seconds: null,
      retry_backoff_seconds: null,
      retry_backoff_max_seconds: null,
      visibility_timeout_seconds: null,
      receive_wait_seconds: null,
      content_based_deduplication: null,
      managed_by: { kind: 'TopicConfig', namespace: 'team-orders', name: 'orders' },
    });
    await expect.poll(async () => (await server.api.get('/api/topic-schemas')).body.items.length).toBe(1);
    const payments = await server.api.get('/api/topic-configs/payments.v1');
    expect(payments.body).toMatchObject({ max_retries: 3, throughput_limit: 500, retry_backoff_seconds: 5, retry_backoff_max_seconds: 300, managed_by: { kind: 'TopicConfig', namespace: 'team-payments', name: 'payments' } });
    const schema = await server.api.get('/api/topic-schemas/orders');
    expect(JSON.parse(schema.body.schema_json)).toMatchObject({ type: 'record', name: 'Order' });
    expect(schema.body.managed_by).toEqual({ kind: 'TopicSchema', namespace: 'team-orders', name: 'orders' });
    expect(conveyorResource(kube, EXAMPLES[1]).status).toMatchObject({ schemaVersion: schema.body.version, fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect((await server.api.get('/api/topics/orders/consumer-groups')).body).toEqual({ items: ['billing', 'shipping'] });
    expect((await server.api.get('/api/topics/payments.v1/consumer-groups/fraud-check')).body).toEqual({
      topic: 'payments.v1',
      consumer_group: 'fraud-check',
      managed_by: { kind: 'ConsumerGroup', namespace: 'team-payments', name: 'payments-fraud-check' },
    });
    // The schema is live: a payload that does not match is refused.
    expect((await server.api.enqueue('orders', JSON.stringify({ id: 'o-1' }))).status).toBe(422);
  });

  it('marks the topics it manages in GET /api/topics', async () => {
    const topics = (await server.api.get('/api/topics?limit=200')).body.items;
    const orders = topics.find((t: any) => t.topic === 'orders');
    expect(orders).toMatchObject({
      managed: true,
      configured: true,
      managed_by: { config: { kind: 'TopicConfig', namespace: 'team-orders', name: 'orders' }, schema: { kind: 'TopicSchema', namespace: 'team-orders', name: 'orders' } },
    });
    expect(orders.consumer_groups.map((g: any) => [g.consumer_group, g.managed_by?.kind])).toEqual([
      ['billing', 'ConsumerGroup'],
      ['shipping', 'ConsumerGroup'],
    ]);
    expect(topics.find((t: any) => t.topic === 'payments.v1')).toMatchObject({ managed: true, managed_by: { schema: null } });
  });

  it('refuses HTTP changes to managed rows with 409 naming the resource', async () => {
    const cases = [
      await server.api.put('/api/topic-configs/orders', { max_retries: 1 }),
      await server.api.delete('/api/topic-configs/orders'),
      await server.api.put('/api/topic-schemas/orders', { schema_json: '"string"' }),
      await server.api.delete('/api/topic-schemas/orders'),
      await server.api.delete('/api/topics/orders/consumer-groups/billing'),
      await server.api.post('/api/topics/orders/consumer-groups', { consumer_group: 'billing' }),
    ];
    for (const res of cases) expect(res.status).toBe(409);
    expect(cases[0].body.error).toBe('topic configuration of "orders" is managed by TopicConfig team-orders/orders; change that Kubernetes resource instead');
    expect(cases[2].body.error).toContain('is managed by TopicSchema team-orders/orders');
    expect(cases[4].body.error).toBe('consumer group "billing" on topic "orders" is managed by ConsumerGroup team-orders/billing; change that Kubernetes resource instead');
    expect((await server.api.get('/api/topic-configs/orders')).body.max_retries).toBe(5);
  });

  it('applies an edit and reports the new generation', async () => {
    const path = manifest(
      'orders-edit.yaml',
      `apiVersion: conveyor.dev/v1alpha1
kind: TopicConfig
metadata: {name: orders, namespace: team-orders}
spec: {maxRetries: 7, messageTtlSeconds: 86400, maxDepth: 100000, replayable: true, replayWindowSeconds: 604800, deliveryDelaySeconds: 5, retryBackoffSeconds: 2, retryBackoffMaxSeconds: 120, visibilityTimeoutSeconds: 90, receiveWaitSeconds: 4, contentBasedDeduplication: false}
`,
    );
    await kubectlOk(kube, ['apply', '-f', path]);
    const obj = await waitForReady(kube, EXAMPLES[0]);
    expect(obj.metadata.generation).toBe(2);
    expect(obj.status.observedGeneration).toBe(2);
    await expect.poll(async () => (await server.api.get('/api/topic-configs/orders')).body.max_retries).toBe(7);
    expect((await server.api.get('/api/topic-configs/orders')).body).toMatchObject({
      delivery_delay_seconds: 5,
      retry_backoff_seconds: 2,
      retry_backoff_max_seconds: 120,
      visibility_timeout_seconds: 90,
      receive_wait_seconds: 4,
      content_based_deduplication: false,
    });
  });

  it('repairs drift written straight into the database within a resync period', async () => {
    await server.db('topic_configs').where({ topic: 'orders' }).update({ max_retries: 99 });
    await server.db('consumer_groups').where({ topic: 'orders', consumer_group: 'billing' }).delete();
    await expect.poll(async () => (await server.api.get('/api/topic-configs/orders')).body.max_retries, { timeout: 10_000, interval: 200 }).toBe(7);
    await expect.poll(async () => (await server.api.get('/api/topics/orders/consumer-groups')).body.items, { timeout: 10_000, interval: 200 }).toEqual(['billing', 'shipping']);
  });

  it('records events on transitions and writes status only when it changes, not on every resync', async () => {
    const statusWrites = () => kube.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith('/status')).length;
    const before = statusWrites();
    await new Promise((resolve) => setTimeout(resolve, 4500)); // two resync periods
    expect(statusWrites()).toBe(before);
    const events = kube.list({ group: '', version: 'v1', plural: 'events', namespace: 'team-orders' }).filter((e) => e.involvedObject?.name === 'billing' && e.involvedObject?.kind === 'ConsumerGroup');
    const applied = events.filter((e) => e.reason === 'Applied');
    expect(applied.length).toBeGreaterThanOrEqual(1);
    // First registration, then the re-registration after the drift: never one per resync.
    expect(applied.reduce((sum, e) => sum + (e.count ?? 1), 0)).toBeLessThanOrEqual(2);
    expect(events.every((e) => e.type === 'Normal' && e.source?.component === 'conveyor-controller')).toBe(true);
  });

  it('refuses invalid specs through the CRD schema, and reports what only the service can judge as Invalid with the HTTP message', async () => {
    const bad = await kube.kubectl(['apply', '-f', manifest('bad-depth.yaml', 'apiVersion: conveyor.dev/v1alpha1\nkind: TopicConfig\nmetadata: {name: bad-depth, namespace: team-orders}\nspec: {maxDepth: 0}\n')]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('spec.maxDepth');
    const dlq = await kube.kubectl(['apply', '-f', manifest('bad-dlq.yaml', 'apiVersion: conveyor.dev/v1alpha1\nkind: TopicConfig\nmetadata: {name: x, namespace: team-orders}\nspec: {topic: x.dlq}\n')]);
    expect(dlq.code).not.toBe(0);
    expect(dlq.stderr).toContain('reserved for dead-letter topics');
    const immutable = await kube.kubectl(['apply', '-f', manifest('move.yaml', 'apiVersion: conveyor.dev/v1alpha1\nkind: ConsumerGroup\nmetadata: {name: billing, namespace: team-orders}\nspec: {topic: other}\n')]);
    expect(immutable.code).not.toBe(0);
    expect(immutable.stderr).toContain('spec.topic is immutable');

    // metadata.name stands in for spec.topic: no schema can refuse a name ending in .dlq.
    await kubectlOk(kube, ['apply', '-f', manifest('name-dlq.yaml', 'apiVersion: conveyor.dev/v1alpha1\nkind: TopicConfig\nmetadata: {name: audit.dlq, namespace: team-orders}\nspec: {maxRetries: 1}\n')]);
    const httpDlq = await server.api.put('/api/topic-configs/audit.dlq', { max_retries: 1 });
    const invalidName = await waitForReady(kube, { plural: 'topicconfigs', namespace: 'team-orders', name: 'audit.dlq' }, 'False', 'Invalid');
    expect(readyOf(invalidName).message).toBe(httpDlq.body.error);

    const avro = { type: 'record', name: 'Broken', fields: [{ name: 'a', type: 'no-such-type' }] };
    const schemaYaml = `apiVersion: conveyor.dev/v1alpha1\nkind: TopicSchema\nmetadata: {name: broken, namespace: team-orders}\nspec:\n  topic: broken\n  schema: ${JSON.stringify(avro)}\n`;
    await kubectlOk(kube, ['apply', '-f', manifest('broken-schema.yaml', schemaYaml)]);
    const httpAvro = await server.api.put('/api/topic-schemas/broken-http', { schema_json: JSON.stringify(avro) });
    expect(httpAvro.status).toBe(400);
    const broken = await waitForReady(kube, { plural: 'topicschemas', namespace: 'team-orders', name: 'broken' }, 'False', 'Invalid');
    expect(readyOf(broken).message).toBe(httpAvro.body.error);
    expect((await server.api.get('/api/topic-schemas/broken')).status).toBe(404);
    expect((await server.api.get('/api/topic-configs/audit.dlq')).status).not.toBe(200);
    const warnings = () => kube.list({ group: '', version: 'v1', plural: 'events', namespace: 'team-orders' }).filter((e) => e.involvedObject?.name === 'broken');
    await expect.poll(() => warnings().map((e) => [e.type, e.reason])).toEqual([['Warning', 'Invalid']]);
  });

  it('deletes what a Delete resource created and keeps what a Retain resource created, releasing it', async () => {
    await kubectlOk(kube, ['delete', 'topicconfig', 'notifications.email', '-n', 'team-orders']);
    await expect.poll(async () => (await server.api.get('/api/topic-configs/notifications.email')).status, { timeout: 10_000 }).toBe(404);
    await expect.poll(() => conveyorResource(kube, EXAMPLES[4]), { timeout: 10_000 }).toBeUndefined();

    await kubectlOk(kube, ['delete', 'consumergroup', 'billing', 'shipping', '-n', 'team-orders']);
    await expect.poll(async () => (await server.api.get('/api/topics/orders/consumer-groups')).body.items, { timeout: 10_000 }).toEqual(['shipping']);
    expect((await server.api.get('/api/topics/orders/consumer-groups/shipping')).body.managed_by).toBeNull();

    await kubectlOk(kube, ['delete', 'topicconfig', 'payments', '-n', 'team-payments']);
    await expect.poll(() => conveyorResource(kube, EXAMPLES[5]), { timeout: 10_000 }).toBeUndefined();
    // The API server's cache sees the release on its next catalog poll.
    await expect.poll(async () => (await server.api.get('/api/topic-configs/payments.v1')).body.managed_by, { timeout: 5000 }).toBeNull();
    expect((await server.api.get('/api/topic-configs/payments.v1')).body).toMatchObject({ max_retries: 3, throughput_limit: 500 });
    expect((await server.api.put('/api/topic-configs/payments.v1', { max_retries: 4 })).status).toBe(200);
  });
});

describeEachEngine('controller: two resources for one topic', (engine) => {
  const fixture = useKubernetesFixture(engine);
  let kube: FakeKube;
  let server: TestServer;
  beforeAll(() => void ({ kube, server } = fixture));

  const config = (namespace: string, maxRetries: number) =>
    `apiVersion: conveyor.dev/v1alpha1\nkind: TopicConfig\nmetadata: {name: shared, namespace: ${namespace}}\nspec: {maxRetries: ${maxRetries}}\n`;

  it('lets the oldest win, reports Conflict on the other, and hands over when the winner goes', async () => {
    await server.api.put('/api/topic-configs/shared', { max_depth: 10 }); // an unmanaged row is adopted
    await kubectlOk(kube, ['apply', '-f', manifest('first.yaml', config('team-a', 2))]);
    await waitForReady(kube, { plural: 'topicconfigs', namespace: 'team-a', name: 'shared' });
    await new Promise((resolve) => setTimeout(resolve, 1100)); // creationTimestamp has second resolution
    await kubectlOk(kube, ['apply', '-f', manifest('second.yaml', config('team-b', 4))]);
    const loser = await waitForReady(kube, { plural: 'topicconfigs', namespace: 'team-b', name: 'shared' }, 'False', 'Conflict');
    expect(readyOf(loser).message).toBe('topic "shared" is already managed by TopicConfig team-a/shared, the oldest TopicConfig for it; delete one of the two');
    await expect.poll(async () => (await server.api.get('/api/topic-configs/shared')).body).toMatchObject({ max_retries: 2, max_depth: null, managed_by: { namespace: 'team-a' } });
    // The Event follows the status write.
    await expect.poll(() => kube.list({ group: '', version: 'v1', plural: 'events', namespace: 'team-b' }).filter((e) => e.reason === 'Conflict').length).toBe(1);

    await kubectlOk(kube, ['delete', 'topicconfig', 'shared', '-n', 'team-a']);
    await waitForReady(kube, { plural: 'topicconfigs', namespace: 'team-b', name: 'shared' });
    await expect.poll(async () => (await server.api.get('/api/topic-configs/shared')).body).toMatchObject({ max_retries: 4, managed_by: { kind: 'TopicConfig', namespace: 'team-b', name: 'shared' } });
  });
});
