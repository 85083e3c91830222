import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { dequeueIds, enqueueId, findMessage, listTopic, MISSING_ID } from './helpers/messages.js';
import { startTestServer, type TestServer } from './helpers/server.js';

describeEachEngine('ack', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  const expectNotFound = (res: Awaited<ReturnType<TestServer['api']['post']>>) => {
    expectErrorBody(res, 404);
    expect(res.body).toEqual({ error: 'message not found' });
  };

  it('answers 204 with no body and removes the message', async () => {
    const id = await enqueueId(server.api, 'ack-basic', 'x');
    const other = await enqueueId(server.api, 'ack-basic', 'y');
    await dequeueIds(server.api, 'ack-basic');
    const res = await server.api.post(`/api/messages/${id}/ack`);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await listTopic(server.api, 'ack-basic')).map((m) => m.id)).toEqual([other]);
  });

  it('accepts an empty JSON body and an empty string body', async () => {
    const a = await enqueueId(server.api, 'ack-bodies', 'a');
    const b = await enqueueId(server.api, 'ack-bodies', 'b');
    await dequeueIds(server.api, 'ack-bodies', { count: 2 });
    expect((await server.api.post(`/api/messages/${a}/ack`, {})).status).toBe(204);
    expect((await server.api.post(`/api/messages/${b}/ack`, '')).status).toBe(204);
    expect(await listTopic(server.api, 'ack-bodies')).toEqual([]);
  });

  it('accepts an upper-case spelling of the id', async () => {
    const id = await enqueueId(server.api, 'ack-case', 'x');
    await dequeueIds(server.api, 'ack-case');
    expect((await server.api.post(`/api/messages/${id.toUpperCase()}/ack`)).status).toBe(204);
    expect(await listTopic(server.api, 'ack-case')).toEqual([]);
  });

  it('answers 404 "message not found" for an unknown id', async () => {
    expectNotFound(await server.api.post(`/api/messages/${MISSING_ID}/ack`));
  });

  it.each(['not-a-uuid', '12345', `${MISSING_ID}x`])('answers 404 "message not found" for the non-UUID id %s', async (id) => {
    expectNotFound(await server.api.post(`/api/messages/${id}/ack`));
  });

  it('answers 404 for a pending message and leaves it pending', async () => {
    const id = await enqueueId(server.api, 'ack-pending', 'x');
    expectNotFound(await server.api.post(`/api/messages/${id}/ack`));
    expect((await findMessage(server.api, 'ack-pending', id)).status).toBe('pending');
  });

  it('answers 404 for a second ack of the same message', async () => {
    const id = await enqueueId(server.api, 'ack-twice', 'x');
    await dequeueIds(server.api, 'ack-twice');
    expect((await server.api.post(`/api/messages/${id}/ack`)).status).toBe(204);
    expectNotFound(await server.api.post(`/api/messages/${id}/ack`));
  });

  it('answers 404 for a failed message', async () => {
    const failing = await startTestServer(engine, { overrides: { queue: { max_retries: 0, dlq_threshold: 0 } } });
    try {
      const id = await enqueueId(failing.api, 'ack-failed', 'x');
      await dequeueIds(failing.api, 'ack-failed');
      expect((await failing.api.post(`/api/messages/${id}/nack`)).status).toBe(204);
      expect((await findMessage(failing.api, 'ack-failed', id)).status).toBe('failed');
      expectNotFound(await failing.api.post(`/api/messages/${id}/ack`));
    } finally {
      await failing.close();
    }
  });

  it('acks a message taken from a dead-letter topic', async () => {
    const dlq = await startTestServer(engine, { overrides: { queue: { dlq_threshold: 1 } } });
    try {
      const id = await enqueueId(dlq.api, 'ack-dlq', 'x');
      await dequeueIds(dlq.api, 'ack-dlq');
      expect((await dlq.api.post(`/api/messages/${id}/nack`)).status).toBe(204);
      expect(await dequeueIds(dlq.api, 'ack-dlq.dlq')).toEqual([id]);
      expect((await dlq.api.post(`/api/messages/${id}/ack`)).status).toBe(204);
      expect(await listTopic(dlq.api, 'ack-dlq.dlq')).toEqual([]);
    } finally {
      await dlq.close();
    }
  });

  describe('batch ack (POST /api/messages/ack)', () => {
    it('acks the processing ids and lists the rest as not_found, in request order', async () => {
      const a = await enqueueId(server.api, 'ack-batch', 'a');
      const b = await enqueueId(server.api, 'ack-batch', 'b');
      const pending = await enqueueId(server.api, 'ack-batch', 'c');
      await dequeueIds(server.api, 'ack-batch', { count: 2 });
      const res = await server.api.post('/api/messages/ack', { ids: [a, MISSING_ID, b, 'nope', pending] });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ acked: [a, b], not_found: [MISSING_ID, 'nope', pending] });
      expect((await listTopic(server.api, 'ack-batch')).map((m) => [m.id, m.status])).toEqual([[pending, 'pending']]);
    });

    it('reports an id acked a second time as not_found', async () => {
      const a = await enqueueId(server.api, 'ack-batch-twice', 'a');
      await dequeueIds(server.api, 'ack-batch-twice');
      expect((await server.api.post('/api/messages/ack', { ids: [a] })).body).toEqual({ acked: [a], not_found: [] });
      expect((await server.api.post('/api/messages/ack', { ids: [a] })).body).toEqual({ acked: [], not_found: [a] });
    });

    it('answers an empty list with empty results', async () => {
      const res = await server.api.post('/api/messages/ack', { ids: [] });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ acked: [], not_found: [] });
    });

    it('rejects a body without ids with 400', async () => {
      expectErrorBody(await server.api.post('/api/messages/ack', {}), 400);
      expectErrorBody(await server.api.post('/api/messages/ack', { ids: 'x' }), 400);
    });
  });
});
