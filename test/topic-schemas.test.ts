import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { expectGrpcError, QueueClient } from './helpers/grpc.js';
import { enqueueId, findMessage, RFC3339_MS } from './helpers/messages.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const ORDER_SCHEMA = JSON.stringify({
  type: 'record',
  name: 'Order',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'amount', type: 'double' },
    { name: 'note', type: ['null', 'string'] },
    { name: 'customer', type: { type: 'record', name: 'Customer', fields: [{ name: 'name', type: 'string' }] } },
  ],
});

const validOrder = (overrides: Record<string, unknown> = {}) =>
  JSON.stringify({ id: 'o-1', amount: 9.5, note: null, customer: { name: 'Ada' }, ...overrides });

describeEachEngine('topic schemas', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  const putSchema = (topic: string, schema_json: unknown) => server.api.put(`/api/topic-schemas/${topic}`, { schema_json });

  describe('registration', () => {
    it('stores a schema as version 1 and answers with the stored object', async () => {
      const res = await putSchema('ts-store', ORDER_SCHEMA);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ topic: 'ts-store', schema_json: ORDER_SCHEMA, version: 1, updated_at: expect.stringMatching(RFC3339_MS), managed_by: null });
      expect(Math.abs(Date.parse(res.body.updated_at) - Date.now())).toBeLessThan(60_000);
      const one = await server.api.get('/api/topic-schemas/ts-store');
      expect(one.status).toBe(200);
      expect(one.body).toEqual(res.body);
    });

    it('raises the version by one on every PUT', async () => {
      const versions = [];
      for (const type of ['string', 'int', 'string']) {
        const res = await putSchema('ts-versions', JSON.stringify(type));
        expect(res.status).toBe(200);
        versions.push(res.body.version);
      }
      expect(versions).toEqual([1, 2, 3]);
      const one = await server.api.get('/api/topic-schemas/ts-versions');
      expect(one.body).toMatchObject({ version: 3, schema_json: '"string"' });
    });

    it('continues the version after a DELETE, so no number ever names two schemas of a topic', async () => {
      expect((await putSchema('ts-again', '"string"')).body.version).toBe(1);
      expect((await putSchema('ts-again', '"int"')).body.version).toBe(2);
      expect((await server.api.delete('/api/topic-schemas/ts-again')).status).toBe(204);
      expectErrorBody(await server.api.get('/api/topic-schemas/ts-again'), 404);
      expect((await putSchema('ts-again', '"long"')).body).toMatchObject({ version: 3, schema_json: '"long"' });
      expect((await server.api.delete('/api/topic-schemas/ts-again')).status).toBe(204);
      expect((await putSchema('ts-again', '"string"')).body.version).toBe(4);
      // Another topic's history is its own.
      expect((await putSchema('ts-again-other', '"string"')).body.version).toBe(1);
    });

    it('lists schemas under items', async () => {
      await putSchema('ts-listed', ORDER_SCHEMA);
      const res = await server.api.get('/api/topic-schemas');
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['items']);
      expect(res.body.items.find((s: any) => s.topic === 'ts-listed')).toEqual({
        topic: 'ts-listed',
        schema_json: ORDER_SCHEMA,
        version: 1,
        updated_at: expect.stringMatching(RFC3339_MS),
        managed_by: null,
      });
    });

    it('answers GET of a topic without a schema with 404', async () => {
      expectErrorBody(await server.api.get('/api/topic-schemas/ts-none'), 404);
    });

    it.each([
      ['text that is not JSON', 'not json'],
      ['an unknown type', JSON.stringify({ type: 'nope' })],
      ['a record without fields', JSON.stringify({ type: 'record', name: 'X' })],
      ['a field without a type', JSON.stringify({ type: 'record', name: 'X', fields: [{ name: 'a' }] })],
      ['an empty string', ''],
      ['a JSON object instead of a string', { type: 'string' }],
      ['a number', 5],
      // avsc finds these on Object.prototype: a schema that named them compiled and then failed every enqueue with 500.
      ['a type name every JavaScript object has', '"toString"'],
      ['a field typed by such a name', JSON.stringify({ type: 'record', name: 'X', fields: [{ name: 'a', type: 'hasOwnProperty' }] })],
    ])('rejects %s with 400 and stores nothing', async (_what, schema) => {
      expectErrorBody(await putSchema('ts-invalid', schema), 400);
      expectErrorBody(await server.api.get('/api/topic-schemas/ts-invalid'), 404);
    });

    it('refuses a field or enum symbol named like a property of every JavaScript object, saying why', async () => {
      for (const schema of [
        { type: 'enum', name: 'Role', symbols: ['constructor', 'admin'] },
        { type: 'record', name: 'X', fields: [{ name: 'toString', type: 'int', default: 0 }] },
      ]) {
        const res = await putSchema('ts-reserved', JSON.stringify(schema));
        expectErrorBody(res, 400);
        expect(res.body.error).toMatch(/a property every JavaScript object has/);
      }
      expectErrorBody(await server.api.get('/api/topic-schemas/ts-reserved'), 404);
    });

    it('rejects a body without schema_json with 400', async () => {
      expectErrorBody(await server.api.put('/api/topic-schemas/ts-invalid', {}), 400);
    });

    it('rejects an invalid schema without touching the stored one', async () => {
      await putSchema('ts-keep', '"string"');
      expectErrorBody(await putSchema('ts-keep', '{"type":"nope"}'), 400);
      expect((await server.api.get('/api/topic-schemas/ts-keep')).body).toMatchObject({ version: 1, schema_json: '"string"' });
    });

    it('rejects a schema for a .dlq topic with 400', async () => {
      expectErrorBody(await putSchema('ts-orders.dlq', '"string"'), 400);
    });
  });

  describe('validation of enqueued payloads', () => {
    beforeAll(async () => {
      expect((await putSchema('ts-orders', ORDER_SCHEMA)).status).toBe(200);
    });

    it('accepts a payload that fits the schema and stores it verbatim', async () => {
      const payload = validOrder();
      const id = await enqueueId(server.api, 'ts-orders', payload);
      expect((await findMessage(server.api, 'ts-orders', id)).payload).toBe(payload);
    });

    it('unwraps unions: ["null","string"] takes null or a plain string', async () => {
      await enqueueId(server.api, 'ts-orders', validOrder({ note: null }));
      await enqueueId(server.api, 'ts-orders', validOrder({ note: 'leave at the door' }));
      expectErrorBody(await server.api.enqueue('ts-orders', validOrder({ note: 5 })), 422);
    });

    it.each([
      ['a field of the wrong type', validOrder({ amount: 'ten' }), /"amount"/],
      ['a missing field', JSON.stringify({ id: 'o-1', note: null, customer: { name: 'Ada' } }), /"amount"/],
      ['a field the schema does not declare', validOrder({ coupon: 'X' }), /"coupon"/],
      ['a wrong nested field', validOrder({ customer: { name: 7 } }), /"customer\.name"/],
      ['an undeclared nested field', validOrder({ customer: { name: 'Ada', age: 3 } }), /"customer\.age"/],
    ])('rejects %s with 422 naming the field', async (_what, payload, field) => {
      const res = await server.api.enqueue('ts-orders', payload);
      expectErrorBody(res, 422);
      expect(res.body.error).toMatch(field);
    });

    it('names the first offending field when several are wrong', async () => {
      const res = await server.api.enqueue('ts-orders', validOrder({ id: 1, amount: 'ten' }));
      expectErrorBody(res, 422);
      expect(res.body.error).toMatch(/"id"/);
      expect(res.body.error).not.toMatch(/amount/);
    });

    it.each([
      ['not JSON', 'id=o-1'],
      ['a JSON array', '[]'],
      ['a JSON string', '"o-1"'],
    ])('rejects a payload that is %s with 422', async (_what, payload) => {
      expectErrorBody(await server.api.enqueue('ts-orders', payload), 422);
    });

    it('over gRPC, whose payload is bytes, a payload that is not UTF-8 is no JSON: INVALID_ARGUMENT, nothing stored', async () => {
      const client = new QueueClient(server.server.grpcPort);
      try {
        const broken = Buffer.concat([Buffer.from('{"id":"'), Buffer.from([0xff, 0xfe]), Buffer.from('","amount":1,"note":null,"customer":{"name":"Ada"}}')]);
        expect((await putSchema('ts-bytes', ORDER_SCHEMA)).status).toBe(200);
        await expectGrpcError(
          client.call('Enqueue', { topic: 'ts-bytes', payload: broken }),
          status.INVALID_ARGUMENT,
          /^payload does not match the topic schema: payload is not valid JSON \(its bytes are not UTF-8\)$/,
        );
        // U+FFFD sent as such is text like any other.
        const replacement = Buffer.from(validOrder({ id: '\ufffd' }));
        const { id } = await client.call('Enqueue', { topic: 'ts-bytes', payload: replacement });
        expect((await server.api.get('/api/messages?topic=ts-bytes')).body.items.map((m: { id: string }) => m.id)).toEqual([id]);
      } finally {
        client.close();
      }
    });

    it('validates every message of a batch, all or nothing', async () => {
      const res = await server.api.post('/api/messages/batch', {
        messages: [
          { topic: 'ts-batch', payload: 'anything' },
          { topic: 'ts-orders', payload: validOrder({ amount: 'ten' }) },
        ],
      });
      expectErrorBody(res, 422);
      expect((await server.api.get('/api/messages?topic=ts-batch')).body.items).toEqual([]);
    });

    it('leaves topics without a schema unvalidated', async () => {
      await enqueueId(server.api, 'ts-free', 'not json at all');
    });

    it('takes no undeclared field, enum symbol or union branch because a JavaScript object has a property of that name', async () => {
      await putSchema(
        'ts-proto',
        JSON.stringify({
          type: 'record',
          name: 'P',
          fields: [
            { name: 'a', type: 'int' },
            { name: 'color', type: { type: 'enum', name: 'Color', symbols: ['RED', 'BLUE'] }, default: 'RED' },
            { name: 'n', type: ['null', 'int', 'double'], default: null },
          ],
        }),
      );
      for (const [payload, field] of [
        ['{"a":1,"constructor":"x"}', /"constructor" is not declared/],
        ['{"a":1,"__proto__":{"polluted":true}}', /"__proto__" is not declared/],
        ['{"a":1,"color":"toString"}', /"color" has the wrong type \(expected enum Color\)/],
        ['{"a":1,"color":["RED"]}', /"color" has the wrong type/],
        // A wrapped union with such a key was a TypeError: 500.
        ['{"a":1,"n":{"toString":1}}', /"n" has the wrong type \(expected one of null, int, double\)/],
        ['[]', /the payload value has the wrong type \(expected record P\)/],
      ] as const) {
        const res = await server.api.enqueue('ts-proto', payload);
        expectErrorBody(res, 422);
        expect(res.body.error).toMatch(field);
      }
      // Unions take a bare value of any branch, also where avsc cannot tell the branches apart (int, double),
      // and there the wrapped form too; numbers must fit their type.
      for (const payload of ['{"a":1,"n":2}', '{"a":1,"n":2.5}', '{"a":1,"n":{"double":2.5}}', '{"a":-2147483648,"color":"BLUE"}']) await enqueueId(server.api, 'ts-proto', payload);
      for (const payload of ['{"a":2147483648}', '{"a":1.5}', '{"a":1,"n":"2"}']) expectErrorBody(await server.api.enqueue('ts-proto', payload), 422);
    });

    it('checks a payload against a union of two recursive records in time that grows with its size, not twice per level', async () => {
      const linked = { type: 'record', name: 'N', fields: [{ name: 'next', type: ['null', 'N', { type: 'record', name: 'M', fields: [{ name: 'next', type: ['null', 'N', 'M'] }] }] }] };
      await putSchema('ts-linked', JSON.stringify(linked));
      const nested = (depth: number, leaf: string) => '{"next":'.repeat(depth) + leaf + '}'.repeat(depth);
      // Checked branch by branch at every level without remembering, this took 2^60 steps.
      expectErrorBody(await server.api.enqueue('ts-linked', nested(60, '"bad"')), 422);
      await enqueueId(server.api, 'ts-linked', nested(60, 'null'));
    });

    it('names the first offending field in the order of the payload, before any undeclared one after it', async () => {
      const res = await server.api.enqueue('ts-orders', JSON.stringify({ id: 1, amount: 'ten', note: null, customer: { name: 'Ada' }, extra: 1 }));
      expectErrorBody(res, 422);
      expect(res.body.error).toMatch(/"id"/);
    });

    it('validates a primitive schema too', async () => {
      await putSchema('ts-primitive', '"long"');
      await enqueueId(server.api, 'ts-primitive', '42');
      expectErrorBody(await server.api.enqueue('ts-primitive', '"42"'), 422);
    });
  });

  it('stops validating once the schema is deleted (204), and GET answers 404 again', async () => {
    await putSchema('ts-delete', ORDER_SCHEMA);
    expectErrorBody(await server.api.enqueue('ts-delete', 'free text'), 422);
    const res = await server.api.delete('/api/topic-schemas/ts-delete');
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    await enqueueId(server.api, 'ts-delete', 'free text');
    expectErrorBody(await server.api.get('/api/topic-schemas/ts-delete'), 404);
    expect((await server.api.get('/api/topic-schemas')).body.items.find((s: any) => s.topic === 'ts-delete')).toBeUndefined();
  });

  it('applies a replaced schema to the next enqueue', async () => {
    await putSchema('ts-replace', '"string"');
    await enqueueId(server.api, 'ts-replace', '"text"');
    await putSchema('ts-replace', '"int"');
    expectErrorBody(await server.api.enqueue('ts-replace', '"text"'), 422);
    await enqueueId(server.api, 'ts-replace', '7');
  });
});
