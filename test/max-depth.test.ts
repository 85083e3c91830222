import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { expectGrpcError, QueueClient } from './helpers/grpc.js';
import { dequeueIds, enqueueId, failOnce, findMessage, listTopic, putTopicConfig } from './helpers/messages.js';
import { startTestServer, type TestServer } from './helpers/server.js';

describeEachEngine('max_depth', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine, { overrides: { queue: { dlq_threshold: 1 } } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers 429 once max_depth messages are pending, and stores nothing more', async () => {
    await putTopicConfig(server.api, 'depth-full', { max_depth: 3 });
    for (let i = 0; i < 3; i++) await enqueueId(server.api, 'depth-full', `m${i}`);
    const res = await server.api.enqueue('depth-full', 'one too many');
    expectErrorBody(res, 429);
    expect(res.body.error).toMatch(/depth-full/);
    expect((await listTopic(server.api, 'depth-full')).map((m) => m.payload)).toEqual(['m0', 'm1', 'm2']);
  });

  it('counts only pending messages: a dequeue makes room', async () => {
    await putTopicConfig(server.api, 'depth-room', { max_depth: 2 });
    await enqueueId(server.api, 'depth-room', 'a');
    await enqueueId(server.api, 'depth-room', 'b');
    expectErrorBody(await server.api.enqueue('depth-room', 'c'), 429);
    await dequeueIds(server.api, 'depth-room');
    await enqueueId(server.api, 'depth-room', 'c');
    expectErrorBody(await server.api.enqueue('depth-room', 'd'), 429);
  });

  it('allows a keyed upsert onto an existing pending message at the cap, but not a new key', async () => {
    await putTopicConfig(server.api, 'depth-key', { max_depth: 2 });
    const keyed = await enqueueId(server.api, 'depth-key', 'v1', { key: 'k' });
    await enqueueId(server.api, 'depth-key', 'plain');
    expect(await enqueueId(server.api, 'depth-key', 'v2', { key: 'k' })).toBe(keyed);
    expect((await findMessage(server.api, 'depth-key', keyed)).payload).toBe('v2');
    expectErrorBody(await server.api.enqueue('depth-key', 'x', { key: 'other' }), 429);
    expect(await listTopic(server.api, 'depth-key')).toHaveLength(2);
  });

  it('caps only its own topic, and a dead-lettered message no longer counts', async () => {
    await putTopicConfig(server.api, 'depth-own', { max_depth: 1 });
    const id = await enqueueId(server.api, 'depth-own', 'x');
    await enqueueId(server.api, 'depth-other', 'y');
    await enqueueId(server.api, 'depth-other', 'z');
    // The message leaves for depth-own.dlq (threshold 1), which makes room on depth-own.
    await failOnce(server.api, 'depth-own', id);
    await enqueueId(server.api, 'depth-own', 'again');
    expectErrorBody(await server.api.enqueue('depth-own', 'full'), 429);
  });

  it('lifts the cap when max_depth is reset to null', async () => {
    await putTopicConfig(server.api, 'depth-lift', { max_depth: 1 });
    await enqueueId(server.api, 'depth-lift', 'a');
    expectErrorBody(await server.api.enqueue('depth-lift', 'b'), 429);
    await putTopicConfig(server.api, 'depth-lift', { max_depth: null });
    await enqueueId(server.api, 'depth-lift', 'b');
    expect(await listTopic(server.api, 'depth-lift')).toHaveLength(2);
  });

  it('rejects the whole batch with 429 when it does not fit', async () => {
    await putTopicConfig(server.api, 'depth-batch', { max_depth: 2 });
    await enqueueId(server.api, 'depth-batch', 'a');
    const res = await server.api.post('/api/messages/batch', {
      messages: [
        { topic: 'depth-batch', payload: 'b' },
        { topic: 'depth-batch', payload: 'c' },
      ],
    });
    expectErrorBody(res, 429);
    expect((await listTopic(server.api, 'depth-batch')).map((m) => m.payload)).toEqual(['a']);
  });

  it('a 429 for a full topic asks to retry with Retry-After (single and batch); gRPC stays RESOURCE_EXHAUSTED', async () => {
    await putTopicConfig(server.api, 'depth-retry', { max_depth: 1 });
    await enqueueId(server.api, 'depth-retry', 'a');
    const single = await server.api.enqueue('depth-retry', 'b');
    expectErrorBody(single, 429);
    expect(single.headers.get('retry-after')).toBe('1');
    const batch = await server.api.post('/api/messages/batch', { messages: [{ topic: 'depth-retry', payload: 'c' }] });
    expectErrorBody(batch, 429);
    expect(batch.headers.get('retry-after')).toBe('1');
    const client = new QueueClient(server.server.grpcPort);
    try {
      await expectGrpcError(client.call('Enqueue', { topic: 'depth-retry', payload: Buffer.from('d') }), status.RESOURCE_EXHAUSTED, /^topic "depth-retry" is full \(max_depth reached\)$/);
    } finally {
      client.close();
    }
    // Other answers still carry none.
    expect((await server.api.enqueue('depth-retry-other', 'e')).headers.get('retry-after')).toBeNull();
    expect((await listTopic(server.api, 'depth-retry')).map((m) => m.payload)).toEqual(['a']);
  });
});
