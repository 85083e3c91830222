import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine, engineByName } from './helpers/engines.js';
import { SQS_ACTIONS } from '../src/sqs/actions.js';
import { startTcpProxy } from './helpers/tcp-proxy.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { inject } from 'vitest';

const MISSING_ID = '0190a0a0-0000-7000-8000-000000000000';
const LONG_TOPIC = 'a'.repeat(201);

/** [what, body, expected status] for every field of every JSON endpoint. */
const BODY_CASES: Record<string, Array<[string, unknown, number]>> = {
  'POST /api/messages': [
    ['no topic', { payload: 'x' }, 400],
    ['numeric topic', { topic: 5, payload: 'x' }, 400],
    ['null topic', { topic: null, payload: 'x' }, 400],
    ['object topic', { topic: { a: 1 }, payload: 'x' }, 400],
    ['array topic', { topic: ['t'], payload: 'x' }, 400],
    ['empty topic', { topic: '', payload: 'x' }, 400],
    ['topic with slash', { topic: 'a/b', payload: 'x' }, 400],
    ['topic with space', { topic: 'a b', payload: 'x' }, 400],
    ['unicode topic', { topic: 'café', payload: 'x' }, 400],
    ['201-char topic', { topic: LONG_TOPIC, payload: 'x' }, 400],
    ['topic starting with a dot', { topic: '.hidden', payload: 'x' }, 400],
    ['dead-letter topic', { topic: 'orders.dlq', payload: 'x' }, 400],
    ['no payload', { topic: 't' }, 400],
    ['numeric payload', { topic: 't', payload: 42 }, 400],
    ['object payload', { topic: 't', payload: { a: 1 } }, 400],
    ['null payload', { topic: 't', payload: null }, 400],
    ['empty payload', { topic: 't', payload: '' }, 400],
    ['string metadata', { topic: 't', payload: 'x', metadata: 'a=b' }, 400],
    ['array metadata', { topic: 't', payload: 'x', metadata: ['a'] }, 400],
    ['numeric metadata value', { topic: 't', payload: 'x', metadata: { a: 1 } }, 400],
    ['nested metadata value', { topic: 't', payload: 'x', metadata: { a: { b: 'c' } } }, 400],
    ['numeric key', { topic: 't', payload: 'x', key: 7 }, 400],
    ['object key', { topic: 't', payload: 'x', key: { k: 1 } }, 400],
    ['empty key', { topic: 't', payload: 'x', key: '' }, 400],
    ['256-char key', { topic: 't', payload: 'x', key: 'k'.repeat(256) }, 400],
    // JSON.parse makes "__proto__" an own key; it was dropped from the stored metadata, the rest kept (201).
    ['metadata with an own __proto__ key', { topic: 't', payload: 'x', metadata: JSON.parse('{"__proto__":"x","k":"v"}') }, 400],
    ['metadata with an own __proto__ object', { topic: 't', payload: 'x', metadata: JSON.parse('{"__proto__":{"a":1}}') }, 400],
    // A lone surrogate (JSON `"\ud800"`) would be stored as U+FFFD.
    ['lone surrogate payload', { topic: 't', payload: 'a\ud800' }, 400],
    ['lone surrogate key', { topic: 't', payload: 'x', key: '\udfff' }, 400],
    ['lone surrogate metadata value', { topic: 't', payload: 'x', metadata: { k: '\ud800' } }, 400],
  ],
  'POST /api/messages/dequeue': [
    ['no topic', {}, 400],
    ['numeric topic', { topic: 1 }, 400],
    ['bad topic name', { topic: 'a/b' }, 400],
    ['string count', { topic: 't', count: '5' }, 400],
    ['fractional count', { topic: 't', count: 1.5 }, 400],
    ['zero count', { topic: 't', count: 0 }, 400],
    ['negative count', { topic: 't', count: -1 }, 400],
    ['count above 1000', { topic: 't', count: 1001 }, 400],
    ['boolean count', { topic: 't', count: true }, 400],
    ['null count', { topic: 't', count: null }, 400],
    ['string visibility', { topic: 't', visibility_timeout_seconds: '30' }, 400],
    ['zero visibility', { topic: 't', visibility_timeout_seconds: 0 }, 400],
    ['visibility above 43200', { topic: 't', visibility_timeout_seconds: 43_201 }, 400],
    ['fractional visibility', { topic: 't', visibility_timeout_seconds: 2.5 }, 400],
    ['numeric consumer_group', { topic: 't', consumer_group: 3 }, 400],
  ],
  [`POST /api/messages/${MISSING_ID}/nack`]: [
    ['numeric error', { error: 5 }, 400],
    ['object error', { error: { m: 'x' } }, 400],
    ['numeric consumer_group', { consumer_group: 1 }, 400],
  ],
  [`POST /api/messages/${MISSING_ID}/ack`]: [['numeric consumer_group', { consumer_group: 1 }, 400]],
  'POST /api/messages/batch': [
    ['no messages', {}, 400],
    ['object messages', { messages: { topic: 't', payload: 'x' } }, 400],
    ['empty messages', { messages: [] }, 400],
    ['a bad message', { messages: [{ topic: 't', payload: 'x' }, { topic: 't', payload: 3 }] }, 400],
    ['a non-object message', { messages: ['x'] }, 400],
  ],
  'POST /api/messages/ack': [
    ['no ids', {}, 400],
    ['string ids', { ids: 'a' }, 400],
    ['numeric id', { ids: [1] }, 400],
    ['numeric consumer_group', { ids: [], consumer_group: 2 }, 400],
  ],
  'PUT /api/topic-configs/t': [
    ...(['max_retries', 'message_ttl_seconds', 'max_depth', 'throughput_limit', 'replay_window_seconds'] as const).flatMap(
      (field): Array<[string, unknown, number]> => [
        [`string ${field}`, { [field]: '3' }, 400],
        [`fractional ${field}`, { [field]: 1.5 }, 400],
        [`negative ${field}`, { [field]: -1 }, 400],
        [`boolean ${field}`, { [field]: true }, 400],
        [`object ${field}`, { [field]: {} }, 400],
      ],
    ),
    ['string replayable', { replayable: 'yes' }, 400],
    ['numeric replayable', { replayable: 1 }, 400],
  ],
  'PUT /api/topic-configs/orders.dlq': [['a dead-letter topic', {}, 400]],
  'PUT /api/topic-schemas/t': [
    ['no schema_json', {}, 400],
    ['numeric schema_json', { schema_json: 1 }, 400],
    ['object schema_json', { schema_json: { type: 'record' } }, 400],
    ['schema_json that is not JSON', { schema_json: '{not json' }, 400],
    ['schema_json that is not Avro', { schema_json: '{"type":"nonsense"}' }, 400],
  ],
  'POST /api/topics/t/purge': [
    ['string statuses', { statuses: 'pending' }, 400],
    ['numeric status', { statuses: [1] }, 400],
    ['unknown status', { statuses: ['pending', 'done'] }, 400],
    ['object statuses', { statuses: { pending: true } }, 400],
  ],
};

