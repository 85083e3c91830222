import { afterAll, beforeAll, expect, it } from 'vitest';
import { createUser, startAuthServer, type AuthServer } from './helpers/auth.js';
import { describeEachEngine } from './helpers/engines.js';
import { QueueClient, StreamRecorder } from './helpers/grpc.js';
import { captureLogger, type LogLine } from './helpers/log-capture.js';

/**
 * With auth on, an ack is checked against the topic of the message it settles. For the deliveries this
 * instance made (a Subscribe stream's, a group-less BatchDequeue's) an AckBatch takes that topic from the
 * delivery and settles each message only while it is still there, so it reads no topics first: statements
 * counted in the trace log (one line per query: its shape and how many values it binds).
 */
describeEachEngine('AckBatch of deliveries this instance made', (engine) => {
  let server: AuthServer;
  let client: QueueClient;
  const log = captureLogger('trace');
  /** The queries an AckBatch of `ids.length` ids made, by shape, and its reply. */
  const ackBatch = async (ids: string[]) => {
    const from = log.lines.length;
    const reply = await client.call('AckBatch', { ids });
    // A topic read binds exactly the ids; nothing else in the service binds that many values to a SELECT of messages.
    const topicReads = log.lines.slice(from).filter((l: LogLine) => l.source === 'knex' && l.statement === 'select messages' && l.bindings === ids.length);
    return { reply, topicReads: topicReads.length };
  };

  beforeAll(async () => {
    server = await startAuthServer(engine, { logger: log.logger });
    client = new QueueClient(server.server.grpcPort, (await createUser(server, ['write:reads*'])).token);
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
});
