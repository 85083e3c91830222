import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { dequeueIds, enqueueId, findMessage, listTopic, RFC3339_MS } from './helpers/messages.js';
import { startTestServer, type TestServer } from './helpers/server.js';

describeEachEngine('dequeue', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('returns one message when count is omitted', async () => {
    const first = await enqueueId(server.api, 'deq-default', 'a');
    await enqueueId(server.api, 'deq-default', 'b');
    expect(await dequeueIds(server.api, 'deq-default')).toEqual([first]);
  });

  it.each([
    ['0', 0],
    ['-1', -1],
    ['1001', 1001],
    ['1.5', 1.5],
    ['the string "2"', '2'],
    ['null', null],
    ['a boolean', true],
  ])('rejects count %s with 400 and claims nothing', async (_what, count) => {
    const id = await enqueueId(server.api, 'deq-bad-count', 'x');
    expectErrorBody(await server.api.dequeue('deq-bad-count', { count }), 400);
    expect((await findMessage(server.api, 'deq-bad-count', id)).status).toBe('pending');
  });

  it('accepts count 1000', async () => {
    const res = await server.api.dequeue('deq-count-max', { count: 1000 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ messages: [] });
  });

  it.each([
    ['0', 0],
    ['-5', -5],
    ['43201', 43_201],
    ['2.5', 2.5],
    ['the string "30"', '30'],
  ])('rejects visibility_timeout_seconds %s with 400', async (_what, visibility_timeout_seconds) => {
    expectErrorBody(await server.api.dequeue('deq-bad-vis', { visibility_timeout_seconds }), 400);
  });

  it.each([1, 43_200])('accepts visibility_timeout_seconds %i', async (visibility_timeout_seconds) => {
    const id = await enqueueId(server.api, `deq-vis-${visibility_timeout_seconds}`, 'x');
    expect(await dequeueIds(server.api, `deq-vis-${visibility_timeout_seconds}`, { visibility_timeout_seconds })).toEqual([id]);
  });

  it('rejects a missing or invalid topic with 400', async () => {
    expectErrorBody(await server.api.post('/api/messages/dequeue', {}), 400);
    expectErrorBody(await server.api.dequeue('a b'), 400);
    expectErrorBody(await server.api.dequeue(''), 400);
  });

  it('hands messages out oldest first, each once', async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await enqueueId(server.api, 'deq-order', `m${i}`));
    const first = await server.api.dequeue('deq-order', { count: 3 });
    expect(first.body.messages.map((m: any) => m.id)).toEqual(ids.slice(0, 3));
    expect(first.body.messages.map((m: any) => m.payload)).toEqual(['m0', 'm1', 'm2']);
    expect(await dequeueIds(server.api, 'deq-order', { count: 10 })).toEqual(ids.slice(3));
    expect(await dequeueIds(server.api, 'deq-order', { count: 10 })).toEqual([]);
  });

  it('returns exactly the dequeue fields', async () => {
    const id = await enqueueId(server.api, 'deq-fields', '{"n":1}', { key: 'k-1', metadata: { source: 'test' } });
    const res = await server.api.dequeue('deq-fields');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['messages']);
    const [message] = res.body.messages;
    expect(Object.keys(message).sort()).toEqual(
      ['available_at', 'created_at', 'id', 'key', 'max_retries', 'metadata', 'ordering_key', 'payload', 'retry_count', 'status', 'topic'].sort(),
    );
    expect(message).toEqual({
      id,
      topic: 'deq-fields',
      key: 'k-1',
      ordering_key: null,
      payload: '{"n":1}',
      metadata: { source: 'test' },
      status: 'processing',
      retry_count: 0,
      max_retries: 3,
      created_at: expect.stringMatching(RFC3339_MS),
      available_at: expect.stringMatching(RFC3339_MS),
    });
    // A dequeue's claim ends after the default visibility timeout (30 s).
    expect(Date.parse(message.available_at) - Date.now()).toBeGreaterThan(25_000);
    expect(message.created_at).toBe((await findMessage(server.api, 'deq-fields', id)).created_at);
  });

  it('returns key null and metadata {} when none were given', async () => {
    await enqueueId(server.api, 'deq-bare', 'x');
    const [message] = (await server.api.dequeue('deq-bare')).body.messages;
    expect(message.key).toBeNull();
    expect(message.metadata).toEqual({});
  });

  it('never blocks: an empty or unknown topic answers 200 with no messages', async () => {
    const res = await server.api.dequeue('deq-never-used', { count: 5 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ messages: [] });
  });

  it('returns fewer than count when fewer are pending', async () => {
    await enqueueId(server.api, 'deq-fewer', 'a');
    await enqueueId(server.api, 'deq-fewer', 'b');
    expect(await dequeueIds(server.api, 'deq-fewer', { count: 50 })).toHaveLength(2);
  });

  it('marks every returned message processing in the list view', async () => {
    const a = await enqueueId(server.api, 'deq-status', 'a');
    const b = await enqueueId(server.api, 'deq-status', 'b');
    const c = await enqueueId(server.api, 'deq-status', 'c');
    await dequeueIds(server.api, 'deq-status', { count: 2 });
    const statuses = Object.fromEntries((await listTopic(server.api, 'deq-status')).map((m) => [m.id, m.status]));
    expect(statuses).toEqual({ [a]: 'processing', [b]: 'processing', [c]: 'pending' });
  });

  it('only takes messages of the requested topic', async () => {
    await enqueueId(server.api, 'deq-other', 'x');
    const mine = await enqueueId(server.api, 'deq-mine', 'y');
    expect(await dequeueIds(server.api, 'deq-mine', { count: 10 })).toEqual([mine]);
    expect((await listTopic(server.api, 'deq-other'))[0].status).toBe('pending');
  });
});
