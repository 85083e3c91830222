import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeKube, type FakeKube } from './fake-kube/index.js';
import { conveyorResource, startTestController, waitForReady, type ResourceRef, type TestController } from './helpers/controller.js';
import { describeEachEngine } from './helpers/engines.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const scratch = mkdtempSync(join(tmpdir(), 'conveyor-handover-'));

async function apply(kube: FakeKube, name: string, yaml: string): Promise<void> {
  const path = join(scratch, `${name}.yaml`);
  writeFileSync(path, yaml);
  const run = await kube.kubectl(['apply', '-f', path]);
  expect(run.code, run.stderr).toBe(0);
}

async function remove(kube: FakeKube, ref: ResourceRef): Promise<void> {
  const run = await kube.kubectl(['delete', ref.plural, ref.name, '-n', ref.namespace]);
  expect(run.code, run.stderr).toBe(0);
}

/** creationTimestamp has second resolution: the second resource must be younger to lose. */
const oneSecondLater = () => new Promise((resolve) => setTimeout(resolve, 1100));

const consumerGroup = (ref: ResourceRef, topic: string, group: string) =>
  `apiVersion: conveyor.dev/v1alpha1\nkind: ConsumerGroup\nmetadata: {name: ${ref.name}, namespace: ${ref.namespace}}\nspec: {topic: ${topic}, group: ${group}}\n`;

const topicSchema = (ref: ResourceRef, topic: string, schema: object) =>
  `apiVersion: conveyor.dev/v1alpha1\nkind: TopicSchema\nmetadata: {name: ${ref.name}, namespace: ${ref.namespace}}\nspec:\n  topic: ${topic}\n  schema: ${JSON.stringify(schema)}\n`;

describeEachEngine('controller: deleting the winner of two resources for one row', (engine) => {
  let kube: FakeKube;
  let server: TestServer;
  let controller: TestController;

  beforeAll(async () => {
    kube = await startFakeKube();
    server = await startTestServer(engine);
    controller = await startTestController(kube, server.database.url);
    const crds = await kube.kubectl(['apply', '-f', 'crds/']);
    expect(crds.code, crds.stderr).toBe(0);
  });
  afterAll(async () => {
    await controller?.close();
    await server?.close();
    await kube?.close();
  });

  const handedOverEvents = (ref: ResourceRef) =>
    kube.list({ group: '', version: 'v1', plural: 'events', namespace: ref.namespace }).filter((e) => e.involvedObject?.name === ref.name && e.reason === 'HandedOver');

  it('hands a consumer group to the next oldest resource with its deliveries and backlog', async () => {
    const topic = 'handover-orders';
    const winner: ResourceRef = { plural: 'consumergroups', namespace: 'team-a', name: 'billing' };
    const successor: ResourceRef = { plural: 'consumergroups', namespace: 'team-b', name: 'billing-copy' };
    await apply(kube, 'cg-winner', consumerGroup(winner, topic, 'billing'));
    await waitForReady(kube, winner);
    await oneSecondLater();
    await apply(kube, 'cg-successor', consumerGroup(successor, topic, 'billing'));
    await waitForReady(kube, successor, 'False', 'Conflict');

    // The API server learns of the group on its next catalog poll.
    await expect.poll(async () => (await server.api.dequeue(topic, { consumer_group: 'billing' })).status).toBe(200);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await server.api.enqueue(topic, `order-${i}`)).body.id);
    const inFlight = (await server.api.dequeue(topic, { consumer_group: 'billing', count: 2 })).body.messages.map((m) => m.id);
    expect(inFlight).toEqual(ids.slice(0, 2));

    await remove(kube, winner);
    await waitForReady(kube, successor);
    await expect.poll(() => conveyorResource(kube, winner), { timeout: 10_000 }).toBeUndefined();
    await expect
      .poll(async () => (await server.api.get(`/api/topics/${topic}/consumer-groups/billing`)).body.managed_by)
      .toEqual({ kind: 'ConsumerGroup', namespace: 'team-b', name: 'billing-copy' });
    // Neither the backlog nor the deliveries in flight went with the deleted resource.
    const backlog = (await server.api.dequeue(topic, { consumer_group: 'billing', count: 10 })).body.messages.map((m) => m.id);
    expect(backlog).toEqual(ids.slice(2));
    for (const id of inFlight) expect((await server.api.post(`/api/messages/${id}/ack`, { consumer_group: 'billing' })).status).toBe(204);
    await expect.poll(() => handedOverEvents(winner).map((e) => e.message)).toEqual([
      'consumer group "billing" on topic "handover-orders": kept and handed over to ConsumerGroup team-b/billing-copy, the next oldest ConsumerGroup for it',
    ]);
  });

  it("hands a schema to the next oldest resource, which stores its own as the schema's next version", async () => {
    const topic = 'handover-events';
    const winner: ResourceRef = { plural: 'topicschemas', namespace: 'team-a', name: 'events' };
    const successor: ResourceRef = { plural: 'topicschemas', namespace: 'team-b', name: 'events' };
    const first = { type: 'record', name: 'Event', fields: [{ name: 'id', type: 'string' }] };
    const second = { type: 'record', name: 'Event', fields: [{ name: 'id', type: 'string' }, { name: 'source', type: 'string' }] };
    await apply(kube, 'schema-winner', topicSchema(winner, topic, first));
    expect((await waitForReady(kube, winner)).status.schemaVersion).toBe(1);
    await oneSecondLater();
    await apply(kube, 'schema-successor', topicSchema(successor, topic, second));
    await waitForReady(kube, successor, 'False', 'Conflict');

    await remove(kube, winner);
    // A row removed before the successor wrote its schema would start again at version 1.
    expect((await waitForReady(kube, successor)).status.schemaVersion).toBe(2);
    const stored = await server.api.get(`/api/topic-schemas/${topic}`);
    expect(stored.body).toMatchObject({ version: 2, managed_by: { kind: 'TopicSchema', namespace: 'team-b', name: 'events' } });
    expect(JSON.parse(stored.body.schema_json)).toEqual(second);
    await expect.poll(() => handedOverEvents(winner).length).toBe(1);
  });
});
