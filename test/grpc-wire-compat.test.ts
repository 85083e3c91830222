import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * A client built only from contract §9's names and field numbers, never from proto/queue.proto: if the
 * project's proto file renumbered or renamed a field, existing queue-ti clients would break and so does this.
 */
const CONTRACT = protobuf.Root.fromJSON({
  nested: {
    google: { nested: { protobuf: { nested: { Timestamp: { fields: { seconds: { type: 'int64', id: 1 }, nanos: { type: 'int32', id: 2 } } } } } } },
    queue: {
      nested: {
        EnqueueRequest: {
          oneofs: { _key: { oneof: ['key'] } },
          fields: {
            topic: { type: 'string', id: 1 },
            payload: { type: 'bytes', id: 2 },
            metadata: { keyType: 'string', type: 'string', id: 3 },
            key: { type: 'string', id: 4, options: { proto3_optional: true } },
          },
        },
        EnqueueResponse: { fields: { id: { type: 'string', id: 1 } } },
        DequeueRequest: {
          oneofs: { _visibility_timeout_seconds: { oneof: ['visibility_timeout_seconds'] } },
          fields: {
            topic: { type: 'string', id: 1 },
            visibility_timeout_seconds: { type: 'uint32', id: 2, options: { proto3_optional: true } },
            consumer_group: { type: 'string', id: 3 },
          },
        },
        DequeueResponse: {
          oneofs: { _key: { oneof: ['key'] } },
          fields: {
            id: { type: 'string', id: 1 },
            topic: { type: 'string', id: 2 },
            payload: { type: 'bytes', id: 3 },
            metadata: { keyType: 'string', type: 'string', id: 4 },
            created_at: { type: 'google.protobuf.Timestamp', id: 5 },
            retry_count: { type: 'int32', id: 6 },
            max_retries: { type: 'int32', id: 7 },
            key: { type: 'string', id: 8, options: { proto3_optional: true } },
          },
        },
        BatchDequeueRequest: {
          oneofs: { _visibility_timeout_seconds: { oneof: ['visibility_timeout_seconds'] } },
          fields: {
            topic: { type: 'string', id: 1 },
            count: { type: 'uint32', id: 2 },
            visibility_timeout_seconds: { type: 'uint32', id: 3, options: { proto3_optional: true } },
            consumer_group: { type: 'string', id: 4 },
          },
        },
        BatchDequeueResponse: { fields: { messages: { rule: 'repeated', type: 'DequeueResponse', id: 1 } } },
        AckRequest: { fields: { id: { type: 'string', id: 1 }, consumer_group: { type: 'string', id: 2 } } },
        AckResponse: { fields: {} },
        NackRequest: { fields: { id: { type: 'string', id: 1 }, error: { type: 'string', id: 2 }, consumer_group: { type: 'string', id: 3 } } },
        NackResponse: { fields: {} },
        SubscribeRequest: {
          oneofs: { _visibility_timeout_seconds: { oneof: ['visibility_timeout_seconds'] } },
          fields: {
            topic: { type: 'string', id: 1 },
            visibility_timeout_seconds: { type: 'uint32', id: 2, options: { proto3_optional: true } },
            consumer_group: { type: 'string', id: 3 },
          },
        },
        SubscribeResponse: {
          fields: {
            id: { type: 'string', id: 1 },
            topic: { type: 'string', id: 2 },
            payload: { type: 'bytes', id: 3 },
            metadata: { keyType: 'string', type: 'string', id: 4 },
            created_at: { type: 'google.protobuf.Timestamp', id: 5 },
            retry_count: { type: 'int32', id: 6 },
          },
        },
        EnqueueBatchRequest: { fields: { requests: { rule: 'repeated', type: 'EnqueueRequest', id: 1 } } },
        EnqueueBatchResponse: { fields: { ids: { rule: 'repeated', type: 'string', id: 1 } } },
        AckBatchRequest: { fields: { ids: { rule: 'repeated', type: 'string', id: 1 }, consumer_group: { type: 'string', id: 2 } } },
        AckBatchResponse: { fields: { acked: { rule: 'repeated', type: 'string', id: 1 }, not_found: { rule: 'repeated', type: 'string', id: 2 } } },
      },
    },
  },
});

const type = (name: string) => CONTRACT.lookupType(`queue.${name}`);
const toObject = (t: protobuf.Type, m: protobuf.Message) => t.toObject(m, { longs: Number, bytes: Buffer, defaults: false });

class ContractClient {
  private readonly client: grpc.Client;
  constructor(port: number) {
    this.client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  }

