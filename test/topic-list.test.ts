import { afterAll, beforeAll, expect, it } from 'vitest';
import { createUser, startAuthServer, type AuthServer, type TestUser } from './helpers/auth.js';
import { describeEachEngine } from './helpers/engines.js';

const AVRO = '{"type":"record","name":"Click","fields":[{"name":"page","type":"string"}]}';
const MISSING_ID = '0190a5c4-0000-7000-8000-000000000000';

/** GET /api/topics and GET /api/messages/:id, with authentication on: what each caller may see of them. */
describeEachEngine('topic list and one message by id', (engine) => {
  let server: AuthServer;
  let reader: TestUser;
  let nobody: TestUser;
  let shopId: string;
  let deadId: string;

  beforeAll(async () => {
    server = await startAuthServer(engine);
    const admin = server.admin;
    // shop.orders: two pending, one processing; a schema and a configuration.
    expect((await admin.put('/api/topic-configs/shop.orders', { max_retries: 1 })).status).toBe(200);
    expect((await admin.put('/api/topic-schemas/shop.orders', { schema_json: AVRO })).status).toBe(200);
    await admin.post('/api/messages', { topic: 'shop.orders', payload: '{"page":"/b"}' });
    shopId = (await admin.post('/api/messages', { topic: 'shop.orders', payload: '{"page":"/a"}', key: 'k1', metadata: { source: 'shop' } })).body.id;
    await admin.post('/api/messages', { topic: 'shop.orders', payload: '{"page":"/c"}' });
    const [first] = (await admin.post('/api/messages/dequeue', { topic: 'shop.orders', count: 1 })).body.messages;
    // shop.orders.dlq: the first attempt of max_retries 1 failed; it moves and is no longer processing.
    await admin.post(`/api/messages/${first.id}/nack`, { error: 'boom' });
    deadId = (await admin.get('/api/messages?topic=shop.orders.dlq')).body.items[0].id;
    // fan: a fan-out topic, one group with a pending delivery. empty: only a configuration.
    expect((await admin.post('/api/topics/fan/consumer-groups', { consumer_group: 'billing' })).status).toBe(201);
    await admin.post('/api/messages', { topic: 'fan', payload: 'x' });
    expect((await admin.put('/api/topic-configs/empty', {})).status).toBe(200);
    reader = await createUser(server, ['read:shop.*']);
    nobody = await createUser(server, []);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('lists every topic with messages, a configuration, a schema or groups, with depth, age, groups and manager', async () => {
    const res = await server.admin.get('/api/topics');
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ total: 4, limit: 50, offset: 0 });
    expect(res.body.items.map((t: any) => t.topic)).toEqual(['empty', 'fan', 'shop.orders', 'shop.orders.dlq']);
    const [empty, fan, orders, dlq] = res.body.items;
    expect(orders).toMatchObject({
      topic: 'shop.orders',
      dead_letter: false,
      depth: { pending: 2, processing: 0, failed: 0, expired: 0 },
      configured: true,
      schema_version: 1,
      managed: false,
      managed_by: { config: null, schema: null },
      consumer_groups: [],
    });
    expect(orders.oldest_pending_age_seconds).toBeGreaterThanOrEqual(0);
    expect(orders.oldest_pending_age_seconds).toBeLessThan(600);
    expect(dlq).toMatchObject({ dead_letter: true, depth: { pending: 1 }, configured: false, schema_version: null });
    expect(empty).toMatchObject({ depth: { pending: 0, processing: 0, failed: 0, expired: 0 }, oldest_pending_age_seconds: null, configured: true });
    expect(fan.consumer_groups).toEqual([
      { consumer_group: 'billing', depth: { pending: 1, processing: 0, failed: 0 }, oldest_pending_age_seconds: expect.any(Number), managed_by: null },
    ]);
  });

  it('pages like every list, in name order', async () => {
    const first = (await server.admin.get('/api/topics?limit=2')).body;
    const second = (await server.admin.get('/api/topics?limit=2&offset=2')).body;
    expect(first).toMatchObject({ total: 4, limit: 2, offset: 0 });
    expect([...first.items, ...second.items].map((t: any) => t.topic)).toEqual(['empty', 'fan', 'shop.orders', 'shop.orders.dlq']);
    expect((await server.admin.get('/api/topics?offset=99')).body).toMatchObject({ items: [], total: 4 });
    expect((await server.admin.get('/api/topics?limit=0')).status).toBe(400);
    expect((await server.admin.get('/api/topics?offset=-1')).body).toEqual({ error: 'offset must not be negative' });
  });

  it('shows a caller only the topics it may read', async () => {
    const mine = (await reader.api.get('/api/topics')).body;
    expect(mine.items.map((t: any) => t.topic)).toEqual(['shop.orders', 'shop.orders.dlq']);
    expect(mine.total).toBe(2);
    expect((await nobody.api.get('/api/topics')).body).toMatchObject({ items: [], total: 0 });
    expect((await server.api.get('/api/topics')).status).toBe(401);
  });

  it('answers one message by id in the shape of the list', async () => {
    const listed = (await server.admin.get('/api/messages?topic=shop.orders&limit=200')).body.items.find((m: any) => m.id === shopId);
    expect(listed).toBeDefined();
    const one = await server.admin.get(`/api/messages/${shopId}`);
    expect(one.status, one.text).toBe(200);
    expect(one.body).toEqual(listed);
    expect(one.body).toMatchObject({ key: 'k1', metadata: { source: 'shop' }, status: 'pending' });
    // Upper case names the same message.
    expect((await server.admin.get(`/api/messages/${shopId.toUpperCase()}`)).body.id).toBe(shopId);
    expect((await reader.api.get(`/api/messages/${deadId}`)).body).toMatchObject({ topic: 'shop.orders.dlq', original_topic: 'shop.orders' });
  });

  it('answers 404 for an unknown or malformed id, and for a message the caller may not read', async () => {
    for (const id of [MISSING_ID, 'not-an-id', '123', 'x'.repeat(300)]) {
      const res = await server.admin.get(`/api/messages/${id}`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'message not found' });
    }
    const fanId = (await server.admin.get('/api/messages?topic=fan')).body.items[0].id;
    // The same answer as for an id that does not exist: nothing tells the caller the message is there.
    expect((await reader.api.get(`/api/messages/${fanId}`)).body).toEqual({ error: 'message not found' });
    expect((await reader.api.get(`/api/messages/${fanId}`)).status).toBe(404);
    expect((await nobody.api.get(`/api/messages/${shopId}`)).status).toBe(404);
    expect((await server.api.get(`/api/messages/${shopId}`)).status).toBe(401);
  });
});
