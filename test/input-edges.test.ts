import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { expectGrpcError, QueueClient, StreamRecorder } from './helpers/grpc.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Values at the edges of what the API accepts, each once a 500 (some after the message was already stored,
 * so a client's retry would have stored it twice): topic names that mean something to JavaScript, numbers
 * larger than a column, a date or a timer can hold, text outside ASCII compared with ASCII columns, a payload
 * nested deeper than a recursive check can go, metadata larger than a group commit can carry.
 */
describeEachEngine('input at the edges', (engine) => {
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

  it('topics named like EventEmitter events or Object members are topics like any other', async () => {
    for (const topic of ['error', 'newListener', 'removeListener', 'constructor', 'hasOwnProperty']) {
      // Nobody listens for the topic yet: each enqueue signals it all the same.
      const one = await server.api.enqueue(topic, 'one');
      expect(one.status, `${topic}: ${one.text}`).toBe(201);
      const batch = await server.api.post('/api/messages/batch', { messages: [{ topic, payload: 'two' }] });
      expect(batch.status, `${topic}: ${batch.text}`).toBe(201);
      const viaGrpc = await client.call('Enqueue', { topic, payload: Buffer.from('three') });
      const dequeued = await server.api.dequeue(topic, { count: 10 });
      expect(dequeued.body.messages.map((m: { id: string }) => m.id).sort()).toEqual([one.body.id, batch.body.ids[0], viaGrpc.id].sort());
      // A nack with retries left returns the message to pending, which signals the topic again.
      const nacked = await server.api.post(`/api/messages/${one.body.id}/nack`, { error: 'again' });
      expect(nacked.status, `${topic}: ${nacked.text}`).toBe(204);
      // And a stream on the topic is woken by it.
      const stream = new StreamRecorder(client.subscribe({ topic }));
      await stream.until(() => stream.received.length === 1, 5000, `the nacked message on ${topic}`);
      const four = await server.api.enqueue(topic, 'four');
      await stream.until(() => stream.received.length === 2, 5000, `a new message on ${topic}`);
      expect(stream.received.map((m) => m.id)).toEqual([one.body.id, four.body.id]);
      stream.stream.cancel();
    }
  });

  it('topic settings a column, a date or a timer cannot hold are 400, the largest allowed are stored', async () => {
    const cases: Array<[Record<string, number>, string]> = [
      [{ max_retries: 2 ** 31 }, 'max_retries must be at most 2147483647'],
      [{ message_ttl_seconds: 1e13 }, 'message_ttl_seconds must be at most 3153600000'],
      [{ replay_window_seconds: 1e13 }, 'replay_window_seconds must be at most 3153600000'],
    ];
    for (const [body, error] of cases) {
      const res = await server.api.put('/api/topic-configs/edges', body);
      expectErrorBody(res, 400);
      expect(res.body.error).toBe(error);
    }
    const largest = { max_retries: 2 ** 31 - 1, message_ttl_seconds: 3_153_600_000, replayable: true, replay_window_seconds: 3_153_600_000 };
    const put = await server.api.put('/api/topic-configs/edges', largest);
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject(largest);
    const id = (await server.api.enqueue('edges', 'far')).body.id;
    await expect.poll(async () => (await server.api.get('/api/messages?topic=edges')).body.items?.map((m: { id: string }) => m.id)).toEqual([id]);
    const listed = (await server.api.get('/api/messages?topic=edges')).body.items[0];
    expect(Date.parse(listed.expires_at) - Date.parse(listed.created_at)).toBe(3_153_600_000_000);
    expect(listed.max_retries).toBe(2 ** 31 - 1);
    const dequeued = await server.api.dequeue('edges');
    expect((await server.api.post(`/api/messages/${dequeued.body.messages[0].id}/ack`, {})).status).toBe(204);
    const replay = await server.api.post('/api/topics/edges/replay', {});
    expect(replay.status, replay.text).toBe(200);
    expect(replay.body.enqueued).toBe(1);
  });

  it('an offset past any exact integer is an empty page, not a database error', async () => {
    const huge = ['9007199254740993', '9223372036854775808', '18446744073709551616', '9'.repeat(30)];
    await server.api.enqueue('edges-paging', 'x');
    for (const offset of huge) {
      for (const path of [`/api/messages?offset=${offset}`, `/api/audit-log?offset=${offset}`, `/api/topics/edges-paging/message-log?offset=${offset}`]) {
        const res = await server.api.get(path);
        expect(res.status, `${path}: ${res.text}`).toBe(200);
        expect(res.body.items, path).toEqual([]);
        expect(res.body.offset, path).toBe(Number.MAX_SAFE_INTEGER);
      }
    }
  });

  it('the audit log filtered by a name outside ASCII answers, never a collation error', async () => {
    expect((await server.api.put('/api/topic-configs/edges-audit', { max_retries: 4 })).status).toBe(200);
    for (const query of ['actor=Jos%C3%A9', 'actor=%F0%9F%93%A6&topic=edges-audit']) {
      const res = await server.api.get(`/api/audit-log?${query}`);
      expect(res.status, `${query}: ${res.text}`).toBe(200);
      expect(res.body.items, query).toEqual([]);
    }
    const byAnonymous = await server.api.get('/api/audit-log?actor=anonymous&topic=edges-audit');
    expect(byAnonymous.body.items.map((r: { action: string }) => r.action)).toEqual(['topic_config.set']);
  });

  it('a payload nested deeper than a recursive schema can be checked is 422, and nothing is stored', async () => {
    const schema = { type: 'record', name: 'Node', fields: [{ name: 'next', type: ['null', 'Node'] }] };
    expect((await server.api.put('/api/topic-schemas/edges-deep', { schema_json: JSON.stringify(schema) })).status).toBe(200);
    expect((await server.api.enqueue('edges-deep', JSON.stringify({ next: { next: null } }))).status).toBe(201);
    const deep = `${'{"next":'.repeat(50_000)}null${'}'.repeat(50_000)}`;
    const res = await server.api.enqueue('edges-deep', deep);
    expectErrorBody(res, 422);
    expect(res.body.error).toBe('payload does not match the topic schema: the payload nests too deeply to check');
    await expectGrpcError(client.call('Enqueue', { topic: 'edges-deep', payload: Buffer.from(deep) }), status.INVALID_ARGUMENT, /nests too deeply/);
    expect((await server.api.get('/api/messages?topic=edges-deep')).body.total).toBe(1);
  });

  it('metadata is held to 65,536 bytes as JSON: 413 over HTTP, INVALID_ARGUMENT over gRPC, the rest of a batch unharmed', async () => {
    // {"m":"…"} is 8 bytes around the value.
    const fits = { m: 'é'.repeat((65_536 - 8) / 2) };
    const over = { m: `${fits.m}x` };
    expect((await server.api.enqueue('edges-meta', 'p', { metadata: fits })).status).toBe(201);
    const tooLarge = await server.api.enqueue('edges-meta', 'p', { metadata: over });
    expectErrorBody(tooLarge, 413);
    expect(tooLarge.body.error).toBe('metadata exceeds 65536 bytes (as JSON)');
    await expectGrpcError(client.call('Enqueue', { topic: 'edges-meta', payload: Buffer.from('p'), metadata: over }), status.INVALID_ARGUMENT, /metadata exceeds 65536 bytes/);
    // Many messages near the bound in one group commit still fit its statements.
    const near = Array.from({ length: 100 }, () => server.api.enqueue('edges-meta', 'p', { metadata: fits }));
    expect((await Promise.all(near)).map((r) => r.status)).toEqual(Array(100).fill(201));
    expect((await server.api.get('/api/messages?topic=edges-meta&limit=1')).body.total).toBe(101);
  });
});
