import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { dequeueIds, enqueueId, findMessage, putTopicConfig } from './helpers/messages.js';
import { QueueClient, StreamRecorder } from './helpers/grpc.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const INTEGER_FIELDS = ['max_retries', 'message_ttl_seconds', 'max_depth', 'throughput_limit', 'replay_window_seconds', 'delivery_delay_seconds', 'retry_backoff_seconds', 'retry_backoff_max_seconds', 'visibility_timeout_seconds', 'receive_wait_seconds'] as const;

const unset = (topic: string) => ({
  topic,
  max_retries: null,
  message_ttl_seconds: null,
  max_depth: null,
  throughput_limit: null,
  replayable: false,
  replay_window_seconds: null,
  delivery_delay_seconds: null,
  retry_backoff_seconds: null,
  retry_backoff_max_seconds: null,
  visibility_timeout_seconds: null,
  receive_wait_seconds: null,
  content_based_deduplication: null,
  managed_by: null,
});

describeEachEngine('topic configurations', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  const listed = async (topic: string) => (await server.api.get('/api/topic-configs')).body.items.find((c: any) => c.topic === topic);

  it('stores every field and answers with all of them', async () => {
    const full = {
      max_retries: 5,
      message_ttl_seconds: 3600,
      max_depth: 1000,
      throughput_limit: 50,
      replayable: true,
      replay_window_seconds: 86_400,
      delivery_delay_seconds: 10,
      retry_backoff_seconds: 2,
      retry_backoff_max_seconds: 60,
      visibility_timeout_seconds: 90,
      receive_wait_seconds: 5,
      content_based_deduplication: false,
    };
    const res = await server.api.put('/api/topic-configs/tc-full', full);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ topic: 'tc-full', ...full, managed_by: null });
    expect(await listed('tc-full')).toEqual({ topic: 'tc-full', ...full, managed_by: null });
  });

  it('answers an empty body with every field present: null when unset, replayable false', async () => {
    expect(await putTopicConfig(server.api, 'tc-empty', {})).toEqual(unset('tc-empty'));
    expect(await listed('tc-empty')).toEqual(unset('tc-empty'));
  });

  it('accepts no body at all as an empty configuration', async () => {
    const res = await server.api.put('/api/topic-configs/tc-no-body');
    expect(res.status).toBe(200);
    expect(res.body).toEqual(unset('tc-no-body'));
  });

  it('answers a partial body with the other fields null', async () => {
    expect(await putTopicConfig(server.api, 'tc-partial', { max_depth: 10 })).toEqual({ ...unset('tc-partial'), max_depth: 10 });
  });

  it('reverts an omitted field to the default on the next PUT', async () => {
    await putTopicConfig(server.api, 'tc-omit', { max_retries: 2, throughput_limit: 9, replayable: true });
    expect(await putTopicConfig(server.api, 'tc-omit', { max_retries: 4 })).toEqual({ ...unset('tc-omit'), max_retries: 4 });
    expect(await listed('tc-omit')).toEqual({ ...unset('tc-omit'), max_retries: 4 });
  });

  it('reverts a field sent as null', async () => {
    await putTopicConfig(server.api, 'tc-null', { max_retries: 2, replayable: true, replay_window_seconds: 60 });
    const body = { max_retries: null, message_ttl_seconds: null, max_depth: null, throughput_limit: null, replayable: null, replay_window_seconds: null };
    expect(await putTopicConfig(server.api, 'tc-null', body)).toEqual(unset('tc-null'));
  });

  it('accepts 0 where 0 means something (no retries, no TTL, unlimited)', async () => {
    const zeros = { max_retries: 0, message_ttl_seconds: 0, throughput_limit: 0, replay_window_seconds: 0 };
    expect(await putTopicConfig(server.api, 'tc-zero', zeros)).toEqual({ ...unset('tc-zero'), ...zeros });
  });

  it.each(INTEGER_FIELDS)('rejects a negative %s with 400 and keeps the stored configuration', async (field) => {
    await putTopicConfig(server.api, `tc-neg-${field}`, { max_retries: 1 });
    const res = await server.api.put(`/api/topic-configs/tc-neg-${field}`, { [field]: -1 });
    expectErrorBody(res, 400);
    expect(res.body.error).toContain(field);
    expect(await listed(`tc-neg-${field}`)).toEqual({ ...unset(`tc-neg-${field}`), max_retries: 1 });
  });

  it.each([
    ...INTEGER_FIELDS.flatMap((field) => [
      [`${field} as a string`, { [field]: '5' }],
      [`${field} as a fraction`, { [field]: 2.5 }],
      [`${field} as a boolean`, { [field]: true }],
    ]),
    ['replayable as a string', { replayable: 'true' }],
    ['replayable as a number', { replayable: 1 }],
    ['visibility_timeout_seconds 0', { visibility_timeout_seconds: 0 }],
    ['visibility_timeout_seconds above 43200', { visibility_timeout_seconds: 43_201 }],
    ['receive_wait_seconds above 20', { receive_wait_seconds: 21 }],
    ['content_based_deduplication as a string', { content_based_deduplication: 'true' }],
    ['an array body', [1, 2]],
  ])('rejects %s with 400', async (_what, body) => {
    expectErrorBody(await server.api.put('/api/topic-configs/tc-bad', body), 400);
    expect(await listed('tc-bad')).toBeUndefined();
  });

  it('rejects a topic name ending in .dlq with 400', async () => {
    const res = await server.api.put('/api/topic-configs/orders.dlq', { max_retries: 1 });
    expectErrorBody(res, 400);
    expect(res.body.error).toMatch(/\.dlq/);
    expect(await listed('orders.dlq')).toBeUndefined();
  });

  it('rejects an invalid topic name with 400', async () => {
    expectErrorBody(await server.api.put('/api/topic-configs/_bad', {}), 400);
    expectErrorBody(await server.api.put(`/api/topic-configs/${'a'.repeat(201)}`, {}), 400);
  });

  it('deletes with 204, after which new messages take the global defaults', async () => {
    await putTopicConfig(server.api, 'tc-delete', { max_retries: 9, message_ttl_seconds: 0 });
    const before = await enqueueId(server.api, 'tc-delete', 'x');
    expect(await findMessage(server.api, 'tc-delete', before)).toMatchObject({ max_retries: 9, expires_at: null });

    const res = await server.api.delete('/api/topic-configs/tc-delete');
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(await listed('tc-delete')).toBeUndefined();
    const after = await enqueueId(server.api, 'tc-delete', 'y');
    const message = await findMessage(server.api, 'tc-delete', after);
    expect(message.max_retries).toBe(3);
    expect(message.expires_at).not.toBeNull();
  });

  it("gives a dequeue that names no visibility timeout the topic's, a waiting one's hand-off included", async () => {
    await putTopicConfig(server.api, 'tc-visibility', { visibility_timeout_seconds: 600 });
    const claimedFor = async (id: string) => (Date.parse((await findMessage(server.api, 'tc-visibility', id)).available_at) - Date.now()) / 1000;
    const first = await enqueueId(server.api, 'tc-visibility', 'x');
    expect(await dequeueIds(server.api, 'tc-visibility')).toEqual([first]);
    // 600 s, not the server's 30 (a slow machine takes seconds off, never hundreds).
    expect(await claimedFor(first)).toBeGreaterThan(500);
    // A dequeue's own visibility still wins.
    const second = await enqueueId(server.api, 'tc-visibility', 'y');
    expect(await dequeueIds(server.api, 'tc-visibility', { visibility_timeout_seconds: 5 })).toEqual([second]);
    expect(await claimedFor(second)).toBeLessThanOrEqual(5);
    // A long poll waiting on the empty topic gets the next enqueue handed over with the same visibility.
    const waiting = server.api.post('/api/messages/dequeue', { topic: 'tc-visibility', wait_seconds: 10 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const third = await enqueueId(server.api, 'tc-visibility', 'z');
    const answered = await waiting;
    expect(answered.body.messages.map((m: any) => m.id)).toEqual([third]);
    expect(await claimedFor(third)).toBeGreaterThan(500);
    // gRPC: BatchDequeue and a Subscribe stream that name none get it too.
    const grpc = new QueueClient(server.server.grpcPort);
    try {
      const fourth = await enqueueId(server.api, 'tc-visibility', 'g');
      expect((await grpc.call('BatchDequeue', { topic: 'tc-visibility', count: 10 })).messages.map((m: any) => m.id)).toEqual([fourth]);
      expect(await claimedFor(fourth)).toBeGreaterThan(500);
      const rec = new StreamRecorder(grpc.subscribe({ topic: 'tc-visibility' }));
      const fifth = await enqueueId(server.api, 'tc-visibility', 's');
      await rec.until(() => rec.received.length === 1, 5000, 'one delivery');
      rec.stream.cancel();
      expect(rec.received[0].id).toBe(fifth);
      expect(await claimedFor(fifth)).toBeGreaterThan(500);
    } finally {
      grpc.close();
    }
  });

  it('applies a new configuration to the next enqueue at once', async () => {
    await putTopicConfig(server.api, 'tc-live', { max_retries: 6 });
    const id = await enqueueId(server.api, 'tc-live', 'x');
    expect((await findMessage(server.api, 'tc-live', id)).max_retries).toBe(6);
  });

  it('lists configurations under items, each with every field', async () => {
    const res = await server.api.get('/api/topic-configs');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['items', 'defaults']);
    // What a null setting means on this service (its queue.* settings), for the UI's "empty: 3".
    expect(res.body.defaults).toEqual({ max_retries: 3, message_ttl_seconds: 86_400, retry_backoff_seconds: 0, retry_backoff_max_seconds: 3600, visibility_timeout_seconds: 30 });
    expect(res.body.items.map((c: any) => c.topic)).toEqual(expect.arrayContaining(['tc-full', 'tc-empty', 'tc-live']));
    for (const item of res.body.items) expect(Object.keys(item).sort()).toEqual(Object.keys(unset('x')).sort());
  });
});
