import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { expectGrpcError, QueueClient, StreamRecorder } from './helpers/grpc.js';
import { startTestServer, type TestServer } from './helpers/server.js';

describeEachEngine('gRPC with consumer groups', (engine) => {
  let server: TestServer;
  let client: QueueClient;
  let n = 0;
  const fanOutTopic = async (...groups: string[]) => {
    const topic = `fan-${++n}`;
    for (const group of groups) {
      const res = await server.api.post(`/api/topics/${topic}/consumer-groups`, { consumer_group: group });
      expect(res.status, res.text).toBe(201);
    }
    return topic;
  };

  beforeAll(async () => {
    server = await startTestServer(engine);
    client = new QueueClient(server.server.grpcPort);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it('gives every group its own delivery, acked and nacked per group', async () => {
    const topic = await fanOutTopic('billing', 'shipping');
    const { id } = await client.call('Enqueue', { topic, payload: Buffer.from('x') });
    const billing = await client.call('Dequeue', { topic, consumer_group: 'billing' });
    const shipping = await client.call('BatchDequeue', { topic, count: 5, consumer_group: 'shipping' });
    expect(billing.id).toBe(id);
    expect(shipping.messages.map((m: any) => m.id)).toEqual([id]);

    await client.call('Ack', { id, consumer_group: 'billing' });
    await expectGrpcError(client.call('Ack', { id, consumer_group: 'billing' }), status.NOT_FOUND);
    await client.call('Nack', { id, consumer_group: 'shipping', error: 'later' });
    const again = await client.call('Dequeue', { topic, consumer_group: 'shipping' });
    expect(again).toMatchObject({ id, retry_count: 1 });
    expect(await client.call('AckBatch', { ids: [id], consumer_group: 'shipping' })).toEqual({ acked: [id], not_found: [] });
    await expectGrpcError(client.call('Dequeue', { topic, consumer_group: 'billing' }), status.NOT_FOUND);
  });

  it('requires consumer_group on a fan-out topic and a registered group', async () => {
    const topic = await fanOutTopic('only');
    await expectGrpcError(client.call('Dequeue', { topic }), status.INVALID_ARGUMENT, /consumer_group is required/);
    await expectGrpcError(client.call('Dequeue', { topic, consumer_group: 'stranger' }), status.FAILED_PRECONDITION);
    const rec = new StreamRecorder(client.subscribe({ topic }));
    await rec.until(() => rec.ended !== undefined, 5000, 'the error');
    expect(rec.ended!.code).toBe(status.INVALID_ARGUMENT);
  });

  it('refuses an AckBatch without a group that names a fan-out message, and acks none of the batch', async () => {
    const topic = await fanOutTopic('solo');
    const fanned = await client.call('Enqueue', { topic, payload: Buffer.from('f') });
    const plain = `plain-${++n}`;
    const { id } = await client.call('Enqueue', { topic: plain, payload: Buffer.from('p') });
    expect((await client.call('Dequeue', { topic: plain })).id).toBe(id);
    await expectGrpcError(client.call('AckBatch', { ids: [id, fanned.id] }), status.INVALID_ARGUMENT, /consumer_group is required/);
    expect(await server.db('messages').where({ id, status: 'processing' }).count({ n: '*' })).toEqual([{ n: 1 }]);
    expect(await client.call('AckBatch', { ids: [id] })).toEqual({ acked: [id], not_found: [] });
  });

  it('pushes each message to a Subscribe stream of every group', async () => {
    const topic = await fanOutTopic('a', 'b');
    const a = new StreamRecorder(client.subscribe({ topic, consumer_group: 'a' }));
    const b = new StreamRecorder(client.subscribe({ topic, consumer_group: 'b' }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const { id } = await client.call('Enqueue', { topic, payload: Buffer.from('fan') });
    await a.until(() => a.received.length === 1, 5000, 'group a');
    await b.until(() => b.received.length === 1, 5000, 'group b');
    expect([a.received[0].id, b.received[0].id]).toEqual([id, id]);
    a.stream.cancel();
    b.stream.cancel();
  });

  it("frees the slot of the acking group's stream only", async () => {
    const topic = await fanOutTopic('a', 'b');
    await client.call('EnqueueBatch', { requests: Array.from({ length: 11 }, (_, i) => ({ topic, payload: Buffer.from(`m${i}`) })) });
    const a = new StreamRecorder(client.subscribe({ topic, consumer_group: 'a', visibility_timeout_seconds: 60 }));
    const b = new StreamRecorder(client.subscribe({ topic, consumer_group: 'b', visibility_timeout_seconds: 60 }));
    await a.until(() => a.received.length === 10, 5000, 'ten for a');
    await b.until(() => b.received.length === 10, 5000, 'ten for b');
    await client.call('Ack', { id: b.received[0].id, consumer_group: 'b' });
    await b.until(() => b.received.length === 11, 3000, "b's eleventh");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(a.received).toHaveLength(10);
    a.stream.cancel();
    b.stream.cancel();
  });

  it("frees a dead-letter stream's slot whether the ack names the dead letter's group or not", async () => {
    const topic = await fanOutTopic('g1');
    expect((await server.api.put(`/api/topic-configs/${topic}`, { max_retries: 1 })).status).toBe(200);
    await client.call('EnqueueBatch', { requests: Array.from({ length: 4 }, (_, i) => ({ topic, payload: Buffer.from(`d${i}`) })) });
    for (let i = 0; i < 4; i++) {
      const { id } = await client.call('Dequeue', { topic, consumer_group: 'g1' });
      await client.call('Nack', { id, error: 'boom', consumer_group: 'g1' });
    }
    expect((await server.api.get(`/api/messages?topic=${topic}.dlq`)).body.total).toBe(4);

    // A stream naming the group gets that group's dead letters; an ack without the group settles them.
    const named = new StreamRecorder(client.subscribe({ topic: `${topic}.dlq`, consumer_group: 'g1', max_in_flight: 1, visibility_timeout_seconds: 60 }));
    await named.until(() => named.received.length === 1, 5000, 'the first dead letter');
    await client.call('Ack', { id: named.received[0].id });
    await named.until(() => named.received.length === 2, 3000, 'the second dead letter, once the first was acked without a group');
    named.stream.cancel();
    await named.until(() => named.ended !== undefined, 3000, 'the end of the stream');

    // A stream without a group gets them too; an ack naming their group settles them.
    const plain = new StreamRecorder(client.subscribe({ topic: `${topic}.dlq`, max_in_flight: 1, visibility_timeout_seconds: 60 }));
    await plain.until(() => plain.received.length === 1, 5000, 'the third dead letter');
    await client.call('Ack', { id: plain.received[0].id, consumer_group: 'g1' });
    await plain.until(() => plain.received.length === 2, 3000, 'the fourth dead letter, once the third was acked with its group');
    await client.call('AckBatch', { ids: [plain.received[1].id], consumer_group: 'g1' });
    plain.stream.cancel();
    // Three were acked; the second stays held until its visibility timeout.
    expect((await server.api.get(`/api/messages?topic=${topic}.dlq`)).body.total).toBe(1);
  });
});
