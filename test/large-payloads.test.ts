import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { QueueClient } from './helpers/grpc.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Payloads past 64 KiB come back byte for byte however their enqueues were stored: one at a time, combined by
 * group commit with others, or in a batch. (MariaDB once kept only the first 4,464 bytes of a 70,000-byte
 * payload stored together with others, and answered 201.)
 */
describeEachEngine('large payloads', (engine) => {
  let server: TestServer;
  let client: QueueClient;
  beforeAll(async () => {
    server = await startTestServer(engine);
    client = new QueueClient(server.server.grpcPort);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  const sizes = [65_532, 65_537, 70_000, 131_072, 200_001, 1_048_576];

  /** Every message of `topic`, as topic order gives them: id and payload bytes. */
  async function drain(topic: string, expected: number): Promise<Map<string, Buffer>> {
    const got = new Map<string, Buffer>();
    while (got.size < expected) {
      const { messages } = await client.call('BatchDequeue', { topic, count: 1000 });
      expect(messages.length, `${got.size} of ${expected}`).toBeGreaterThan(0);
      for (const m of messages) got.set(m.id, m.payload);
    }
    return got;
  }

  it('keeps gRPC payloads sent at once (combined by group commit) and in a batch', async () => {
    const single = sizes.map((size) => randomBytes(size));
    const ids = await Promise.all(single.map((payload) => client.call('Enqueue', { topic: 'large-grpc', payload }).then((r) => r.id as string)));
    const batch = sizes.map((size) => randomBytes(size));
    const batched = await client.call('EnqueueBatch', { requests: batch.map((payload) => ({ topic: 'large-grpc', payload })) });
    const got = await drain('large-grpc', sizes.length * 2);
    [...ids, ...batched.ids].forEach((id: string, i: number) => {
      const sent = [...single, ...batch][i];
      expect(got.get(id)?.length, `message ${i}`).toBe(sent.length);
      expect(Buffer.compare(got.get(id)!, sent), `message ${i}`).toBe(0);
    });
  });

  it('reads a payload that is no UTF-8 over HTTP as its base64, flagged by payload_encoding; text as text, unflagged', async () => {
    const binary = Buffer.from([0x00, 0x80, 0xff, 0xc3, 0x28]);
    const text = Buffer.from('héllo \u0000 😀');
    for (const payload of [binary, text]) await client.call('Enqueue', { topic: 'binary-http', payload });
    const listed = (await server.api.get('/api/messages?topic=binary-http')).body.items;
    const dequeued = (await server.api.dequeue('binary-http', { count: 2 })).body.messages;
    for (const items of [listed, dequeued]) {
      expect(items[0]).toMatchObject({ payload: binary.toString('base64'), payload_encoding: 'base64' });
      expect(items[1].payload).toBe(text.toString('utf8'));
      expect(items[1]).not.toHaveProperty('payload_encoding');
    }
  });

  it('runs its MySQL sessions strict, whatever the server\'s sql_mode: nothing is stored cut short', async () => {
    if (engine.name !== 'mysql') return;
    const [rows] = (await server.db.raw('SELECT @@SESSION.sql_mode AS mode, @@GLOBAL.sql_mode AS global')) as [Array<{ mode: string; global: string }>];
    expect(rows[0].mode.split(',')).toContain('STRICT_ALL_TABLES');
    // Every mode the server set stays.
    for (const mode of rows[0].global.split(',').filter(Boolean)) expect(rows[0].mode.split(',')).toContain(mode);
  });

  it('refuses to start where the database cannot carry queue.max_payload_bytes, naming the packet size needed', async () => {
    if (engine.name !== 'mysql') return;
    const [rows] = (await server.db.raw('SELECT @@max_allowed_packet AS packet')) as [Array<{ packet: unknown }>];
    const packet = Number(rows[0].packet);
    // Half the packet: its hex form alone fills it.
    const tooLarge = Math.min(Math.floor(packet / 2), 16_777_215);
    const start = startTestServer(engine, { overrides: { queue: { max_payload_bytes: tooLarge } } });
    await expect(start).rejects.toThrow(`the database's max_allowed_packet (${packet} bytes) is too small for queue.max_payload_bytes ${tooLarge}`);
  });

  it('keeps HTTP payloads sent at once and in a batch', async () => {
    const text = (size: number, seed: number) => Array.from({ length: size }, (_, i) => String.fromCharCode(32 + ((i * 7 + seed) % 90))).join('');
    const single = sizes.map((size, i) => text(size, i));
    const ids = await Promise.all(single.map((payload) => server.api.enqueue('large-http', payload).then((r) => r.body.id as string)));
    const batch = sizes.map((size, i) => text(size, i + 50));
    const batched = await server.api.post('/api/messages/batch', { messages: batch.map((payload) => ({ topic: 'large-http', payload })) });
    expect(batched.status).toBe(201);
    const got = await drain('large-http', sizes.length * 2);
    [...ids, ...batched.body.ids].forEach((id: string, i: number) => {
      expect(got.get(id)?.toString('utf8'), `message ${i}`).toBe([...single, ...batch][i]);
    });
  });
});