  unary(method: string, requestType: string, responseType: string, request: object): Promise<any> {
    const req = type(requestType);
    const res = type(responseType);
    return new Promise((resolve, reject) =>
      this.client.makeUnaryRequest(
        `/queue.QueueService/${method}`,
        (value: object) => Buffer.from(req.encode(req.fromObject(value)).finish()),
        (bytes: Buffer) => toObject(res, res.decode(bytes)),
        request,
        (err, response) => (err ? reject(err) : resolve(response)),
      ),
    );
  }

  subscribe(request: object): grpc.ClientReadableStream<any> {
    const req = type('SubscribeRequest');
    const res = type('SubscribeResponse');
    return this.client.makeServerStreamRequest(
      '/queue.QueueService/Subscribe',
      (value: object) => Buffer.from(req.encode(req.fromObject(value)).finish()),
      (bytes: Buffer) => toObject(res, res.decode(bytes)),
      request,
    );
  }

  close(): void {
    this.client.close();
  }
}

describeEachEngine('gRPC wire compatibility with contract §9', (engine) => {
  let server: TestServer;
  let client: ContractClient;
  beforeAll(async () => {
    server = await startTestServer(engine);
    client = new ContractClient(server.server.grpcPort);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it('Enqueue, Dequeue, Nack, BatchDequeue and Ack speak the contract\'s field numbers', async () => {
    const before = Date.now();
    const { id } = await client.unary('Enqueue', 'EnqueueRequest', 'EnqueueResponse', {
      topic: 'wire',
      payload: Buffer.from('hello'),
      metadata: { a: 'b' },
      key: 'k',
    });
    expect(id).toMatch(/^[0-9a-f-]{36}$/);

    const m = await client.unary('Dequeue', 'DequeueRequest', 'DequeueResponse', { topic: 'wire', visibility_timeout_seconds: 30 });
    expect(m).toMatchObject({ id, topic: 'wire', metadata: { a: 'b' }, max_retries: 3, key: 'k' });
    expect(m.payload.toString()).toBe('hello');
    expect(m.retry_count ?? 0).toBe(0);
    expect(m.created_at.seconds * 1000 + (m.created_at.nanos ?? 0) / 1e6).toBeGreaterThanOrEqual(before - 5);

    expect(await client.unary('Nack', 'NackRequest', 'NackResponse', { id, error: 'once more' })).toEqual({});
    const batch = await client.unary('BatchDequeue', 'BatchDequeueRequest', 'BatchDequeueResponse', { topic: 'wire', count: 5 });
    expect(batch.messages).toHaveLength(1);
    expect(batch.messages[0]).toMatchObject({ id, retry_count: 1 });
    expect(await client.unary('Ack', 'AckRequest', 'AckResponse', { id })).toEqual({});
    expect((await server.api.get('/api/messages?topic=wire')).body.total).toBe(0);
  });

  it('leaves optional key (field 8) off the wire when the message has none', async () => {
    await client.unary('Enqueue', 'EnqueueRequest', 'EnqueueResponse', { topic: 'wire-nokey', payload: Buffer.from('x') });
    const m = await client.unary('Dequeue', 'DequeueRequest', 'DequeueResponse', { topic: 'wire-nokey' });
    expect(Object.hasOwn(m, 'key')).toBe(false);
  });

  it('Subscribe streams SubscribeResponse with the contract\'s fields', async () => {
    const { id } = await client.unary('Enqueue', 'EnqueueRequest', 'EnqueueResponse', { topic: 'wire-sub', payload: Buffer.from('pushed'), metadata: { x: 'y' } });
    const stream = client.subscribe({ topic: 'wire-sub' });
    const first = await new Promise<any>((resolve, reject) => {
      stream.once('data', resolve);
      stream.once('error', reject);
    });
    stream.on('error', () => {});
    stream.cancel();
    expect(first).toMatchObject({ id, topic: 'wire-sub', metadata: { x: 'y' } });
    expect(first.payload.toString()).toBe('pushed');
    expect(first.created_at.seconds).toBeGreaterThan(0);
  });

  it('EnqueueBatch and AckBatch extensions use their documented field numbers', async () => {
    const { ids } = await client.unary('EnqueueBatch', 'EnqueueBatchRequest', 'EnqueueBatchResponse', {
      requests: [1, 2].map((i) => ({ topic: 'wire-batch', payload: Buffer.from(`${i}`) })),
    });
    expect(ids).toHaveLength(2);
    await client.unary('BatchDequeue', 'BatchDequeueRequest', 'BatchDequeueResponse', { topic: 'wire-batch', count: 1 });
    const result = await client.unary('AckBatch', 'AckBatchRequest', 'AckBatchResponse', { ids });
    expect(result).toEqual({ acked: [ids[0]], not_found: [ids[1]] });
  });
});
