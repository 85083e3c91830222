import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { dequeueIds, enqueueId, failOnce, listTopic, putTopicConfig } from './helpers/messages.js';
import { startTestServer, type TestServer } from './helpers/server.js';

describeEachEngine('queue.require_topic_registration', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine, { overrides: { queue: { require_topic_registration: true, dlq_threshold: 1 } } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('rejects enqueue and dequeue on an unregistered topic with 422', async () => {
    const enqueued = await server.api.enqueue('reg-unknown', 'x');
    expectErrorBody(enqueued, 422);
    expect(enqueued.body.error).toMatch(/reg-unknown/);
    expectErrorBody(await server.api.dequeue('reg-unknown'), 422);
    expectErrorBody(await server.api.post('/api/messages/batch', { messages: [{ topic: 'reg-unknown', payload: 'x' }] }), 422);
    expect(await listTopic(server.api, 'reg-unknown')).toEqual([]);
  });

  it('still answers 400 for an invalid topic name', async () => {
    expectErrorBody(await server.api.enqueue('bad name', 'x'), 400);
    expectErrorBody(await server.api.dequeue('bad name'), 400);
  });

  it('accepts both once the topic has a configuration, even an empty one', async () => {
    await putTopicConfig(server.api, 'reg-known', {});
    const id = await enqueueId(server.api, 'reg-known', 'x');
    expect(await dequeueIds(server.api, 'reg-known')).toEqual([id]);
  });

  it('lets the dead-letter topic of a registered topic be dequeued', async () => {
    await putTopicConfig(server.api, 'reg-dlq', {});
    const id = await enqueueId(server.api, 'reg-dlq', 'x');
    await failOnce(server.api, 'reg-dlq', id);
    expect(await dequeueIds(server.api, 'reg-dlq.dlq')).toEqual([id]);
    expectErrorBody(await server.api.dequeue('reg-other.dlq'), 422);
  });

  it('rejects the topic again after its configuration is deleted', async () => {
    await putTopicConfig(server.api, 'reg-deleted', {});
    await enqueueId(server.api, 'reg-deleted', 'x');
    expect((await server.api.delete('/api/topic-configs/reg-deleted')).status).toBe(204);
    expectErrorBody(await server.api.enqueue('reg-deleted', 'y'), 422);
    expectErrorBody(await server.api.dequeue('reg-deleted'), 422);
  });
});

describeEachEngine('without queue.require_topic_registration', (engine) => {
  it('accepts any valid topic (the default)', async () => {
    const server = await startTestServer(engine);
    try {
      const id = await enqueueId(server.api, 'reg-free', 'x');
      expect(await dequeueIds(server.api, 'reg-free')).toEqual([id]);
    } finally {
      await server.close();
    }
  });
});