const JSON_ENDPOINTS = Object.keys(BODY_CASES);

describeEachEngine('bad input', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine, { overrides: { queue: { max_payload_bytes: 1024 } } });
  });
  afterAll(async () => {
    await server?.close();
  });

  for (const [endpoint, cases] of Object.entries(BODY_CASES)) {
    const [method, path] = endpoint.split(' ');
    it.each(cases)(`${endpoint} with %s`, async (_what, body, status) => {
      expectErrorBody(await server.api.request(method, path, body), status);
    });
  }

  it('nothing was stored by the rejected requests', async () => {
    expect((await server.api.get('/api/messages')).body.total).toBe(0);
    expect((await server.api.get('/api/topic-configs')).body.items).toEqual([]);
    expect((await server.api.get('/api/topic-schemas')).body.items).toEqual([]);
  });

  describe('bodies that are not a JSON object', () => {
    const bodies: Array<[string, string]> = [
      ['malformed JSON', '{"topic": "t", "payload":'],
      ['trailing garbage', '{"topic":"t","payload":"x"} x'],
      ['a JSON array', '[{"topic":"t","payload":"x"}]'],
      ['a JSON string', '"hello"'],
      ['a JSON number', '42'],
      ['JSON true', 'true'],
      ['plain text', 'topic=t&payload=x'],
    ];
    for (const endpoint of JSON_ENDPOINTS) {
      const [method, path] = endpoint.split(' ');
      it.each(bodies)(`${endpoint} with %s is 400`, async (_what, raw) => {
        expectErrorBody(await server.api.request(method, path, raw, { 'content-type': 'application/json' }), 400);
      });
    }
  });

  it('a body in a charset other than UTF-8 is 415', async () => {
    const res = await server.api.request('POST', '/api/messages', '{"topic":"t","payload":"x"}', { 'content-type': 'application/json; charset=latin1' });
    expectErrorBody(res, 415);
  });

  it('a JSON body sent with another Content-Type is still read as JSON', async () => {
    const res = await server.api.request('POST', '/api/messages', '{"topic":"ct","payload":"x"}', { 'content-type': 'text/plain' });
    expect(res.status).toBe(201);
    await server.api.post('/api/topics/ct/purge');
  });

  it('a payload over queue.max_payload_bytes is 413', async () => {
    expectErrorBody(await server.api.enqueue('big', 'x'.repeat(1025)), 413);
    expect((await server.api.enqueue('big', 'x'.repeat(1024))).status).toBe(201);
    await server.api.post('/api/topics/big/purge');
  });

  it('a body far over the limit is 413 on every JSON endpoint', async () => {
    const huge = JSON.stringify({ topic: 'big', payload: 'x'.repeat(300_000) });
    for (const endpoint of JSON_ENDPOINTS.filter((e) => !e.includes('/batch'))) {
      const [method, path] = endpoint.split(' ');
      expectErrorBody(await server.api.request(method, path, huge), 413);
    }
    expect((await server.api.get('/api/messages?topic=big')).body.total).toBe(0);
  });

  it.each([
    ['GET', '/nope'],
    ['GET', '/api'],
    ['GET', '/api/nope'],
    ['POST', '/api/messages/a/b/c'],
    ['GET', `/api/messages/${MISSING_ID}`],
    ['DELETE', '/api/topics/t'],
    ['GET', '/api/topics/t/purge/extra'],
  ])('unknown route %s %s is 404', async (method, path) => {
    expectErrorBody(await server.api.request(method, path), 404);
  });

  it.each([
    ['DELETE', '/api/messages', 'GET, POST, HEAD'],
    ['PUT', '/api/messages', 'GET, POST, HEAD'],
    ['GET', '/api/messages/dequeue', 'POST'],
    ['GET', '/api/messages/batch', 'POST'],
    ['GET', `/api/messages/${MISSING_ID}/ack`, 'POST'],
    ['DELETE', `/api/messages/${MISSING_ID}/nack`, 'POST'],
    ['PUT', `/api/messages/${MISSING_ID}/requeue`, 'POST'],
    ['POST', '/api/topic-configs', 'GET, HEAD'],
    ['POST', '/api/topic-configs/t', 'GET, PUT, DELETE, HEAD'],
    ['POST', '/api/topic-schemas/t', 'GET, PUT, DELETE, HEAD'],
    ['GET', '/api/topics/t/purge', 'POST'],
    ['GET', '/api/topics/t/messages/by-key/k', 'DELETE'],
    ['POST', '/api/stats', 'GET, HEAD'],
    ['POST', '/api/topics', 'GET, HEAD'],
    ['PUT', `/api/messages/${MISSING_ID}`, 'GET, HEAD'],
    ['POST', '/healthz', 'GET, HEAD'],
    ['DELETE', '/api/version', 'GET, HEAD'],
    ['POST', '/metrics', 'GET, HEAD'],
  ])('wrong method %s %s is 405 with Allow', async (method, path, allow) => {
    const res = await server.api.request(method, path);
    expectErrorBody(res, 405);
    const allowed = (res.headers.get('allow') ?? '').split(/,\s*/).sort();
    expect(allowed).toEqual(allow.split(', ').sort());
  });

  it.each(['not-a-uuid', '123', MISSING_ID.replace(/-/g, ''), `${MISSING_ID}0`, 'g190a0a0-0000-7000-8000-000000000000', "1' OR '1'='1", MISSING_ID])(
    'ack, nack and requeue of id %s are 404',
    async (id) => {
      const path = encodeURIComponent(id);
      for (const action of ['ack', 'nack', 'requeue']) {
        const res = await server.api.post(`/api/messages/${path}/${action}`);
        expectErrorBody(res, 404);
      }
      expect((await server.api.post(`/api/messages/${path}/ack`)).body.error).toBe('message not found');
    },
  );

  it('ack of a valid id that is pending, not processing, is 404', async () => {
    const { body } = await server.api.enqueue('pend', 'x');
    expectErrorBody(await server.api.post(`/api/messages/${body.id}/ack`), 404);
    expectErrorBody(await server.api.post(`/api/messages/${body.id}/nack`, { error: 'x' }), 404);
    expect((await server.api.get('/api/messages?topic=pend')).body.items[0].status).toBe('pending');
    await server.api.post('/api/topics/pend/purge');
  });

  const WEIRD_TOPICS: Array<[string, string]> = [
    ['an encoded slash', 'a%2Fb'],
    ['an encoded space', 'a%20b'],
    ['unicode', '%C3%A9t%C3%A9'],
    ['an emoji', '%F0%9F%93%A6'],
    ['201 characters', LONG_TOPIC],
    ['a leading dash', '-topic'],
    ['an encoded NUL', 'a%00b'],
    ['broken percent-encoding', 'a%ZZb'],
    ['a lone percent', '%'],
  ];
  it.each(WEIRD_TOPICS)('a path topic with %s is 400 everywhere', async (_what, topic) => {
    const requests: Array<[string, string, unknown?]> = [
      ['POST', `/api/topics/${topic}/purge`],
      ['DELETE', `/api/topics/${topic}/messages/by-key/k`],
      ['PUT', `/api/topic-configs/${topic}`, { max_retries: 1 }],
      ['DELETE', `/api/topic-configs/${topic}`],
      ['PUT', `/api/topic-schemas/${topic}`, { schema_json: '"string"' }],
      ['GET', `/api/topic-schemas/${topic}`],
      ['DELETE', `/api/topic-schemas/${topic}`],
    ];
    for (const [method, path, body] of requests) {
      const res = await server.api.request(method, path, body);
      expectErrorBody(res, 400);
    }
  });

  it('a list filter with a bad topic name is 400', async () => {
    expectErrorBody(await server.api.get('/api/messages?topic=a%2Fb'), 400);
    expectErrorBody(await server.api.get(`/api/messages?topic=${LONG_TOPIC}`), 400);
    expectErrorBody(await server.api.get('/api/messages?topic=x&topic=y'), 400);
  });

  it('a 200-character topic name is fine', async () => {
    const topic = 'a'.repeat(200);
    expect((await server.api.enqueue(topic, 'x')).status).toBe(201);
    expect((await server.api.post(`/api/topics/${topic}/purge`)).body).toEqual({ deleted: 1 });
  });

  describe('service endpoints', () => {
    it('/healthz is 200', async () => {
      const res = await server.api.get('/healthz');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    });
    it('/readyz is 200 while the database answers', async () => {
      expect((await server.api.get('/readyz')).status).toBe(200);
    });
    it('/api/version is {version}', async () => {
      const res = await server.api.get('/api/version');
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['version']);
      expect(res.body.version).toMatch(/^\d+\.\d+\.\d+/);
    });
    it('/api/auth/status says auth is off', async () => {
      const res = await server.api.get('/api/auth/status');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ auth_required: false });
    });
  });
});

