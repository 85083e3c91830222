import { createHash, randomBytes } from 'node:crypto';
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListDeadLetterSourceQueuesCommand,
  ListQueuesCommand,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  SQSClient,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createUser, JWT_SECRET, startAuthServer, type AuthServer } from './helpers/auth.js';
import { startTestServer } from './helpers/server.js';
import { describeEachEngine, type TestDatabase } from './helpers/engines.js';
import { QueueClient } from './helpers/grpc.js';

/**
 * The SQS-compatible API (docs/sqs.md) through the real AWS SDK for JavaScript v3, against one running service
 * per engine with authentication on (requests signed with an access key made through the HTTP API). The SDK
 * checks MD5OfMessageBody of every send and receive itself and throws on a mismatch.
 */

const CREDENTIALS_KEY = randomBytes(32).toString('base64');
const ACCOUNT = '000000000000';

/** MD5OfMessageAttributes as the SQS documentation describes it, written apart from src/sqs/digests.ts. */
function expectedAttributesMd5(attributes: Record<string, MessageAttributeValue>): string {
  const parts: Buffer[] = [];
  const field = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    parts.push(length, bytes);
  };
  for (const name of Object.keys(attributes).sort()) {
    const a = attributes[name];
    field(Buffer.from(name));
    field(Buffer.from(a.DataType!));
    if (a.BinaryValue) {
      parts.push(Buffer.from([2]));
      field(Buffer.from(a.BinaryValue));
    } else {
      parts.push(Buffer.from([1]));
      field(Buffer.from(a.StringValue!));
    }
  }
  return createHash('md5').update(Buffer.concat(parts)).digest('hex');
}

const errorOf = async (promise: Promise<unknown>) => {
  try {
    await promise;
  } catch (err) {
    return err as Error & { name: string; Code?: string; $metadata: { httpStatusCode?: number } };
  }
  throw new Error('expected the call to fail');
};

