import { connect as http2Connect } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createUser, signToken, startAuthServer, type AuthServer, type TestUser } from './helpers/auth.js';
import { describeEachEngine } from './helpers/engines.js';
import { expectGrpcError, QueueClient, StreamRecorder } from './helpers/grpc.js';

const UNKNOWN_ID = '01900000-0000-7000-8000-000000000000';

describeEachEngine('gRPC authentication and grants', (engine) => {
  let server: AuthServer;
  let anonymous: QueueClient;
  let writer: TestUser;
  let reader: TestUser;
  const clients: QueueClient[] = [];
  const as = (token?: string) => {
    const client = new QueueClient(server.server.grpcPort, token);
    clients.push(client);
    return client;
  };
  const endOf = async (client: QueueClient, request: object) => {
    const rec = new StreamRecorder(client.subscribe(request));
    await rec.until(() => rec.ended !== undefined, 5000, 'the stream to end');
    return rec.ended!;
  };

  beforeAll(async () => {
    server = await startAuthServer(engine);
    writer = await createUser(server, ['write:orders*']);
    reader = await createUser(server, ['read:orders*']);
    anonymous = as();
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await server?.close();
  });

  it('refuses every unary call without a token with UNAUTHENTICATED', async () => {
    const calls: Array<[string, object]> = [
      ['Enqueue', { topic: 'orders', payload: Buffer.from('x') }],
      ['EnqueueBatch', { requests: [{ topic: 'orders', payload: Buffer.from('x') }] }],
      ['EnqueueBatch', { requests: [] }],
      ['Dequeue', { topic: 'orders' }],
      ['BatchDequeue', { topic: 'orders', count: 1 }],
      ['Ack', { id: UNKNOWN_ID }],
      ['Nack', { id: UNKNOWN_ID }],
      ['AckBatch', { ids: [UNKNOWN_ID] }],
      ['AckBatch', { ids: [] }],
    ];
    for (const [method, request] of calls) {
      await expectGrpcError(anonymous.call(method, request), status.UNAUTHENTICATED, /^missing authorization header$/);
    }
  });

  it('refuses a bad, forged or wrongly prefixed token with UNAUTHENTICATED', async () => {
    await expectGrpcError(as('not-a-jwt').call('Enqueue', { topic: 'orders', payload: Buffer.from('x') }), status.UNAUTHENTICATED, /^invalid or expired token$/);
    const forged = await signToken({ uid: writer.id, sub: writer.username }, { secret: 'another-secret-that-is-32-bytes-or-more!' });
    await expectGrpcError(as(forged).call('Enqueue', { topic: 'orders', payload: Buffer.from('x') }), status.UNAUTHENTICATED);
    const client = as();
    const metadata = client.metadata();
    metadata.set('authorization', writer.token);
    await expectGrpcError(client.call('Enqueue', { topic: 'orders', payload: Buffer.from('x') }, metadata), status.UNAUTHENTICATED);
  });

  it('ends a Subscribe without a valid token with UNAUTHENTICATED', async () => {
    expect((await endOf(anonymous, { topic: 'orders' })).code).toBe(status.UNAUTHENTICATED);
    expect((await endOf(as('junk'), { topic: 'orders' })).code).toBe(status.UNAUTHENTICATED);
  });

  it('answers a request it refuses before any grant (bad bytes, a bad Subscribe) UNAUTHENTICATED without a token, as HTTP answers 401 before 400', async () => {
    const refused = async (client: QueueClient, request: object) => (await endOf(client, request)).details;
    const raw = (b: Buffer) => b;
    const unaryBytes = (client: QueueClient, bytes: Buffer) =>
      new Promise<grpc.ServiceError | null>((resolve) => client.raw.makeUnaryRequest('/queue.QueueService/Enqueue', raw, raw, bytes, client.metadata(), {}, (e) => resolve(e)));
    for (const request of [{ topic: 'bad topic' }, { topic: 'orders', max_in_flight: 5000 }]) {
      expect(await refused(anonymous, request)).toBe('missing authorization header');
      expect(await refused(as('not-a-jwt'), request)).toBe('invalid or expired token');
      expect(await refused(as(writer.token), request)).toMatch(/^(topic must|max_in_flight must)/);
    }
    const garbage = Buffer.from([0x0b]);
    expect((await unaryBytes(anonymous, garbage))?.details).toBe('missing authorization header');
    expect((await unaryBytes(as(writer.token), garbage))?.details).toBe('the request is not a valid queue.EnqueueRequest message');
  });

  it('checks the token before it reads the request: a caller without one is refused before its message has even arrived', async () => {
    // A request whose message never comes: only a server that reads nothing before the token answers at all.
    // (A message read first could be a few KB of gzip that decodes to millions of objects.)
    const refusedBeforeMessage = (path: string, headers: Record<string, string>) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const session = http2Connect(`http://127.0.0.1:${server.server.grpcPort}`);
        session.on('error', reject);
        const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', 'grpc-encoding': 'gzip', ...headers });
        // The status comes as trailers, or, for a call refused before anything was sent, in the response headers.
        const done = (answer: Record<string, unknown>) => {
          if (answer['grpc-status'] === undefined) return;
          stream.close();
          session.close();
          resolve(answer);
        };
        stream.on('response', done);
        stream.on('trailers', done);
        stream.on('error', () => undefined);
        setTimeout(() => reject(new Error(`no answer to ${path} without its message`)), 3000).unref();
      });
    for (const method of ['Enqueue', 'EnqueueBatch', 'Ack', 'Subscribe']) {
      expect(await refusedBeforeMessage(`/queue.QueueService/${method}`, {})).toMatchObject({ 'grpc-status': '16', 'grpc-message': 'missing%20authorization%20header' });
      expect(await refusedBeforeMessage(`/queue.QueueService/${method}`, { authorization: 'Bearer junk' })).toMatchObject({ 'grpc-status': '16' });
    }
    // Health checks need no token.
    const health = new grpc.Client(`127.0.0.1:${server.server.grpcPort}`, grpc.credentials.createInsecure());
    const raw = (b: Buffer) => b;
    const err = await new Promise<grpc.ServiceError | null>((resolve) =>
      health.makeUnaryRequest('/grpc.health.v1.Health/Check', raw, raw, Buffer.alloc(0), new grpc.Metadata(), {}, (e) => resolve(e)),
    );
    health.close();
    expect(err).toBeNull();
  });

  it('lets a write grant enqueue, dequeue, ack and subscribe on matching topics only', async () => {
    const client = as(writer.token);
    const { id } = await client.call('Enqueue', { topic: 'orders-eu', payload: Buffer.from('x') });
    expect((await client.call('Dequeue', { topic: 'orders-eu' })).id).toBe(id);
    await client.call('Ack', { id });
    await expectGrpcError(client.call('Enqueue', { topic: 'payments', payload: Buffer.from('x') }), status.PERMISSION_DENIED, /^insufficient permissions$/);
    await expectGrpcError(client.call('Dequeue', { topic: 'payments' }), status.PERMISSION_DENIED);

    const rec = new StreamRecorder(client.subscribe({ topic: 'orders-live' }));
    const pushed = await client.call('Enqueue', { topic: 'orders-live', payload: Buffer.from('y') });
    await rec.until(() => rec.received.length === 1, 5000, 'the pushed message');
    expect(rec.received[0].id).toBe(pushed.id);
    rec.stream.cancel();
    expect((await endOf(client, { topic: 'payments' })).code).toBe(status.PERMISSION_DENIED);
  });

  it('refuses a batch naming any topic the caller may not write, and enqueues nothing', async () => {
    const client = as(writer.token);
    const requests = [
      { topic: 'orders-batch', payload: Buffer.from('1') },
      { topic: 'payments', payload: Buffer.from('2') },
    ];
    await expectGrpcError(client.call('EnqueueBatch', { requests }), status.PERMISSION_DENIED);
    expect((await server.admin.get('/api/messages?topic=orders-batch')).body.total).toBe(0);
  });

  it('checks Ack, Nack and AckBatch against the topic the message lives in', async () => {
    const admin = as((await createUser(server, [], true)).token);
    const { id } = await admin.call('Enqueue', { topic: 'payments', payload: Buffer.from('x') });
    await admin.call('Dequeue', { topic: 'payments' });
    const client = as(writer.token);
    await expectGrpcError(client.call('Ack', { id }), status.PERMISSION_DENIED);
    await expectGrpcError(client.call('Nack', { id, error: 'no' }), status.PERMISSION_DENIED);
    await expectGrpcError(client.call('AckBatch', { ids: [id] }), status.PERMISSION_DENIED);
    // An unknown id reveals nothing: the usual NOT_FOUND.
    await expectGrpcError(client.call('Ack', { id: UNKNOWN_ID }), status.NOT_FOUND);
    await admin.call('Ack', { id });
  });

  it('acks a streamed delivery on its topic, and needs a grant on the dead-letter topic once the message moved there', async () => {
    expect((await server.admin.put('/api/topic-configs/moved', { max_retries: 1 })).status).toBe(200);
    const client = as((await createUser(server, ['write:moved'])).token);
    const rec = new StreamRecorder(client.subscribe({ topic: 'moved' }));
    const kept = await client.call('Enqueue', { topic: 'moved', payload: Buffer.from('a') });
    await rec.until(() => rec.received.length === 1, 5000, 'the first delivery');
    expect(await client.call('Ack', { id: kept.id })).toEqual({});
    expect((await server.admin.get('/api/messages?topic=moved')).body.total).toBe(0);

    // Delivered to the stream, then moved to the dead-letter topic and claimed there by another instance,
    // which this one does not hear of (no Redis here): its stream still holds the delivery on `moved`.
    const moved = await client.call('Enqueue', { topic: 'moved', payload: Buffer.from('b') });
    await rec.until(() => rec.received.length === 2, 5000, 'the second delivery');
    expect(await server.db('messages').where({ id: moved.id }).update({ topic: 'moved.dlq', original_topic: 'moved' })).toBe(1);
    await expectGrpcError(client.call('Ack', { id: moved.id }), status.PERMISSION_DENIED);
    expect(await server.db('messages').where({ id: moved.id, topic: 'moved.dlq', status: 'processing' }).count({ n: '*' })).toEqual([{ n: 1 }]);
    rec.stream.cancel();
  });

  it('acks a message of a unary Dequeue on its topic, and needs a grant on the dead-letter topic once the message moved there', async () => {
    const client = as((await createUser(server, ['write:unary'])).token);
    for (const text of ['a', 'b']) await client.call('Enqueue', { topic: 'unary', payload: Buffer.from(text) });
    const { messages } = await client.call('BatchDequeue', { topic: 'unary', count: 2 });
    expect(messages).toHaveLength(2);
    const [kept, moved] = messages;
    expect(await client.call('Ack', { id: kept.id })).toEqual({});
    expect(await server.db('messages').where({ id: moved.id }).update({ topic: 'unary.dlq', original_topic: 'unary' })).toBe(1);
    await expectGrpcError(client.call('Ack', { id: moved.id }), status.PERMISSION_DENIED);
    expect(await server.db('messages').where({ id: moved.id, topic: 'unary.dlq', status: 'processing' }).count({ n: '*' })).toEqual([{ n: 1 }]);
  });

  it('AckBatch acks streamed and dequeued deliveries on their topic, and acks nothing when another id lies on a topic the caller may not consume', async () => {
    const admin = as((await createUser(server, [], true)).token);
    const secret = await admin.call('Enqueue', { topic: 'payments', payload: Buffer.from('s') });
    expect((await admin.call('Dequeue', { topic: 'payments' })).id).toBe(secret.id);
    const client = as((await createUser(server, ['write:held'])).token);
    const rec = new StreamRecorder(client.subscribe({ topic: 'held' }));
    const streamed = await client.call('Enqueue', { topic: 'held', payload: Buffer.from('a') });
    await rec.until(() => rec.received.length === 1, 5000, 'the streamed delivery');
    rec.stream.cancel();
    await client.call('Enqueue', { topic: 'held', payload: Buffer.from('b') });
    // The server may not have seen the cancel yet: then 'b' is handed to the closing stream's feed, which gives
    // it back at once (no attempt counted), so a dequeue finds it a moment later.
    let dequeued: any;
    await expect
      .poll(
        async () => {
          [dequeued] = (await client.call('BatchDequeue', { topic: 'held', count: 1 })).messages;
          return dequeued;
        },
        { timeout: 5000, interval: 50 },
      )
      .toBeDefined();
    expect(dequeued.retry_count).toBe(0);
    const processing = async (id: string) => Number((await server.db('messages').where({ id, status: 'processing' }).count({ n: '*' }))[0].n);

    await expectGrpcError(client.call('AckBatch', { ids: [streamed.id, dequeued.id, secret.id] }), status.PERMISSION_DENIED);
    for (const id of [streamed.id, dequeued.id, secret.id]) expect(await processing(id)).toBe(1);

    const reply = await client.call('AckBatch', { ids: [dequeued.id, UNKNOWN_ID, streamed.id, dequeued.id] });
    expect(reply).toEqual({ acked: [dequeued.id, streamed.id, dequeued.id], not_found: [UNKNOWN_ID] });
    for (const id of [streamed.id, dequeued.id]) expect(await processing(id)).toBe(0);
    expect(await client.call('AckBatch', { ids: [dequeued.id] })).toEqual({ acked: [], not_found: [dequeued.id] });
    await expectGrpcError(as('junk').call('AckBatch', { ids: [secret.id] }), status.UNAUTHENTICATED);
    await admin.call('Ack', { id: secret.id });
  });

  it('AckBatch needs a grant on the dead-letter topic for a delivery that moved there, and still acks the others', async () => {
    const client = as((await createUser(server, ['write:batchmove'])).token);
    for (const text of ['a', 'b']) await client.call('Enqueue', { topic: 'batchmove', payload: Buffer.from(text) });
    const [kept, moved] = (await client.call('BatchDequeue', { topic: 'batchmove', count: 2 })).messages;
    expect(await server.db('messages').where({ id: moved.id }).update({ topic: 'batchmove.dlq', original_topic: 'batchmove' })).toBe(1);
    await expectGrpcError(client.call('AckBatch', { ids: [kept.id, moved.id] }), status.PERMISSION_DENIED);
    expect(await server.db('messages').where({ id: moved.id, topic: 'batchmove.dlq', status: 'processing' }).count({ n: '*' })).toEqual([{ n: 1 }]);
    expect(await server.db('messages').where({ id: kept.id }).count({ n: '*' })).toEqual([{ n: 0 }]);
  });

  it('does not let a read grant produce or consume', async () => {
    const client = as(reader.token);
    await expectGrpcError(client.call('Enqueue', { topic: 'orders', payload: Buffer.from('x') }), status.PERMISSION_DENIED);
    await expectGrpcError(client.call('BatchDequeue', { topic: 'orders', count: 1 }), status.PERMISSION_DENIED);
    expect((await endOf(client, { topic: 'orders' })).code).toBe(status.PERMISSION_DENIED);
  });

  it('lets a consume grant dequeue, subscribe and ack with its own group only', async () => {
    expect((await server.admin.post('/api/topics/jobs/consumer-groups', { consumer_group: 'workers' })).status).toBe(201);
    expect((await server.admin.post('/api/topics/jobs/consumer-groups', { consumer_group: 'auditors' })).status).toBe(201);
    const worker = as((await createUser(server, ['consume:jobs:workers'])).token);
    const admin = as((await createUser(server, [], true)).token);
    await expectGrpcError(worker.call('Dequeue', { topic: 'jobs', consumer_group: 'workers' }), status.NOT_FOUND);
    await expectGrpcError(worker.call('Dequeue', { topic: 'jobs', consumer_group: 'auditors' }), status.PERMISSION_DENIED);
    await expectGrpcError(worker.call('Enqueue', { topic: 'jobs', payload: Buffer.from('x') }), status.PERMISSION_DENIED);
    expect((await endOf(worker, { topic: 'jobs', consumer_group: 'auditors' })).code).toBe(status.PERMISSION_DENIED);

    const rec = new StreamRecorder(worker.subscribe({ topic: 'jobs', consumer_group: 'workers' }));
    const { id } = await admin.call('Enqueue', { topic: 'jobs', payload: Buffer.from('job') });
    await rec.until(() => rec.received.length === 1, 5000, "the worker's delivery");
    expect(rec.received[0].id).toBe(id);
    await expectGrpcError(worker.call('Ack', { id, consumer_group: 'auditors' }), status.PERMISSION_DENIED);
    expect(await worker.call('Ack', { id, consumer_group: 'workers' })).toEqual({});
    rec.stream.cancel();
  });

  it('ends an open Subscribe within seconds once its grant is removed, its user deleted or its token expired', async () => {
    // Each stream must deliver first: what ends it later is the re-check, not the check at its start.
    const open = async (client: QueueClient, topic: string) => {
      const rec = new StreamRecorder(client.subscribe({ topic }));
      await admin.call('Enqueue', { topic, payload: Buffer.from('first') });
      await rec.until(() => rec.received.length === 1, 5000, `a delivery on ${topic}`);
      return rec;
    };
    const admin = as((await createUser(server, [], true)).token);
    const revoked = await createUser(server, ['write:revoked']);
    const deleted = await createUser(server, ['write:deleted']);
    const expiring = await createUser(server, ['write:expiring']);
    const shortToken = await signToken({ uid: expiring.id, sub: expiring.username }, { issuedAt: server.now(), expiresInSeconds: 3 });
    const streams = {
      revoked: await open(as(revoked.token), 'revoked'),
      deleted: await open(as(deleted.token), 'deleted'),
      expiring: await open(as(shortToken), 'expiring'),
    };
    const grants = (await server.admin.get(`/api/users/${revoked.id}/grants`)).body.items as Array<{ id: string }>;
    for (const grant of grants) expect((await server.admin.delete(`/api/users/${revoked.id}/grants/${grant.id}`)).status).toBe(204);
    expect((await server.admin.delete(`/api/users/${deleted.id}`)).status).toBe(204);
    const ended = async (rec: StreamRecorder) => {
      await rec.until(() => rec.ended !== undefined, 12_000, 'the stream to end');
      return [rec.ended!.code, rec.ended!.details];
    };
    expect(await ended(streams.revoked)).toEqual([status.PERMISSION_DENIED, 'insufficient permissions']);
    expect(await ended(streams.deleted)).toEqual([status.UNAUTHENTICATED, 'invalid or expired token']);
    expect(await ended(streams.expiring)).toEqual([status.UNAUTHENTICATED, 'invalid or expired token']);
    // Nothing more reached them: a message enqueued now stays for a consumer that may have it.
    const { id } = await admin.call('Enqueue', { topic: 'revoked', payload: Buffer.from('after') });
    expect((await admin.call('Dequeue', { topic: 'revoked' })).id).toBe(id);
  }, 30_000);
});