describe('readiness without a database', () => {
  it('[sqlite] /readyz is 503 once the pool is gone, /healthz stays 200', async () => {
    const server = await startTestServer(engineByName.sqlite);
    try {
      expect((await server.api.get('/readyz')).status).toBe(200);
      await server.db.destroy();
      expectErrorBody(await server.api.get('/readyz'), 503);
      expect((await server.api.get('/healthz')).status).toBe(200);
      const enqueue = await server.api.enqueue('t', 'x');
      expect(enqueue.status).toBeGreaterThanOrEqual(500);
      expect(Object.keys(enqueue.body)).toEqual(['error']);
    } finally {
      await server.close().catch(() => undefined);
      await server.database.drop();
    }
  });

  const mysqlUrl = inject('mysqlUrl');
  (mysqlUrl ? it : it.skip)('[mysql] a lost database server gives 503 {"error"} on /readyz and on queue calls, never 500', async () => {
    const database = await engineByName.mysql.createDatabase();
    const real = new URL(database.url);
    const proxy = await startTcpProxy(real.hostname, Number(real.port || 3306));
    const viaProxy = new URL(database.url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const server = await startTestServer(engineByName.mysql, { database: { url: viaProxy.toString(), drop: async () => {} } });
    try {
      expect((await server.api.enqueue('t', 'x')).status).toBe(201);
      expect((await server.api.get('/readyz')).status).toBe(200);
      await proxy.cut();
      const ready = await server.api.get('/readyz');
      expectErrorBody(ready, 503);
      expect((await server.api.get('/healthz')).status).toBe(200);
      for (const res of [await server.api.enqueue('t', 'y'), await server.api.dequeue('t'), await server.api.get('/api/messages')]) {
        expectErrorBody(res, 503);
        expect(res.body.error).toBe('database unavailable');
      }
      // Metrics still answer (counters are in memory); only the database-backed gauges are missing.
      const metrics = await server.api.get('/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.text).toMatch(/conveyor_messages_enqueued_total\{[^}]*topic="t"[^}]*\} 1/);

      // When the database comes back, so does the service, without a restart.
      await proxy.restore();
      let readyAgain = 0;
      for (let i = 0; i < 100 && readyAgain !== 200; i++) {
        readyAgain = (await server.api.get('/readyz')).status;
        if (readyAgain !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(readyAgain).toBe(200);
      expect((await server.api.enqueue('t', 'z')).status).toBe(201);
      expect((await server.api.get('/api/messages?topic=t')).body.items.map((m: any) => m.payload)).toEqual(['x', 'z']);
    } finally {
      await server.close();
      await database.drop();
    }
  });
});

/** Every route the API serves (other features add theirs here too), with its path parameters filled in. */
const ROUTES = [
  '/healthz',
  '/readyz',
  '/api/version',
  '/api/auth/status',
  '/api/auth/login',
  '/api/auth/refresh',
  '/api/messages',
  '/api/messages/batch',
  '/api/messages/dequeue',
  '/api/messages/ack',
  '/api/messages/:id/ack',
  '/api/messages/:id/nack',
  '/api/messages/:id/visibility',
  '/api/messages/:id/requeue',
  '/api/messages/:id',
  '/api/topic-configs',
  '/api/topic-configs/:topic',
  '/api/topic-schemas',
  '/api/topic-schemas/:topic',
  '/api/stats',
  '/api/topics',
  '/api/topics/:topic/purge',
  '/api/topics/:topic/messages/by-key/:key',
  '/api/topics/:topic/consumer-groups',
  '/api/topics/:topic/consumer-groups/:group',
  '/api/topics/:topic/message-log',
  '/api/topics/:topic/replay',
  '/api/admin/expiry-reaper/run',
  '/api/admin/delete-reaper/run',
  '/api/admin/archive-reaper/run',
  '/api/admin/delete-reaper/schedule',
  '/api/users',
  '/api/users/:id',
  '/api/users/:id/grants',
  '/api/users/:id/grants/:grantId',
  '/api/users/:id/consumer-group-grants',
  '/api/users/:id/access-keys',
  '/api/users/:id/access-keys/:keyId',
];

/** The request fields of the SQS actions (src/sqs/actions), filled with hostile values. */
const SQS_FIELDS = [
  'QueueUrl', 'QueueName', 'Attributes', 'AttributeNames', 'MessageBody', 'DelaySeconds', 'MessageAttributes', 'MessageGroupId', 'MessageDeduplicationId',
  'Entries', 'ReceiptHandle', 'VisibilityTimeout', 'MaxNumberOfMessages', 'WaitTimeSeconds', 'MessageAttributeNames', 'MessageSystemAttributeNames',
  'QueueNamePrefix', 'MaxResults', 'NextToken',
];

const FIELDS = [
  'topic', 'payload', 'metadata', 'key', 'count', 'visibility_timeout_seconds', 'consumer_group', 'error', 'ids', 'messages',
  'statuses', 'schema_json', 'max_retries', 'message_ttl_seconds', 'max_depth', 'throughput_limit', 'replayable',
  'replay_window_seconds', 'from_time', 'schedule', 'username', 'password', 'is_admin', 'action', 'topic_pattern', 'before',
];
const HOSTILE_VALUES: unknown[] = [{}, [], [{}], -1, 1.5, 2 ** 53 + 2, true, '', 'x'.repeat(5000), '\u0000', null, '../../etc', '* FROM messages; --'];

/** Raw bodies and JSON objects whose every known field holds the same hostile value. */
const HOSTILE_BODIES: Array<[string, string]> = [
  ['malformed JSON', '{"a":'],
  ['a JSON array', '[1]'],
  ['a JSON string', '"x"'],
  ['JSON null', 'null'],
  ...HOSTILE_VALUES.map((v): [string, string] => [`every field = ${JSON.stringify(v).slice(0, 20)}`, JSON.stringify(Object.fromEntries(FIELDS.map((f) => [f, v])))]),
];

const PARAMS: Array<Record<string, string>> = [
  { id: MISSING_ID, grantId: MISSING_ID, topic: 'fz', key: 'k', group: 'g', keyId: 'CVAKAAAAAAAAAAAAAAAA' },
  { id: 'nope', grantId: '1', topic: 'a%2Fb', key: '%00', group: 'a%2Fb', keyId: 'cvak' },
  { id: '%ZZ', grantId: '%ZZ', topic: LONG_TOPIC, key: 'k'.repeat(300), group: 'g'.repeat(300), keyId: '%ZZ' },
];
/** The access-key routes answer 503 without a credentials key; with one they meet the hostile input. */
const CREDENTIALS_KEY = Buffer.alloc(32, 7).toString('base64');
const QUERIES = ['', '?limit=x&offset=-1', '?limit=1&limit=2&topic=a%2Fb&before=yesterday', '?before=2026-01-01T00:00:00Z&topic[x]=1'];

describeEachEngine('no request gets a 500', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine, { overrides: { queue: { max_payload_bytes: 1024 }, auth: { credentials_key: CREDENTIALS_KEY } } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it.each(ROUTES)('%s: every method, hostile bodies, odd parameters and queries', async (template) => {
    const failures: string[] = [];
    for (const params of PARAMS) {
      const path = template.replace(/:(\w+)/g, (_, name: string) => params[name]);
      for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH']) {
        const attempts: Array<[string, string | undefined]> = ['GET', 'DELETE'].includes(method) ? QUERIES.map((q) => [q, undefined]) : HOSTILE_BODIES.map(([, b]) => ['', b]);
        for (const [query, body] of attempts) {
          const res = await server.api.request(method, `${path}${query}`, body, body === undefined ? {} : { 'content-type': 'application/json' });
          const where = `${method} ${path}${query} ${body?.slice(0, 60) ?? ''} -> ${res.status} ${res.text.slice(0, 120)}`;
          if (res.status >= 500) failures.push(where);
          else if (res.status >= 400) {
            const shaped = (res.headers.get('content-type') ?? '').startsWith('application/json') && Object.keys(res.body ?? {}).join() === 'error' && typeof res.body.error === 'string' && res.body.error !== '';
            if (!shaped) failures.push(`badly shaped error: ${where}`);
            if (/\bER_[A-Z_]+|SQLITE_[A-Z]+|node_modules|\n\s+at /.test(res.text)) failures.push(`leaks internals: ${where}`);
          }
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it('the SQS-compatible API: every action, hostile bodies and headers, answered with AWS-style 4xx errors', async () => {
    const failures: string[] = [];
    const targets = [...SQS_ACTIONS.map((a) => `AmazonSQS.${a.name}`), 'AmazonSQS.Nope', 'Other.ListQueues', ''];
    const bodies = [...HOSTILE_BODIES.slice(0, 4).map(([, b]) => b), ...HOSTILE_VALUES.map((v) => JSON.stringify(Object.fromEntries(SQS_FIELDS.map((f) => [f, v]))))];
    // Queues that exist, so the requests get past "no such queue" to their fields.
    for (const [QueueName, Attributes] of [['fz', {}], ['fz.fifo', { FifoQueue: 'true' }]] as const) {
      const created = await server.api.request('POST', '/', JSON.stringify({ QueueName, Attributes }), { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.CreateQueue' });
      expect(created.status, created.text).toBe(200);
    }
    for (const path of ['/000000000000/fz', '/000000000000/fz.fifo']) {
      for (const target of targets) {
        for (const body of bodies) {
          const headers: Record<string, string> = { 'content-type': 'application/x-amz-json-1.0' };
          if (target) headers['x-amz-target'] = target;
          const res = await server.api.request('POST', path, body, headers);
          const where = `POST ${path} ${target} ${body.slice(0, 60)} -> ${res.status} ${res.text.slice(0, 160)}`;
          if (res.status >= 500) failures.push(where);
          else if (res.status >= 400) {
            if (!/^com\.amazonaws\.sqs#[A-Za-z]+$/.test(res.body?.__type ?? '') || typeof res.body.message !== 'string') failures.push(`badly shaped error: ${where}`);
            if (/\bER_[A-Z_]+|SQLITE_[A-Z]+|node_modules|\n\s+at /.test(res.text)) failures.push(`leaks internals: ${where}`);
          }
        }
      }
    }
    expect(failures).toEqual([]);
  });
});