describeEachEngine('SQS-compatible API', (engine) => {
  let server: AuthServer;
  let sqs: SQSClient;
  let key: { access_key_id: string; secret: string };
  let database: TestDatabase;
  const clientWith = (accessKeyId: string, secretAccessKey: string) => new SQSClient({ endpoint: server.url, region: 'eu-west-3', credentials: { accessKeyId, secretAccessKey } });
  const urlOf = (queue: string) => `${server.url}/${ACCOUNT}/${queue}`;
  const create = async (queue: string, Attributes?: Record<string, string>) => (await sqs.send(new CreateQueueCommand({ QueueName: queue, Attributes }))).QueueUrl!;

  beforeAll(async () => {
    database = await engine.createDatabase();
    server = await startAuthServer(engine, { database, overrides: { auth: { credentials_key: CREDENTIALS_KEY } } });
    const created = await server.admin.post(`/api/users/${server.adminId}/access-keys`);
    expect(created.status, created.text).toBe(201);
    key = created.body;
    sqs = clientWith(key.access_key_id, key.secret);
  });
  afterAll(async () => {
    sqs?.destroy();
    await server?.close();
    await database?.drop();
  });

  it('creates, finds, lists (prefix, pages), describes, changes and deletes queues', async () => {
    const url = await create('sqs-life', { DelaySeconds: '0', MessageRetentionPeriod: '3600' });
    expect(url).toBe(urlOf('sqs-life'));
    // The same attributes again answer the existing queue; others are a conflict.
    expect(await create('sqs-life', { MessageRetentionPeriod: '3600' })).toBe(url);
    expect((await errorOf(create('sqs-life', { MessageRetentionPeriod: '7200' }))).name).toBe('QueueNameExists');
    expect((await sqs.send(new GetQueueUrlCommand({ QueueName: 'sqs-life' }))).QueueUrl).toBe(url);
    // A queue is a topic configuration: the HTTP API shows it.
    expect((await server.admin.get('/api/topic-configs/sqs-life')).body).toMatchObject({ message_ttl_seconds: 3600 });

    for (const name of ['sqs-list-a', 'sqs-list-b', 'sqs-list-c']) await create(name);
    const all = await sqs.send(new ListQueuesCommand({ QueueNamePrefix: 'sqs-list-' }));
    expect(all.QueueUrls).toEqual(['sqs-list-a', 'sqs-list-b', 'sqs-list-c'].map(urlOf));
    const first = await sqs.send(new ListQueuesCommand({ QueueNamePrefix: 'sqs-list-', MaxResults: 2 }));
    expect(first.QueueUrls).toEqual(['sqs-list-a', 'sqs-list-b'].map(urlOf));
    const second = await sqs.send(new ListQueuesCommand({ QueueNamePrefix: 'sqs-list-', MaxResults: 2, NextToken: first.NextToken }));
    expect(second.QueueUrls).toEqual([urlOf('sqs-list-c')]);
    expect(second.NextToken).toBeUndefined();

    await sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { DelaySeconds: '5' } }));
    const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
    expect(Attributes).toMatchObject({
      DelaySeconds: '5',
      MessageRetentionPeriod: '3600',
      QueueArn: `arn:aws:sqs:us-east-1:${ACCOUNT}:sqs-life`,
      ApproximateNumberOfMessages: '0',
      ApproximateNumberOfMessagesNotVisible: '0',
      ApproximateNumberOfMessagesDelayed: '0',
    });
    expect(Math.abs(Number(Attributes!.CreatedTimestamp) - Date.now() / 1000)).toBeLessThan(120);
    expect((await errorOf(sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['NoSuchAttribute' as any] })))).name).toBe('InvalidAttributeName');
    const bad = await errorOf(sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { DelaySeconds: 'soon' } })));
    expect([bad.name, bad.$metadata.httpStatusCode]).toEqual(['InvalidAttributeValue', 400]);

    await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
    const gone = await errorOf(sqs.send(new GetQueueUrlCommand({ QueueName: 'sqs-life' })));
    expect([gone.name, gone.$metadata.httpStatusCode]).toEqual(['QueueDoesNotExist', 400]);
    expect((await errorOf(sqs.send(new SendMessageCommand({ QueueUrl: urlOf('sqs-never'), MessageBody: 'x' })))).name).toBe('QueueDoesNotExist');
  });

  it('sends and receives with attributes, system attributes and the digests the SDK verifies; deletes by receipt handle', async () => {
    const url = await create('sqs-basic');
    const attributes: Record<string, MessageAttributeValue> = {
      kind: { DataType: 'String', StringValue: 'order' },
      amount: { DataType: 'Number', StringValue: '42.5' },
      blob: { DataType: 'Binary', BinaryValue: new Uint8Array([0, 1, 2, 250]) },
      'custom.tag': { DataType: 'String.label', StringValue: 'ünïcode' },
    };
    const sent = await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'héllo {"n":1}', MessageAttributes: attributes }));
    expect(sent.MD5OfMessageAttributes).toBe(expectedAttributesMd5(attributes));

    const received = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'], MessageSystemAttributeNames: ['All'], VisibilityTimeout: 1 }),
    );
    expect(received.Messages).toHaveLength(1);
    const [message] = received.Messages!;
    expect(message.MessageId).toBe(sent.MessageId);
    expect(message.Body).toBe('héllo {"n":1}');
    expect(message.MessageAttributes).toEqual(attributes);
    expect(message.MD5OfMessageAttributes).toBe(sent.MD5OfMessageAttributes);
    expect(message.Attributes).toMatchObject({ ApproximateReceiveCount: '1' });
    expect(Math.abs(Number(message.Attributes!.SentTimestamp) - Date.now())).toBeLessThan(60_000);
    // The visibility timeout runs out and the message is received again: only the attributes asked for, and their digest.
    await new Promise((resolve) => setTimeout(resolve, 1300));
    const again = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MessageAttributeNames: ['kind'], AttributeNames: ['ApproximateReceiveCount'], VisibilityTimeout: 60 }));
    expect(again.Messages![0].Attributes).toEqual({ ApproximateReceiveCount: '2' });
    expect(again.Messages![0].MessageAttributes).toEqual({ kind: attributes.kind });
    expect(again.Messages![0].MD5OfMessageAttributes).toBe(expectedAttributesMd5({ kind: attributes.kind }));
    expect(again.Messages![0].ReceiptHandle).not.toBe(message.ReceiptHandle);

    // The first receipt is stale now: a visibility change is refused, a delete deletes nothing.
    const stale = await errorOf(sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: message.ReceiptHandle, VisibilityTimeout: 30 })));
    expect(stale.name).toBe('MessageNotInflight');
    await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: message.ReceiptHandle }));
    expect((await server.admin.get('/api/messages?topic=sqs-basic')).body.items.map((m: any) => m.status)).toEqual(['processing']);
    // The current one moves the claim (a heartbeat) and stays valid.
    await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: again.Messages![0].ReceiptHandle, VisibilityTimeout: 120 }));
    // A tampered or made-up handle is refused.
    const [body, signature] = again.Messages![0].ReceiptHandle!.split('.');
    const forged = `${Buffer.from(Buffer.from(body, 'base64url').toString().replace(/"r":\d+/, '"r":7')).toString('base64url')}.${signature}`;
    for (const handle of [forged, 'not-a-handle']) {
      expect((await errorOf(sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: handle })))).name).toBe('ReceiptHandleIsInvalid');
    }
    // Given back at once and received again: the second handle is stale too, the receives are counted.
    await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: again.Messages![0].ReceiptHandle, VisibilityTimeout: 0 }));
    const third = (await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MessageSystemAttributeNames: ['ApproximateReceiveCount', 'ApproximateFirstReceiveTimestamp'] }))).Messages![0];
    expect(third.Attributes).toEqual({ ApproximateReceiveCount: '3', ApproximateFirstReceiveTimestamp: message.Attributes!.ApproximateFirstReceiveTimestamp });
    expect((await errorOf(sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: again.Messages![0].ReceiptHandle, VisibilityTimeout: 30 })))).name).toBe('MessageNotInflight');
    await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: again.Messages![0].ReceiptHandle }));
    expect((await server.admin.get('/api/messages?topic=sqs-basic')).body.total).toBe(1);
    await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: third.ReceiptHandle }));
    expect((await server.admin.get('/api/messages?topic=sqs-basic')).body.total).toBe(0);
  });

  it('batches: send, delete and change visibility of up to 10, with per-entry failures and the batch limits', async () => {
    const url = await create('sqs-batch');
    const entries = Array.from({ length: 10 }, (_, i) => ({ Id: `m${i}`, MessageBody: `body ${i}` }));
    const sent = await sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries }));
    expect(sent.Successful!.map((s) => s.Id).sort()).toEqual(entries.map((e) => e.Id).sort());
    expect(sent.Failed ?? []).toEqual([]);
    const partly = await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: url, Entries: [{ Id: 'ok', MessageBody: 'fine' }, { Id: 'bad', MessageBody: 'x', MessageAttributes: { 'AWS.x': { DataType: 'String', StringValue: 'y' } } }] }),
    );
    expect(partly.Successful!.map((s) => s.Id)).toEqual(['ok']);
    expect(partly.Failed).toEqual([expect.objectContaining({ Id: 'bad', SenderFault: true, Code: 'InvalidParameterValue' })]);

    const tooMany = await errorOf(sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: [...entries, { Id: 'm10', MessageBody: 'x' }] })));
    expect(tooMany.name).toBe('TooManyEntriesInBatchRequest');
    expect((await errorOf(sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: [] })))).name).toBe('EmptyBatchRequest');
    expect((await errorOf(sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: [entries[0], entries[0]] })))).name).toBe('BatchEntryIdsNotDistinct');
    expect((await errorOf(sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: [{ Id: 'no spaces', MessageBody: 'x' }] })))).name).toBe('InvalidBatchEntryId');
    expect((await errorOf(sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 11 })))).name).toBe('InvalidParameterValue');

    const received = (await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 60 }))).Messages!;
    expect(received).toHaveLength(10);
    const visibility = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: [{ Id: 'a', ReceiptHandle: received[0].ReceiptHandle, VisibilityTimeout: 0 }, { Id: 'b', ReceiptHandle: 'garbage', VisibilityTimeout: 0 }] }),
    );
    expect(visibility.Successful).toEqual([{ Id: 'a' }]);
    expect(visibility.Failed).toEqual([expect.objectContaining({ Id: 'b', Code: 'ReceiptHandleIsInvalid' })]);
    const deleted = await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: received.slice(1).map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })) }));
    expect(deleted.Successful).toHaveLength(9);
    const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }));
    expect(Attributes).toEqual({ ApproximateNumberOfMessages: '2', ApproximateNumberOfMessagesNotVisible: '0' });
    await sqs.send(new PurgeQueueCommand({ QueueUrl: url }));
    expect((await server.admin.get('/api/messages?topic=sqs-batch')).body.total).toBe(0);
  });

  it('long polling is woken by a SendMessage; DelaySeconds holds a message back', async () => {
    const url = await create('sqs-wait');
    const waiting = sqs.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 20 }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'wake up' }));
    const started = Date.now();
    expect((await waiting).Messages!.map((m) => m.Body)).toEqual(['wake up']);
    expect(Date.now() - started).toBeLessThan(15_000);

    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'later', DelaySeconds: 1 }));
    const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessagesDelayed'] }));
    expect(Attributes).toEqual({ ApproximateNumberOfMessagesDelayed: '1' });
    expect((await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }))).Messages ?? []).toEqual([]);
    const later = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 5 }));
    expect(later.Messages!.map((m) => m.Body)).toEqual(['later']);
    expect((await errorOf(sqs.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 21 })))).name).toBe('InvalidParameterValue');
  });

  it('redrives into <queue>.dlq after maxReceiveCount; only that target is allowed', async () => {
    const url = await create('sqs-redrive', { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: `arn:aws:sqs:us-east-1:${ACCOUNT}:sqs-redrive.dlq`, maxReceiveCount: 1 }) });
    const other = await errorOf(create('sqs-redrive2', { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: `arn:aws:sqs:us-east-1:${ACCOUNT}:elsewhere`, maxReceiveCount: 1 }) }));
    expect([other.name, other.message]).toEqual(['InvalidAttributeValue', expect.stringContaining('sqs-redrive2.dlq')]);
    expect((await server.admin.get('/api/topic-configs/sqs-redrive')).body).toMatchObject({ max_retries: 1 });
    const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['RedrivePolicy'] }));
    expect(JSON.parse(Attributes!.RedrivePolicy!)).toEqual({ deadLetterTargetArn: `arn:aws:sqs:us-east-1:${ACCOUNT}:sqs-redrive.dlq`, maxReceiveCount: 1 });

    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'poison' }));
    expect((await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, VisibilityTimeout: 1 }))).Messages).toHaveLength(1);
    // The visibility timeout runs out: the failed attempt reaches maxReceiveCount and the message moves.
    await new Promise((resolve) => setTimeout(resolve, 1300));
    expect((await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }))).Messages ?? []).toEqual([]);
    const dlqUrl = (await sqs.send(new GetQueueUrlCommand({ QueueName: 'sqs-redrive.dlq' }))).QueueUrl!;
    const dead = await sqs.send(new ReceiveMessageCommand({ QueueUrl: dlqUrl, WaitTimeSeconds: 2 }));
    expect(dead.Messages!.map((m) => m.Body)).toEqual(['poison']);
    expect((await sqs.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: dlqUrl }))).queueUrls).toEqual([url]);
  });

  it('FIFO queues: order per MessageGroupId, deduplication by id and by content', async () => {
    expect((await errorOf(create('sqs-order.fifo'))).name).toBe('InvalidParameterValue');
    const url = await create('sqs-order.fifo', { FifoQueue: 'true', ContentBasedDeduplication: 'true' });
    const ids: Record<string, string> = {};
    for (const [group, body] of [['a', 'a1'], ['b', 'b1'], ['a', 'a2'], ['a', 'a3'], ['b', 'b2']]) {
      const sent = await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body, MessageGroupId: group }));
      expect(sent.SequenceNumber).toMatch(/^\d{20,}$/);
      ids[body] = sent.MessageId!;
    }
    // Duplicates: the same content, and the same explicit deduplication id (even with another body).
    expect((await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'a1', MessageGroupId: 'a' }))).MessageId).toBe(ids.a1);
    const firstC = await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'c1', MessageGroupId: 'c', MessageDeduplicationId: 'dedup-c' }));
    const dupC = await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'c1 again', MessageGroupId: 'c', MessageDeduplicationId: 'dedup-c' }));
    expect(dupC.MessageId).toBe(firstC.MessageId);
    expect((await errorOf(sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'no group' })))).name).toBe('MissingParameter');

    const seen: Record<string, string[]> = {};
    for (let round = 0; round < 10; round++) {
      const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['MessageGroupId', 'MessageDeduplicationId'] }));
      if (Messages.length === 0 && Object.values(seen).flat().length === 6) break;
      for (const m of Messages) {
        if (m.Body === 'c1') expect(m.Attributes!.MessageDeduplicationId).toBe('dedup-c');
        (seen[m.Attributes!.MessageGroupId!] ??= []).push(m.Body!);
        await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
      }
    }
    expect(seen).toEqual({ a: ['a1', 'a2', 'a3'], b: ['b1', 'b2'], c: ['c1'] });
    // Within 5 minutes, a deduplication id holds after its message was deleted too: nothing new is stored.
    expect((await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'c2', MessageGroupId: 'c', MessageDeduplicationId: 'dedup-c' }))).MessageId).toBe(firstC.MessageId);
    expect((await server.admin.get('/api/messages?topic=sqs-order.fifo')).body.total).toBe(0);
  });

  it('VisibilityTimeout and ReceiveMessageWaitTimeSeconds are per queue: the defaults of a ReceiveMessage that names neither', async () => {
    const url = await create('sqs-defaults', { VisibilityTimeout: '600', ReceiveMessageWaitTimeSeconds: '10' });
    const attributes = async () => (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['VisibilityTimeout', 'ReceiveMessageWaitTimeSeconds'] }))).Attributes;
    expect(await attributes()).toEqual({ VisibilityTimeout: '600', ReceiveMessageWaitTimeSeconds: '10' });
    expect((await server.admin.get('/api/topic-configs/sqs-defaults')).body).toMatchObject({ visibility_timeout_seconds: 600, receive_wait_seconds: 10 });
    // The receive waits (10 s, the queue's) for a message sent after it started, and claims it for 600 s.
    const waiting = sqs.send(new ReceiveMessageCommand({ QueueUrl: url }));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const sent = await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'late' }));
    expect((await waiting).Messages!.map((m) => m.MessageId)).toEqual([sent.MessageId]);
    const listed = (await server.admin.get('/api/messages?topic=sqs-defaults')).body.items[0];
    expect(Date.parse(listed.available_at) - Date.now()).toBeGreaterThan(500_000);

    await sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { VisibilityTimeout: '45', ReceiveMessageWaitTimeSeconds: '0' } }));
    expect(await attributes()).toEqual({ VisibilityTimeout: '45', ReceiveMessageWaitTimeSeconds: '0' });
    for (const Attributes of [{ VisibilityTimeout: '43201' }, { ReceiveMessageWaitTimeSeconds: '21' }]) {
      expect((await errorOf(sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes })))).name).toBe('InvalidAttributeValue');
    }
    // Unset, the server's queue.visibility_timeout.
    expect((await sqs.send(new GetQueueAttributesCommand({ QueueUrl: await create('sqs-plain'), AttributeNames: ['VisibilityTimeout'] }))).Attributes).toEqual({ VisibilityTimeout: '30' });
  });

  it('ContentBasedDeduplication: off by default on a new FIFO queue (a send then needs a MessageDeduplicationId), settable', async () => {
    const url = await create('sqs-dedup.fifo', { FifoQueue: 'true' });
    const cbd = async () => (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ContentBasedDeduplication'] }))).Attributes!.ContentBasedDeduplication;
    expect(await cbd()).toBe('false');
    expect(await create('sqs-dedup.fifo', { FifoQueue: 'true' })).toBe(url);
    const refused = await errorOf(sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x', MessageGroupId: 'g' })));
    expect([refused.name, refused.message, refused.$metadata.httpStatusCode]).toEqual([
      'InvalidParameterValue',
      'The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly',
      400,
    ]);
    expect((await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x', MessageGroupId: 'g', MessageDeduplicationId: 'd1' }))).MessageId).toBeDefined();

    await sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { ContentBasedDeduplication: 'true' } }));
    expect(await cbd()).toBe('true');
    const first = await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'same', MessageGroupId: 'g' }));
    expect((await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'same', MessageGroupId: 'g' }))).MessageId).toBe(first.MessageId);
    expect((await errorOf(sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { ContentBasedDeduplication: 'maybe' } })))).name).toBe('InvalidAttributeValue');
    expect((await errorOf(create('sqs-not-fifo', { ContentBasedDeduplication: 'true' }))).name).toBe('InvalidAttributeValue');
  });

  it('messages cross transports: SQS to HTTP and gRPC, HTTP to SQS', async () => {
    const url = await create('sqs-cross');
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'to http', MessageAttributes: { source: { DataType: 'String', StringValue: 'sqs' } } }));
    const http = await server.admin.dequeue('sqs-cross');
    expect(http.body.messages).toEqual([expect.objectContaining({ payload: 'to http', metadata: { source: 'sqs' } })]);
    await server.admin.post(`/api/messages/${http.body.messages[0].id}/ack`);

    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'to grpc' }));
    const grpc = new QueueClient(server.server.grpcPort, `${key.access_key_id}.${key.secret}`);
    try {
      const dequeued = await grpc.call('BatchDequeue', { topic: 'sqs-cross', count: 10 });
      expect(dequeued.messages.map((m: any) => Buffer.from(m.payload).toString())).toEqual(['to grpc']);
      await grpc.call('Ack', { id: dequeued.messages[0].id });
      // And the other way: a gRPC enqueue received through SQS, its metadata as attributes.
      await grpc.call('Enqueue', { topic: 'sqs-cross', payload: Buffer.from('from grpc'), metadata: { origin: 'grpc' } });
      const fromGrpc = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MessageAttributeNames: ['All'] }));
      expect(fromGrpc.Messages!.map((m) => [m.Body, m.MessageAttributes])).toEqual([['from grpc', { origin: { DataType: 'String', StringValue: 'grpc' } }]]);
      await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: fromGrpc.Messages![0].ReceiptHandle }));
    } finally {
      grpc.close();
    }

    expect((await server.admin.enqueue('sqs-cross', 'from http', { metadata: { origin: 'curl' } })).status).toBe(201);
    const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MessageAttributeNames: ['All'] }));
    expect(received.Messages!.map((m) => [m.Body, m.MessageAttributes])).toEqual([['from http', { origin: { DataType: 'String', StringValue: 'curl' } }]]);
  });

  it('verifies signatures and applies the key user’s grants', async () => {
    await create('sqs-auth');
    const wrong = clientWith(key.access_key_id, 'x'.repeat(40));
    const signature = await errorOf(wrong.send(new ListQueuesCommand({})));
    expect([signature.name, signature.$metadata.httpStatusCode]).toEqual(['SignatureDoesNotMatch', 403]);
    const unknown = clientWith('CVAKAAAAAAAAAAAAAAAA', 'x'.repeat(40));
    expect((await errorOf(unknown.send(new ListQueuesCommand({})))).name).toBe('InvalidClientTokenId');
    wrong.destroy();
    unknown.destroy();

    const producer = await createUser(server, ['write:sqs-auth', 'read:sqs-auth']);
    const producerKey = (await server.admin.post(`/api/users/${producer.id}/access-keys`)).body;
    const asProducer = clientWith(producerKey.access_key_id, producerKey.secret);
    try {
      await asProducer.send(new SendMessageCommand({ QueueUrl: urlOf('sqs-auth'), MessageBody: 'allowed' }));
      expect((await asProducer.send(new ReceiveMessageCommand({ QueueUrl: urlOf('sqs-auth') }))).Messages).toHaveLength(1);
      expect((await asProducer.send(new ListQueuesCommand({}))).QueueUrls).toEqual([urlOf('sqs-auth')]);
      const denied = await errorOf(asProducer.send(new CreateQueueCommand({ QueueName: 'sqs-auth-other' })));
      expect([denied.name, denied.$metadata.httpStatusCode]).toEqual(['AccessDenied', 403]);
      expect((await errorOf(asProducer.send(new SendMessageCommand({ QueueUrl: urlOf('sqs-life'), MessageBody: 'x' })))).name).toBe('AccessDenied');
      expect((await errorOf(asProducer.send(new PurgeQueueCommand({ QueueUrl: urlOf('sqs-auth') })))).name).toBe('AccessDenied');
    } finally {
      asProducer.destroy();
    }
    // Audited: queue management is recorded like the HTTP API's.
    const audit = await server.admin.get('/api/audit-log?topic=sqs-auth');
    expect(audit.body.items).toEqual(expect.arrayContaining([expect.objectContaining({ action: 'topic_config.set', result: 'ok', status: 200, details: { sqs_action: 'CreateQueue' } })]));
  });

  it('a receipt handle from one instance is accepted by another on the same database', async () => {
    const url = await create('sqs-instances');
    const second = await startTestServer(engine, { database, overrides: { auth: { enabled: true, jwt_secret: JWT_SECRET, credentials_key: CREDENTIALS_KEY } } });
    const other = new SQSClient({ endpoint: second.url, region: 'us-east-1', credentials: { accessKeyId: key.access_key_id, secretAccessKey: key.secret } });
    try {
      await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'shared' }));
      // The second instance's catalog catches up with the new queue within its refresh interval.
      let received: Awaited<ReturnType<SQSClient['send']>> & { Messages?: Array<{ ReceiptHandle?: string }> } = {} as never;
      for (let i = 0; i < 50 && !received.Messages?.length; i++) {
        received = await other.send(new ReceiveMessageCommand({ QueueUrl: `${second.url}/${ACCOUNT}/sqs-instances`, WaitTimeSeconds: 1 })).catch(() => ({}) as never);
      }
      expect(received.Messages).toHaveLength(1);
      await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: received.Messages![0].ReceiptHandle }));
      expect((await server.admin.get('/api/messages?topic=sqs-instances')).body.total).toBe(0);
    } finally {
      other.destroy();
      await second.close();
    }
  });

  it('answers malformed requests with AWS-style errors', async () => {
    const post = (headers: Record<string, string>, body: string) => fetch(`${server.url}/`, { method: 'POST', headers, body });
    const cases: Array<[Record<string, string>, string, number, string]> = [
      [{ 'content-type': 'application/x-www-form-urlencoded' }, 'Action=ListQueues&Version=2012-11-05', 400, 'InvalidAction'],
      [{ 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.NoSuchAction' }, '{}', 400, 'UnknownOperationException'],
      [{ 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.ListQueues' }, '{}', 403, 'MissingAuthenticationToken'],
      [{ 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.ListQueues', authorization: 'AWS4-HMAC-SHA256 garbage' }, '{', 400, 'IncompleteSignature'],
    ];
    for (const [headers, body, status, code] of cases) {
      const res = await post(headers, body);
      expect(res.status, code).toBe(status);
      expect(await res.json()).toEqual({ __type: `com.amazonaws.sqs#${code}`, message: expect.any(String) });
      expect(res.headers.get('x-amzn-query-error')).toMatch(/;Sender$/);
    }
    const huge = await post({ 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.SendMessage' }, 'x'.repeat(8 * 1024 * 1024));
    expect(huge.status).toBe(413);
    expect((await huge.json()).__type).toBe('com.amazonaws.sqs#RequestEntityTooLarge');
    // The UI and the API are untouched.
    expect((await fetch(`${server.url}/api/version`)).status).toBe(200);
  });
});

describeEachEngine('SQS-compatible API, authentication off', (engine) => {
  let server: Awaited<ReturnType<typeof startTestServer>>;
  let sqs: SQSClient;

  beforeAll(async () => {
    server = await startTestServer(engine);
    // Any signature is accepted, as the rest of the API accepts anyone.
    sqs = new SQSClient({ endpoint: server.url, region: 'us-east-1', credentials: { accessKeyId: 'anything', secretAccessKey: 'whatever' } });
  });
  afterAll(async () => {
    sqs?.destroy();
    await server?.close();
  });

  it('serves every action to any signer, on POST / and on the queue URL path', async () => {
    const url = (await sqs.send(new CreateQueueCommand({ QueueName: 'open-q' }))).QueueUrl!;
    expect(url).toBe(`${server.url}/${ACCOUNT}/open-q`);
    await sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: [{ Id: '1', MessageBody: 'one' }, { Id: '2', MessageBody: 'two' }] }));
    const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }));
    expect(Messages.map((m) => m.Body).sort()).toEqual(['one', 'two']);
    await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })) }));

    // A request on the queue URL's path, as some SDKs send them, with no QueueUrl in the body.
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.SendMessage' }, body: JSON.stringify({ MessageBody: 'by path' }) });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ MessageId: expect.any(String), MD5OfMessageBody: createHash('md5').update('by path').digest('hex') });
    expect((await server.api.get('/api/messages?topic=open-q')).body.items.map((m: any) => m.payload)).toEqual(['by path']);
    await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
    expect((await sqs.send(new ListQueuesCommand({}))).QueueUrls ?? []).toEqual([]);
  });
});
