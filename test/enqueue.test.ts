import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { findMessage, listTopic, RFC3339_MS, UUID } from './helpers/messages.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const DAY_MS = 24 * 60 * 60 * 1000;

describeEachEngine('enqueue', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    // A tiny payload cap, so the 413 boundary is cheap to reach.
    server = await startTestServer(engine, { overrides: { queue: { max_payload_bytes: 16 } } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers 201 with only the new message id', async () => {
    const res = await server.api.enqueue('enq-basic', 'hello');
    expect(res.status).toBe(201);
    expect(Object.keys(res.body)).toEqual(['id']);
    expect(res.body.id).toMatch(UUID);
    const second = await server.api.enqueue('enq-basic', 'hello');
    expect(second.body.id).not.toBe(res.body.id);
  });

  describe('topic names', () => {
    it.each([
      ['one letter', 'a'],
      ['one digit', '7'],
      ['every allowed character', 'Az09._-x'],
      ['a leading digit', '9orders'],
      ['200 characters', 'a'.repeat(200)],
      ['.dlq inside the name', 'orders.dlq.x'],
    ])('accepts %s', async (_what, topic) => {
      const res = await server.api.enqueue(topic, 'x');
      expect(res.status, res.text).toBe(201);
      expect(await findMessage(server.api, topic, res.body.id)).toMatchObject({ topic });
    });

    it.each([
      ['an empty name', ''],
      ['201 characters', 'a'.repeat(201)],
      ['a leading dot', '.orders'],
      ['a leading underscore', '_orders'],
      ['a leading dash', '-orders'],
      ['a space', 'my orders'],
      ['a slash', 'a/b'],
      ['a colon', 'a:b'],
      ['a star', 'orders*'],
      ['a non-ASCII letter', 'bestellungen-ä'],
      ['a number', 42],
      ['null', null],
    ])('rejects %s with 400', async (_what, topic) => {
      expectErrorBody(await server.api.post('/api/messages', { topic, payload: 'x' }), 400);
    });

    it('rejects a missing topic with 400', async () => {
      expectErrorBody(await server.api.post('/api/messages', { payload: 'x' }), 400);
    });

    it('reserves names ending in .dlq (400) and stores nothing there', async () => {
      const res = await server.api.enqueue('reserved.dlq', 'x');
      expectErrorBody(res, 400);
      expect(res.body.error).toMatch(/\.dlq/);
      expect(await listTopic(server.api, 'reserved.dlq')).toEqual([]);
    });
  });

  describe('payload', () => {
    it.each([
      ['missing', { topic: 'enq-payload' }],
      ['empty', { topic: 'enq-payload', payload: '' }],
      ['a number', { topic: 'enq-payload', payload: 5 }],
      ['an object', { topic: 'enq-payload', payload: { a: 'b' } }],
      ['an array', { topic: 'enq-payload', payload: ['a'] }],
      ['null', { topic: 'enq-payload', payload: null }],
      ['a boolean', { topic: 'enq-payload', payload: true }],
    ])('rejects a payload that is %s with 400', async (_what, body) => {
      expectErrorBody(await server.api.post('/api/messages', body), 400);
    });

    it('accepts a payload of exactly queue.max_payload_bytes and keeps it verbatim', async () => {
      const payload = '{"a":"0123456"}!';
      expect(Buffer.byteLength(payload)).toBe(16);
      const res = await server.api.enqueue('enq-size', payload);
      expect(res.status).toBe(201);
      expect((await findMessage(server.api, 'enq-size', res.body.id)).payload).toBe(payload);
    });

    it('rejects one byte more with 413', async () => {
      expectErrorBody(await server.api.enqueue('enq-size', 'x'.repeat(17)), 413);
    });

    it('counts the limit in UTF-8 bytes, not characters', async () => {
      // 9 characters, 18 bytes.
      expectErrorBody(await server.api.enqueue('enq-size', 'é'.repeat(9)), 413);
      expect((await server.api.enqueue('enq-size', 'é'.repeat(8))).status).toBe(201);
    });
  });

  describe('metadata', () => {
    it('stores an object of strings as given', async () => {
      const metadata = { source: 'billing', 'trace-id': 'abc', empty: '' };
      const res = await server.api.enqueue('enq-meta', 'x', { metadata });
      expect(res.status).toBe(201);
      expect((await findMessage(server.api, 'enq-meta', res.body.id)).metadata).toEqual(metadata);
    });

    it.each([
      ['a string', 'a=b'],
      ['an array', ['a', 'b']],
      ['a number', 3],
      ['an object with a number value', { a: 1 }],
      ['an object with a boolean value', { a: true }],
      ['an object with a null value', { a: null }],
      ['an object with a nested object', { a: { b: 'c' } }],
      ['an object with an array value', { a: ['b'] }],
    ])('rejects metadata that is %s with 400', async (_what, metadata) => {
      const res = await server.api.post('/api/messages', { topic: 'enq-meta-bad', payload: 'x', metadata });
      expectErrorBody(res, 400);
      expect(res.body.error).toMatch(/metadata/);
    });
  });

  describe('key', () => {
    it.each([
      ['1 character', 'k'],
      ['255 characters', 'k'.repeat(255)],
      ['255 emoji (characters, not UTF-16 units)', '😀'.repeat(255)],
      ['255 two-byte characters', 'ü'.repeat(255)],
    ])('accepts a key of %s', async (_what, key) => {
      const res = await server.api.enqueue('enq-key', 'x', { key });
      expect(res.status, res.text).toBe(201);
      expect((await findMessage(server.api, 'enq-key', res.body.id)).key).toBe(key);
    });

    it.each([
      ['empty', ''],
      ['256 characters', 'k'.repeat(256)],
      ['256 emoji', '😀'.repeat(256)],
      ['a number', 12],
      ['an object', { k: 'v' }],
    ])('rejects a key that is %s with 400', async (_what, key) => {
      expectErrorBody(await server.api.post('/api/messages', { topic: 'enq-key-bad', payload: 'x', key }), 400);
    });
  });

  it('shows a new message in the list view with every default', async () => {
    const res = await server.api.enqueue('enq-defaults', 'hello');
    const message = await findMessage(server.api, 'enq-defaults', res.body.id);
    expect(message).toEqual({
      id: res.body.id,
      topic: 'enq-defaults',
      key: null,
      ordering_key: null,
      payload: 'hello',
      metadata: {},
      status: 'pending',
      retry_count: 0,
      max_retries: 3,
      last_error: '',
      expires_at: expect.stringMatching(RFC3339_MS),
      created_at: expect.stringMatching(RFC3339_MS),
      available_at: expect.stringMatching(RFC3339_MS),
      original_topic: '',
      dlq_moved_at: null,
    });
    // Available from its enqueue on: no delay.
    expect(message.available_at).toBe(message.created_at);
    // queue.message_ttl defaults to 24h.
    expect(Date.parse(message.expires_at) - Date.parse(message.created_at)).toBe(DAY_MS);
    expect(Math.abs(Date.parse(message.created_at) - Date.now())).toBeLessThan(60_000);
  });
});

describeEachEngine('enqueue with configured defaults', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine, { overrides: { queue: { max_retries: 7, message_ttl: '90s' } } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('takes max_retries and the TTL from the queue configuration', async () => {
    const res = await server.api.enqueue('enq-config', 'x');
    const message = await findMessage(server.api, 'enq-config', res.body.id);
    expect(message.max_retries).toBe(7);
    expect(Date.parse(message.expires_at) - Date.parse(message.created_at)).toBe(90_000);
  });

  it('allows payloads up to the default 1 MiB cap', async () => {
    const res = await server.api.enqueue('enq-config', 'x'.repeat(1_048_576));
    expect(res.status).toBe(201);
    expectErrorBody(await server.api.enqueue('enq-config', 'x'.repeat(1_048_577)), 413);
  });
});
