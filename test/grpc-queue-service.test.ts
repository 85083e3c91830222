import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { expectGrpcError, QueueClient } from './helpers/grpc.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const UNKNOWN_ID = '01900000-0000-7000-8000-000000000000';

describeEachEngine('gRPC QueueService', (engine) => {
  let server: TestServer;
  let client: QueueClient;
  let n = 0;
  const topic = () => `grpc-${++n}`;

  beforeAll(async () => {
    server = await startTestServer(engine);
    client = new QueueClient(server.server.grpcPort);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  describe('Enqueue and Dequeue', () => {
    it('round-trips payload bytes, metadata, key and timestamps', async () => {
      const t = topic();
      const before = Date.now();
      const payload = Buffer.from([0, 1, 2, 255, 10]);
      const { id } = await client.call('Enqueue', { topic: t, payload, metadata: { trace: 'abc' }, key: 'k-1' });
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      const m = await client.call('Dequeue', { topic: t, visibility_timeout_seconds: 30 });
      expect(m.id).toBe(id);
      expect(m.topic).toBe(t);
      expect(Buffer.compare(m.payload, payload)).toBe(0);
      expect(m.metadata).toEqual({ trace: 'abc' });
      expect(m.key).toBe('k-1');
      expect(m.retry_count).toBe(0);
      expect(m.max_retries).toBe(3);
      const createdMs = m.created_at.seconds * 1000 + m.created_at.nanos / 1e6;
      expect(createdMs).toBeGreaterThanOrEqual(before - 5);
      expect(createdMs).toBeLessThanOrEqual(Date.now() + 5);
      // The same message through HTTP: gRPC and HTTP share one domain.
      const listed = await server.api.get(`/api/messages?topic=${t}`);
      expect(listed.body.items[0]).toMatchObject({ id, status: 'processing', key: 'k-1' });
    });

    it('leaves key unset (not empty) when the message has none', async () => {
      const t = topic();
      await client.call('Enqueue', { topic: t, payload: Buffer.from('x') });
      const m = await client.call('Dequeue', { topic: t });
      expect(m.key).toBeUndefined();
      expect(m._key).toBeUndefined();
    });

    it('upserts a pending message with the same key and returns the same id', async () => {
      const t = topic();
      const a = await client.call('Enqueue', { topic: t, payload: Buffer.from('1'), key: 'same' });
      const b = await client.call('Enqueue', { topic: t, payload: Buffer.from('2'), key: 'same' });
      expect(b.id).toBe(a.id);
      const m = await client.call('Dequeue', { topic: t });
      expect(m.payload.toString()).toBe('2');
    });

    it('rejects bad input with INVALID_ARGUMENT', async () => {
      await expectGrpcError(client.call('Enqueue', { topic: 'bad topic!', payload: Buffer.from('x') }), status.INVALID_ARGUMENT, /topic/);
      await expectGrpcError(client.call('Enqueue', { topic: '', payload: Buffer.from('x') }), status.INVALID_ARGUMENT);
      await expectGrpcError(client.call('Enqueue', { topic: topic(), payload: Buffer.alloc(0) }), status.INVALID_ARGUMENT, /payload/);
      await expectGrpcError(client.call('Enqueue', { topic: topic(), payload: Buffer.alloc(1_048_577, 97) }), status.INVALID_ARGUMENT, /payload exceeds/);
      await expectGrpcError(client.call('Enqueue', { topic: 'orders.dlq', payload: Buffer.from('x') }), status.INVALID_ARGUMENT);
      await expectGrpcError(client.call('Enqueue', { topic: topic(), payload: Buffer.from('x'), key: '' }), status.INVALID_ARGUMENT, /key/);
      await expectGrpcError(client.call('Dequeue', { topic: topic(), visibility_timeout_seconds: 0 }), status.INVALID_ARGUMENT, /visibility/);
      await expectGrpcError(client.call('Dequeue', { topic: topic(), visibility_timeout_seconds: 43_201 }), status.INVALID_ARGUMENT);
    });

    it('answers NOT_FOUND for a unary Dequeue on an empty topic', async () => {
      await expectGrpcError(client.call('Dequeue', { topic: topic() }), status.NOT_FOUND);
    });

    it('answers RESOURCE_EXHAUSTED when the topic is full', async () => {
      const t = topic();
      expect((await server.api.put(`/api/topic-configs/${t}`, { max_depth: 1 })).status).toBe(200);
      await client.call('Enqueue', { topic: t, payload: Buffer.from('1') });
      await expectGrpcError(client.call('Enqueue', { topic: t, payload: Buffer.from('2') }), status.RESOURCE_EXHAUSTED, /full/);
    });

    it('answers FAILED_PRECONDITION for a consumer group that is not registered', async () => {
      await expectGrpcError(client.call('Dequeue', { topic: topic(), consumer_group: 'nobody' }), status.FAILED_PRECONDITION);
    });
  });

  describe('BatchDequeue', () => {
    it('returns up to count messages, oldest first, and an empty list when none are left', async () => {
      const t = topic();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await client.call('Enqueue', { topic: t, payload: Buffer.from(`m${i}`) })).id);
      const first = await client.call('BatchDequeue', { topic: t, count: 3 });
      expect(first.messages.map((m: any) => m.id)).toEqual(ids.slice(0, 3));
      const rest = await client.call('BatchDequeue', { topic: t, count: 10, visibility_timeout_seconds: 5 });
      expect(rest.messages.map((m: any) => m.id)).toEqual(ids.slice(3));
      expect((await client.call('BatchDequeue', { topic: t, count: 10 })).messages).toEqual([]);
    });

    it('rejects a count outside 1-1000 with INVALID_ARGUMENT', async () => {
      await expectGrpcError(client.call('BatchDequeue', { topic: topic(), count: 0 }), status.INVALID_ARGUMENT, /count/);
      await expectGrpcError(client.call('BatchDequeue', { topic: topic(), count: 1001 }), status.INVALID_ARGUMENT, /count/);
    });
  });

  describe('Ack and Nack', () => {
    it('acks a delivered message once; a second ack is NOT_FOUND', async () => {
      const t = topic();
      const { id } = await client.call('Enqueue', { topic: t, payload: Buffer.from('x') });
      await client.call('Dequeue', { topic: t });
      expect(await client.call('Ack', { id })).toEqual({});
      await expectGrpcError(client.call('Ack', { id }), status.NOT_FOUND);
      expect((await server.api.get(`/api/messages?topic=${t}`)).body.total).toBe(0);
    });

    it('answers NOT_FOUND for unknown, malformed and pending ids', async () => {
      await expectGrpcError(client.call('Ack', { id: UNKNOWN_ID }), status.NOT_FOUND);
      await expectGrpcError(client.call('Ack', { id: 'not-a-uuid' }), status.NOT_FOUND);
      await expectGrpcError(client.call('Nack', { id: UNKNOWN_ID, error: 'x' }), status.NOT_FOUND);
      const { id } = await client.call('Enqueue', { topic: topic(), payload: Buffer.from('x') });
      await expectGrpcError(client.call('Ack', { id }), status.NOT_FOUND);
    });

    it('nack returns the message for retry with its error recorded', async () => {
      const t = topic();
      const { id } = await client.call('Enqueue', { topic: t, payload: Buffer.from('x') });
      await client.call('Dequeue', { topic: t });
      expect(await client.call('Nack', { id, error: 'boom' })).toEqual({});
      const again = await client.call('Dequeue', { topic: t });
      expect(again.id).toBe(id);
      expect(again.retry_count).toBe(1);
      const listed = await server.api.get(`/api/messages?topic=${t}`);
      expect(listed.body.items[0].last_error).toBe('boom');
    });

    it('AckBatch acks what it can and lists the rest as not_found, in request order', async () => {
      const t = topic();
      const { ids } = await client.call('EnqueueBatch', { requests: [1, 2, 3].map((i) => ({ topic: t, payload: Buffer.from(`${i}`) })) });
      await client.call('BatchDequeue', { topic: t, count: 2 });
      const result = await client.call('AckBatch', { ids: [ids[1], UNKNOWN_ID, ids[0], ids[2], 'junk'] });
      expect(result.acked).toEqual([ids[1], ids[0]]);
      expect(result.not_found).toEqual([UNKNOWN_ID, ids[2], 'junk']);
    });
  });

  describe('EnqueueBatch', () => {
    it('enqueues all messages and returns their ids in request order', async () => {
      const t = topic();
      const { ids } = await client.call('EnqueueBatch', {
        requests: Array.from({ length: 100 }, (_, i) => ({ topic: t, payload: Buffer.from(`m${i}`), metadata: { i: String(i) } })),
      });
      expect(ids).toHaveLength(100);
      const { messages } = await client.call('BatchDequeue', { topic: t, count: 100 });
      expect(messages.map((m: any) => m.id)).toEqual(ids);
      expect(messages[42].payload.toString()).toBe('m42');
      expect(messages[42].metadata).toEqual({ i: '42' });
    });

    it('is all or nothing: one bad message rejects the batch', async () => {
      const t = topic();
      const err = await expectGrpcError(
        client.call('EnqueueBatch', { requests: [{ topic: t, payload: Buffer.from('ok') }, { topic: t, payload: Buffer.alloc(0) }] }),
        status.INVALID_ARGUMENT,
      );
      expect(err.details).toBe('requests[1]: payload must be a non-empty string');
      expect((await server.api.get(`/api/messages?topic=${t}`)).body.total).toBe(0);
    });

    it('rejects an empty batch and one over 1,000 messages', async () => {
      await expectGrpcError(client.call('EnqueueBatch', { requests: [] }), status.INVALID_ARGUMENT, /^requests must hold at least one message$/);
      const t = topic();
      const requests = Array.from({ length: 1001 }, () => ({ topic: t, payload: Buffer.from('x') }));
      await expectGrpcError(client.call('EnqueueBatch', { requests }), status.INVALID_ARGUMENT, /^requests must hold at most 1000 messages$/);
      expect((await server.api.get(`/api/messages?topic=${t}`)).body.total).toBe(0);
    });

    it('rejects the whole batch with RESOURCE_EXHAUSTED when it would overfill the topic', async () => {
      const t = topic();
      await server.api.put(`/api/topic-configs/${t}`, { max_depth: 2 });
      const requests = [1, 2, 3].map((i) => ({ topic: t, payload: Buffer.from(`${i}`) }));
      await expectGrpcError(client.call('EnqueueBatch', { requests }), status.RESOURCE_EXHAUSTED);
      expect((await server.api.get(`/api/messages?topic=${t}`)).body.total).toBe(0);
    });
  });

  it('records conveyor_grpc_request_duration_seconds by method and code', async () => {
    await client.call('Enqueue', { topic: topic(), payload: Buffer.from('x') });
    await expectGrpcError(client.call('Dequeue', { topic: topic() }), status.NOT_FOUND);
    const text = (await server.api.get('/metrics')).text;
    expect(text).toMatch(/conveyor_grpc_request_duration_seconds_count\{[^}]*method="Enqueue"[^}]*code="OK"[^}]*\} [1-9]/);
    expect(text).toMatch(/conveyor_grpc_request_duration_seconds_count\{[^}]*method="Dequeue"[^}]*code="NOT_FOUND"[^}]*\} [1-9]/);
  });
});

describeEachEngine('gRPC with topic registration required', (engine) => {
  let server: TestServer;
  let client: QueueClient;
  beforeAll(async () => {
    server = await startTestServer(engine, { overrides: { queue: { require_topic_registration: true } } });
    client = new QueueClient(server.server.grpcPort);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it('answers FAILED_PRECONDITION for an unregistered topic and serves a registered one', async () => {
    await expectGrpcError(client.call('Enqueue', { topic: 'unregistered', payload: Buffer.from('x') }), status.FAILED_PRECONDITION, /registered/);
    await expectGrpcError(client.call('Dequeue', { topic: 'unregistered' }), status.FAILED_PRECONDITION);
    await expectGrpcError(client.call('BatchDequeue', { topic: 'unregistered', count: 1 }), status.FAILED_PRECONDITION);
    await server.api.put('/api/topic-configs/registered', {});
    await expect.poll(() => client.call('Enqueue', { topic: 'registered', payload: Buffer.from('x') }).then(() => true, () => false)).toBe(true);
  });
});
