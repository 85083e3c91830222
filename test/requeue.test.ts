import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { dequeueIds, enqueueId, failOnce, findMessage, listTopic, MISSING_ID, putTopicConfig } from './helpers/messages.js';
import { startTestServer, type TestServer } from './helpers/server.js';

describeEachEngine('requeue of dead letters', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    // Every first nack dead-letters; new messages get max_retries 4 unless the topic says otherwise.
    server = await startTestServer(engine, { overrides: { queue: { dlq_threshold: 1, max_retries: 4 } } });
  });
  afterAll(async () => {
    await server?.close();
  });

  async function deadLetter(topic: string, payload = 'x', extra: Record<string, unknown> = {}): Promise<string> {
    const id = await enqueueId(server.api, topic, payload, extra);
    await failOnce(server.api, topic, id, 'broken');
    expect(await findMessage(server.api, `${topic}.dlq`, id)).toMatchObject({ original_topic: topic, retry_count: 1 });
    return id;
  }

  it('moves a dead letter back to its original topic as pending, with every dead-letter field reset', async () => {
    const id = await deadLetter('rq-basic', 'the payload', { key: 'k', metadata: { a: 'b' } });
    const res = await server.api.post(`/api/messages/${id}/requeue`);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(await listTopic(server.api, 'rq-basic.dlq')).toEqual([]);
    expect(await findMessage(server.api, 'rq-basic', id)).toMatchObject({
      id,
      topic: 'rq-basic',
      status: 'pending',
      retry_count: 0,
      max_retries: 4,
      original_topic: '',
      dlq_moved_at: null,
      payload: 'the payload',
      key: 'k',
      metadata: { a: 'b' },
    });
    // Dead letters never expire; back on its topic it gets a fresh TTL (queue.message_ttl, 24h) from now.
    const requeued = await findMessage(server.api, 'rq-basic', id);
    expect(Date.parse(requeued.expires_at)).toBeGreaterThan(Date.now() + 23 * 3600 * 1000);
    // It is deliverable again from the original topic.
    const [delivered] = (await server.api.dequeue('rq-basic')).body.messages;
    expect(delivered).toMatchObject({ id, retry_count: 0, max_retries: 4 });
  });

  it('restores max_retries from the topic configuration as it is at requeue time', async () => {
    const id = await deadLetter('rq-config');
    await putTopicConfig(server.api, 'rq-config', { max_retries: 7 });
    expect((await server.api.post(`/api/messages/${id}/requeue`)).status).toBe(204);
    expect((await findMessage(server.api, 'rq-config', id)).max_retries).toBe(7);
  });

  it('restores max_retries from queue.max_retries when the topic configuration sets none', async () => {
    await putTopicConfig(server.api, 'rq-default', { max_retries: 1 });
    const id = await enqueueId(server.api, 'rq-default', 'x');
    expect((await findMessage(server.api, 'rq-default', id)).max_retries).toBe(1);
    await failOnce(server.api, 'rq-default', id);
    await putTopicConfig(server.api, 'rq-default', { max_retries: null });
    expect((await server.api.post(`/api/messages/${id}/requeue`)).status).toBe(204);
    expect((await findMessage(server.api, 'rq-default', id)).max_retries).toBe(4);
  });

  it('accepts an empty JSON body and an empty string body', async () => {
    const a = await deadLetter('rq-bodies');
    const b = await deadLetter('rq-bodies');
    expect((await server.api.post(`/api/messages/${a}/requeue`, {})).status).toBe(204);
    expect((await server.api.post(`/api/messages/${b}/requeue`, '')).status).toBe(204);
    expect((await listTopic(server.api, 'rq-bodies')).map((m) => m.status)).toEqual(['pending', 'pending']);
  });

  it('answers 404 for a second requeue of the same message', async () => {
    const id = await deadLetter('rq-twice');
    expect((await server.api.post(`/api/messages/${id}/requeue`)).status).toBe(204);
    expectErrorBody(await server.api.post(`/api/messages/${id}/requeue`), 404);
    expect(await findMessage(server.api, 'rq-twice', id)).toMatchObject({ status: 'pending', retry_count: 0 });
  });

  it('answers 404 for a message that is not a dead letter, and leaves it alone', async () => {
    const processing = await enqueueId(server.api, 'rq-not-dead', 'a');
    const pending = await enqueueId(server.api, 'rq-not-dead', 'b');
    expect(await dequeueIds(server.api, 'rq-not-dead')).toEqual([processing]);
    for (const id of [pending, processing]) expectErrorBody(await server.api.post(`/api/messages/${id}/requeue`), 404);
    expect((await findMessage(server.api, 'rq-not-dead', pending)).status).toBe('pending');
    expect((await findMessage(server.api, 'rq-not-dead', processing)).status).toBe('processing');
  });

  it('answers 404 for an unknown id and for a non-UUID id', async () => {
    expectErrorBody(await server.api.post(`/api/messages/${MISSING_ID}/requeue`), 404);
    expectErrorBody(await server.api.post('/api/messages/not-a-uuid/requeue'), 404);
  });

  it('requeues a dead letter that is being processed in the dead-letter topic', async () => {
    const id = await deadLetter('rq-processing');
    expect(await dequeueIds(server.api, 'rq-processing.dlq')).toEqual([id]);
    expect((await server.api.post(`/api/messages/${id}/requeue`)).status).toBe(204);
    expect(await findMessage(server.api, 'rq-processing', id)).toMatchObject({ status: 'pending', retry_count: 0, original_topic: '' });
  });
});
