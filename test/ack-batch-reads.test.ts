import { afterAll, beforeAll, expect, it } from 'vitest';
import { createUser, startAuthServer, type AuthServer } from './helpers/auth.js';
import { describeEachEngine } from './helpers/engines.js';
import { QueueClient, StreamRecorder } from './helpers/grpc.js';
import type { Api } from './helpers/http.js';
import { captureLogger, type LogLine } from './helpers/log-capture.js';

/**
 * With auth on, an ack is checked against the topic of the message it settles. For the deliveries this
 * instance made (a Subscribe stream's, a group-less dequeue's) a batch ack (gRPC AckBatch, HTTP POST
 * /api/messages/ack) takes that topic from the delivery and settles each message only while it is still
 * there, so it reads no topics first: statements counted in the trace log (one line per query: its shape and
 * how many values it binds).
 */
describeEachEngine('batch acks of deliveries this instance made', (engine) => {
  let server: AuthServer;
  let client: QueueClient;
  const log = captureLogger('trace');
  let api: Api;
  /** The reply of a batch ack of `ids` (`send`) and how many times it read their topics. */
  const counted = async <T>(ids: string[], send: () => Promise<T>) => {
    const from = log.lines.length;
    const reply = await send();
    // A topic read binds exactly the ids; nothing else in the service binds that many values to a SELECT of messages.
    const topicReads = log.lines.slice(from).filter((l: LogLine) => l.source === 'knex' && l.statement === 'select messages' && l.bindings === ids.length);
    return { reply, topicReads: topicReads.length };
  };
  const ackBatch = (ids: string[]) => counted(ids, () => client.call('AckBatch', { ids }));
  const httpAckBatch = (ids: string[]) => counted(ids, async () => (await api.post('/api/messages/ack', { ids })).body);

  beforeAll(async () => {
    server = await startAuthServer(engine, { logger: log.logger });
    const user = await createUser(server, ['write:reads*']);
    client = new QueueClient(server.server.grpcPort, user.token);
    api = user.api;
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it('reads no topic for messages of a BatchDequeue here, and reads them for ids it did not hand out', async () => {
    const enqueued = (await client.call('EnqueueBatch', { requests: Array.from({ length: 7 }, (_, i) => ({ topic: 'reads', payload: Buffer.from(`m${i}`) })) })).ids as string[];
    const dequeued = (await client.call('BatchDequeue', { topic: 'reads', count: 7 })).messages.map((m: { id: string }) => m.id);
    expect(dequeued.sort()).toEqual([...enqueued].sort());
    const held = await ackBatch(dequeued);
    expect(held.reply).toEqual({ acked: dequeued, not_found: [] });
    expect(held.topicReads).toBe(0);

    // The control: the same ids again are held by nobody, so their topics are read (and they are gone).
    const again = await ackBatch(dequeued);
    expect(again.reply).toEqual({ acked: [], not_found: dequeued });
    expect(again.topicReads).toBe(1);
  });

  it('reads no topic for deliveries a Subscribe stream here holds', async () => {
    const rec = new StreamRecorder(client.subscribe({ topic: 'reads-live' }));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await client.call('Enqueue', { topic: 'reads-live', payload: Buffer.from(`s${i}`) })).id);
    await rec.until(() => rec.received.length === 3, 5000, 'three deliveries');
    const held = await ackBatch(ids);
    expect(held.reply).toEqual({ acked: ids, not_found: [] });
    expect(held.topicReads).toBe(0);
    rec.stream.cancel();
  });

  it('reads no topic for messages of an HTTP dequeue here, and reads them for ids it did not hand out', async () => {
    const enqueued = (await api.post('/api/messages/batch', { messages: Array.from({ length: 5 }, (_, i) => ({ topic: 'reads-http', payload: `h${i}` })) })).body.ids as string[];
    const dequeued = (await api.dequeue('reads-http', { count: 5 })).body.messages.map((m: { id: string }) => m.id);
    expect([...dequeued].sort()).toEqual([...enqueued].sort());
    const held = await httpAckBatch(dequeued);
    expect(held.reply).toEqual({ acked: dequeued, not_found: [] });
    expect(held.topicReads).toBe(0);

    const again = await httpAckBatch(dequeued);
    expect(again.reply).toEqual({ acked: [], not_found: dequeued });
    expect(again.topicReads).toBe(1);
  });
});
