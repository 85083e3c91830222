import * as grpc from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { expectGrpcError, QueueClient, StreamRecorder } from './helpers/grpc.js';
import { MISSING_ID } from './helpers/messages.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/** A lone UTF-16 surrogate: JSON can carry it (`"\ud800"`), UTF-8 cannot, so it would be stored as U+FFFD. */
const LONE = '\ud800';
/** A protobuf varint (a length). */
function varint(n: number): Buffer {
  const bytes: number[] = [];
  for (; n >= 0x80; n = Math.floor(n / 128)) bytes.push((n & 0x7f) | 0x80);
  bytes.push(n);
  return Buffer.from(bytes);
}

const notWellFormed = (field: string) => `${field} must be well-formed Unicode text: it holds a lone surrogate (such as \\ud800)`;

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

  it('metadata with an own "__proto__" key is 400, not stored without it; every other key is kept as sent', async () => {
    // JSON.parse makes "__proto__" an own key, which the metadata schema used to leave out of what it returned.
    const raw = (metadata: string) => server.api.request('POST', '/api/messages', `{"topic":"edges-proto","payload":"p","metadata":${metadata}}`);
    for (const metadata of ['{"__proto__":"x","k":"v"}', '{"__proto__":{"a":1}}', '{"k":"v","__proto__":null}', '{"__proto__":"x"}']) {
      const res = await raw(metadata);
      expectErrorBody(res, 400);
      expect(res.body.error, metadata).toBe('metadata must not have the key "__proto__"');
    }
    const batch = await server.api.request(
      'POST',
      '/api/messages/batch',
      '{"messages":[{"topic":"edges-proto","payload":"p"},{"topic":"edges-proto","payload":"p","metadata":{"__proto__":"x"}}]}',
    );
    expectErrorBody(batch, 400);
    expect(batch.body.error).toBe('messages[1]: metadata must not have the key "__proto__"');
    expect((await server.api.get('/api/messages?topic=edges-proto')).body.total).toBe(0);

    const metadata = { constructor: 'c', toString: 't', hasOwnProperty: 'h', valueOf: 'v', prototype: 'p', __defineGetter__: 'g', __proto: 'x', proto__: 'y', '': 'empty', '0': 'zero' };
    const id = (await server.api.enqueue('edges-proto', 'p', { metadata })).body.id;
    expect((await server.api.get('/api/messages?topic=edges-proto')).body.items[0].metadata).toEqual(metadata);
    const dequeued = (await server.api.dequeue('edges-proto')).body.messages[0];
    expect(dequeued.id).toBe(id);
    expect(dequeued.metadata).toEqual(metadata);
  });

  it('a string holding a lone surrogate is 400 naming its field, in every request body; nothing is stored', async () => {
    const user = (await server.api.post('/api/users', { username: 'edges-lone-user', password: 'long-enough-pass' })).body;
    expect(user.id, 'the user for the grant requests').toBeDefined();
    const cases: Array<[string, string, unknown, string]> = [
      ['POST', '/api/messages', { topic: `edges${LONE}`, payload: 'p' }, 'topic'],
      ['POST', '/api/messages', { topic: 'edges-lone', payload: `a${LONE}b` }, 'payload'],
      ['POST', '/api/messages', { topic: 'edges-lone', payload: '\udc00' }, 'payload'],
      ['POST', '/api/messages', { topic: 'edges-lone', payload: 'p', key: `k${LONE}` }, 'key'],
      ['POST', '/api/messages', { topic: 'edges-lone', payload: 'p', metadata: { [`k${LONE}`]: 'v' } }, 'metadata keys'],
      ['POST', '/api/messages', { topic: 'edges-lone', payload: 'p', metadata: { k: `v${LONE}` } }, 'metadata values'],
      ['POST', '/api/messages/batch', { messages: [{ topic: 'edges-lone', payload: 'ok' }, { topic: 'edges-lone', payload: LONE }] }, 'messages[1]: payload'],
      ['POST', '/api/messages/dequeue', { topic: `edges${LONE}` }, 'topic'],
      ['POST', '/api/messages/dequeue', { topic: 'edges-lone', consumer_group: `g${LONE}` }, 'consumer_group'],
      ['POST', `/api/messages/${MISSING_ID}/ack`, { consumer_group: LONE }, 'consumer_group'],
      ['POST', '/api/messages/ack', { ids: [LONE] }, 'ids'],
      ['PUT', '/api/topic-schemas/edges-lone', { schema_json: `{"type":"record","name":"R","doc":"${LONE}","fields":[]}` }, 'schema_json'],
      ['POST', '/api/topics/edges-lone/consumer-groups', { consumer_group: `g${LONE}` }, 'consumer_group'],
      ['PUT', '/api/admin/delete-reaper/schedule', { schedule: `@daily${LONE}` }, 'schedule'],
      ['POST', '/api/users', { username: `edges${LONE}`, password: 'long-enough-pass' }, 'username'],
      ['POST', '/api/users', { username: 'edges-lone-2', password: `long-enough-pass${LONE}` }, 'password'],
      ['PUT', `/api/users/${user.id}`, { username: `edges${LONE}` }, 'username'],
      ['PUT', `/api/users/${user.id}`, { password: `long-enough-pass${LONE}` }, 'password'],
      ['POST', `/api/users/${user.id}/grants`, { action: 'read', topic_pattern: `edges${LONE}` }, 'topic_pattern'],
      ['POST', `/api/users/${user.id}/consumer-group-grants`, { consumer_group: `g${LONE}` }, 'consumer_group'],
    ];
    for (const [method, path, body, field] of cases) {
      const res = await server.api.request(method, path, body);
      expectErrorBody(res, 400);
      expect(res.body.error, `${method} ${path} ${field}`).toBe(field.startsWith('messages[') ? `messages[1]: ${notWellFormed('payload')}` : notWellFormed(field));
    }
    expect((await server.api.get('/api/messages?topic=edges-lone')).body.total).toBe(0);
    expectErrorBody(await server.api.get('/api/topic-schemas/edges-lone'), 404);
    expect((await server.api.get('/api/users')).body.items.map((u: { username: string }) => u.username).filter((n: string) => n.startsWith('edges'))).toEqual(['edges-lone-user']);
    expect((await server.api.get(`/api/users/${user.id}/grants`)).body.items).toEqual([]);

    // A nack's error is diagnostic text, often cut by code units: a lone surrogate is recorded as U+FFFD, and
    // the nack goes through (refused, the message would stay held until its visibility timeout).
    const nacked = (await server.api.enqueue('edges-lone-nack', 'p')).body.id;
    expect((await server.api.dequeue('edges-lone-nack')).body.messages.map((m: any) => m.id)).toEqual([nacked]);
    expect((await server.api.post(`/api/messages/${nacked}/nack`, { error: `boom \ud83d` })).status).toBe(204);
    const [retried] = (await server.api.get('/api/messages?topic=edges-lone-nack')).body.items;
    expect(retried).toMatchObject({ id: nacked, status: 'pending', retry_count: 1, last_error: 'boom \ufffd' });

    // Surrogate pairs (characters outside the BMP) and U+FFFD itself are text like any other, kept exactly.
    const paired = await server.api.enqueue('edges-lone', 'a📦b', { key: '📦', metadata: { '📦': '🚚' } });
    const replacement = await server.api.enqueue('edges-lone', '\ufffd', { key: '\ufffd' });
    expect([paired.status, replacement.status]).toEqual([201, 201]);
    const listed = (await server.api.get('/api/messages?topic=edges-lone')).body.items;
    expect(listed.map((m: any) => [m.key, m.payload, m.metadata])).toEqual([
      ['📦', 'a📦b', { '📦': '🚚' }],
      ['\ufffd', '\ufffd', {}],
    ]);
  });

  it('over gRPC, a string that is not UTF-8 or a metadata key "__proto__" is INVALID_ARGUMENT, never stored as another value', async () => {
    // Messages written field by field, as a client in another language could send them.
    const field = (n: number, value: string | Buffer) => {
      const bytes = Buffer.from(value);
      return Buffer.concat([Buffer.from([(n << 3) | 2, bytes.length]), bytes]);
    };
    const message = (...fields: Buffer[]) => Buffer.concat(fields);
    const entry = (key: string | Buffer, value: string | Buffer) => field(3, message(field(1, key), field(2, value)));
    const text = (...parts: Array<string | number[]>) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));
    const raw = (b: Buffer) => b;
    const call = (method: string, bytes: Buffer) =>
      new Promise<grpc.ServiceError | null>((resolve) => client.raw.makeUnaryRequest(`/queue.QueueService/${method}`, raw, raw, bytes, new grpc.Metadata(), {}, (e) => resolve(e)));
    const topic = field(1, 'edges-utf8');
    const payload = field(2, 'p');
    const notUtf8 = (type: string) => `the request is not a valid queue.${type} message: a string field holds bytes that are not UTF-8`;

    const refused: Array<[string, string, Buffer]> = [
      ['Enqueue', 'EnqueueRequest', message(field(1, text('edges', [0xff])), payload)],
      ['Enqueue', 'EnqueueRequest', message(topic, payload, field(4, text('k', [0xed, 0xa0, 0x80])))], // U+D800 spelled in UTF-8
      ['Enqueue', 'EnqueueRequest', message(topic, payload, entry(text('k', [0xc3]), 'v'))], // cut inside "é"
      ['Enqueue', 'EnqueueRequest', message(topic, payload, entry('k', text([0xc0, 0xaf])))], // an overlong "/"
      ['EnqueueBatch', 'EnqueueBatchRequest', message(field(1, message(topic, payload)), field(1, message(topic, payload, entry('k', text([0xfe])))))],
      ['Dequeue', 'DequeueRequest', message(topic, field(3, text('g', [0xff])))],
      ['BatchDequeue', 'BatchDequeueRequest', message(field(1, text([0xff])))],
      ['Ack', 'AckRequest', message(field(1, text(MISSING_ID.slice(0, -1), [0xff])))],
      ['AckBatch', 'AckBatchRequest', message(field(1, MISSING_ID), field(1, text([0x80])))],
    ];
    for (const [method, type, bytes] of refused) {
      const err = await call(method, bytes);
      expect(err && status[err.code], `${method} ${bytes.toString('hex')}`).toBe('INVALID_ARGUMENT');
      expect(err!.details).toBe(notUtf8(type));
    }
    const subscribed = await new Promise<grpc.StatusObject>((resolve) => {
      const stream = client.raw.makeServerStreamRequest('/queue.QueueService/Subscribe', raw, raw, message(field(1, text([0xff]))), new grpc.Metadata(), {});
      stream.on('error', () => undefined);
      stream.on('status', resolve);
    });
    expect([status[subscribed.code], subscribed.details]).toEqual(['INVALID_ARGUMENT', notUtf8('SubscribeRequest')]);

    // protobufjs would assign the key to a plain object, where "__proto__" changes nothing: the entry vanished.
    const protoKey = 'metadata must not have the key "__proto__"';
    const withProto = message(topic, payload, entry('k', 'v'), entry('__proto__', 'x'));
    expect((await call('Enqueue', withProto))?.details).toBe(`the request is not a valid queue.EnqueueRequest message: ${protoKey}`);
    expect((await call('EnqueueBatch', message(field(1, message(topic, payload)), field(1, withProto))))?.details).toBe(
      `the request is not a valid queue.EnqueueBatchRequest message: ${protoKey}`,
    );
    // A string that runs past the end of the message is no message (it used to be cut short and stored).
    expect((await call('Enqueue', Buffer.concat([topic, Buffer.from([0x12, 10]), Buffer.from('p')])))?.details).toBe(
      'the request is not a valid queue.EnqueueRequest message',
    );
    expect((await server.api.get('/api/messages?topic=edges-utf8')).body.total).toBe(0);

    // "__proto__" as a value, a key, or in a name is text like any other.
    expect(await call('Enqueue', message(topic, payload, field(4, '__proto__'), entry('__proto__x', '__proto__')))).toBeNull();
    const [stored] = (await server.api.get('/api/messages?topic=edges-utf8')).body.items;
    expect([stored.key, stored.metadata]).toEqual(['__proto__', { __proto__x: '__proto__' }]);

    // A nack's error text is diagnostic, as over HTTP: bytes that are not UTF-8 become U+FFFD and the nack goes through.
    const [held] = (await server.api.dequeue('edges-utf8')).body.messages;
    expect(await call('Nack', message(field(1, held.id), field(2, text('boom ', [0xc3]))))).toBeNull();
    expect((await server.api.get('/api/messages?topic=edges-utf8')).body.items[0]).toMatchObject({ id: held.id, status: 'pending', last_error: 'boom \ufffd' });
    // ...but its id and group follow their own rules.
    const [again] = (await server.api.dequeue('edges-utf8')).body.messages;
    expect(status[(await call('Nack', message(field(1, text(again.id.slice(0, -1), [0xff])))))!.code]).toBe('NOT_FOUND');
  });

  it('over gRPC, a request of more than 1,000,000 fields is refused before it is decoded (2 bytes each, 100+ once decoded)', async () => {
    const raw = (b: Buffer) => b;
    const call = (method: string, bytes: Buffer) =>
      new Promise<grpc.ServiceError | null>((resolve) => client.raw.makeUnaryRequest(`/queue.QueueService/${method}`, raw, raw, bytes, new grpc.Metadata(), {}, (e) => resolve(e)));
    // An EnqueueBatch of empty messages: field 1, length 0, over and over. Gzip makes this a few KB on the wire.
    const emptyMessages = (n: number) => Buffer.alloc(2 * n, Buffer.from([0x0a, 0x00]));
    const over = await call('EnqueueBatch', emptyMessages(1_000_001));
    expect([over && status[over.code], over?.details]).toEqual([
      'INVALID_ARGUMENT',
      'the request is not a valid queue.EnqueueBatchRequest message: it holds more than 1,000,000 fields, nested ones included',
    ]);
    // Fields inside the messages count too: 2 messages of 500,001 metadata entries each.
    const entries = Buffer.alloc(2 * 500_001, Buffer.from([0x1a, 0x00]));
    const nested = Buffer.concat([0, 1].map(() => Buffer.concat([Buffer.from([0x0a]), varint(entries.length), entries])));
    expect((await call('EnqueueBatch', nested))?.details).toMatch(/it holds more than 1,000,000 fields/);
    // At the budget, the request is decoded and answered by its own rules.
    expect((await call('EnqueueBatch', emptyMessages(1_000_000)))?.details).toBe('requests must hold at most 1000 messages');
  });

  it('a lone surrogate percent-encoded in a path or a query is 400, never a different name', async () => {
    // %ED%A0%80 is U+D800 as UTF-8 would spell it, were it allowed; decoding it is a broken escape.
    for (const path of [
      '/api/topics/edges-lone/messages/by-key/%ED%A0%80',
      '/api/topics/edges-lone/messages/by-key/k%ED%A0%80',
      '/api/topics/edges%ED%A0%80/messages/by-key/k',
      '/api/topics/edges-lone/consumer-groups/%ED%A0%80',
      '/api/topic-configs/%ED%A0%80',
    ]) {
      const res = await server.api.delete(path);
      expectErrorBody(res, 400);
      expect(res.body.error, path).toBe('malformed percent-encoding in the URL path');
    }
    for (const path of ['/api/messages?topic=%ED%A0%80', '/api/topics/edges-lone/message-log?before=2026-01-01T00:00:00Z%ED%A0%80']) {
      expectErrorBody(await server.api.request(path.includes('message-log') ? 'DELETE' : 'GET', path), 400);
    }
    // A query parameter no rule of its own refuses is not read as another value either (U+FFFD, or the escape as typed).
    for (const query of ['actor=%ED%A0%80', 'actor=%ZZ', 'actor=100%', 'topic=edges-lone&actor=%C3']) {
      const res = await server.api.get(`/api/audit-log?${query}`);
      expectErrorBody(res, 400);
      expect(res.body.error, query).toBe('malformed percent-encoding in the URL query');
    }
    // Well-formed escapes and `+` for a space read as always.
    expect((await server.api.get('/api/audit-log?actor=Jos%C3%A9+Q&topic=edges-lone')).status).toBe(200);
  });

  it('an impossible RFC 3339 time is refused, never rolled over: message-log before is 400, replay from_time 422', async () => {
    expect((await server.api.put('/api/topic-configs/edges-time', { replayable: true })).status).toBe(200);
    expect((await server.api.enqueue('edges-time', 'archived')).status).toBe(201);
    const [message] = (await server.api.dequeue('edges-time')).body.messages;
    expect((await server.api.post(`/api/messages/${message.id}/ack`, {})).status).toBe(204);
    expect((await server.api.get('/api/topics/edges-time/message-log')).body.total).toBe(1);

    const impossible = [
      '2021-02-30T00:00:00Z', // rolled over to March 2 by Date.parse
      '2021-02-29T00:00:00Z', // not a leap year
      '1900-02-29T00:00:00Z', // a century that is not a leap year
      '2021-04-31T00:00:00Z',
      '2021-13-01T00:00:00Z',
      '2021-00-10T00:00:00Z',
      '2021-01-00T00:00:00Z',
      '2021-01-01T24:00:00Z', // read as the next midnight by Date.parse
      '2021-01-01T23:60:00Z',
      '2021-01-01T23:59:60Z', // a leap second: refused, as before
      '2021-01-01T00:00:00+24:00',
      '2021-01-01T00:00:00-05:60',
      '9999-12-31T23:59:59.999-23:59', // year 10000 in UTC, which RFC 3339 cannot write back
      '0000-01-01T00:00:00+00:01', // the year before 0000 in UTC
    ];
    for (const time of impossible) {
      const del = await server.api.delete(`/api/topics/edges-time/message-log?before=${encodeURIComponent(time)}`);
      expectErrorBody(del, 400);
      expect(del.body.error, time).toBe('before is required and must be an RFC 3339 timestamp, e.g. 2026-11-22T10:00:00Z');
      const replay = await server.api.post('/api/topics/edges-time/replay', { from_time: time });
      expectErrorBody(replay, 422);
      expect(replay.body.error, time).toBe('from_time must be an RFC 3339 timestamp, e.g. 2026-11-22T10:00:00Z');
    }
    expect((await server.api.get('/api/topics/edges-time/message-log')).body.total).toBe(1);
    expect((await server.api.get('/api/messages?topic=edges-time')).body.total).toBe(0);

    // The edges that exist are fine: leap days, the last minute of a day, offsets up to 23:59.
    for (const time of ['2020-02-29T00:00:00Z', '2000-02-29T23:59:59.999+23:59', '2021-12-31 23:59:59-23:59']) {
      const del = await server.api.delete(`/api/topics/edges-time/message-log?before=${encodeURIComponent(time)}`);
      expect(del.status, `${time}: ${del.text}`).toBe(200);
      expect(del.body).toEqual({ deleted: 0 });
    }
    const replay = await server.api.post('/api/topics/edges-time/replay', { from_time: '2020-02-29T12:00:00+05:30' });
    expect(replay.status, replay.text).toBe(200);
    expect(replay.body).toMatchObject({ enqueued: 1, from_time: '2020-02-29T06:30:00.000Z' });
  });
});
