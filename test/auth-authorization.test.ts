import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { createUser, startAuthServer, type AuthServer, type TestUser } from './helpers/auth.js';
import { describeEachEngine } from './helpers/engines.js';
import type { ApiResponse } from './helpers/http.js';

const TOPICS = ['orders', 'orders.eu', 'ordersx', 'payments'];

function expectForbidden(res: ApiResponse, message = 'insufficient permissions'): void {
  expectErrorBody(res, 403);
  expect(res.body.error).toBe(message);
}

/** Authorised: whatever the queue then says (200, 204, 404, 422), it is not a refusal of the caller. */
function expectAllowed(res: ApiResponse): void {
  expect([401, 403], `${res.status}: ${res.text}`).not.toContain(res.status);
}

describeEachEngine('authorization by grants', (engine) => {
  let server: AuthServer;
  beforeAll(async () => {
    server = await startAuthServer(engine);
    for (const topic of TOPICS) expect((await server.admin.enqueue(topic, `${topic}-1`)).status).toBe(201);
  });
  afterAll(async () => {
    await server?.close();
  });

  const readable = async (user: TestUser) => {
    const results: string[] = [];
    for (const topic of TOPICS) {
      const res = await user.api.get(`/api/messages?topic=${topic}`);
      if (res.status === 200) results.push(topic);
      else expectForbidden(res);
    }
    return results;
  };

  it('matches patterns: *, <prefix>.*, <prefix>*, exact', async () => {
    expect(await readable(await createUser(server, ['read:*']))).toEqual(TOPICS);
    expect(await readable(await createUser(server, ['read:orders.*']))).toEqual(['orders', 'orders.eu']);
    expect(await readable(await createUser(server, ['read:orders*']))).toEqual(['orders', 'orders.eu', 'ordersx']);
    expect(await readable(await createUser(server, ['read:orders']))).toEqual(['orders']);
    expect(await readable(await createUser(server, ['read:payments', 'read:orders.eu']))).toEqual(['orders.eu', 'payments']);
    expect(await readable(await createUser(server, ['write:*', 'admin:*']))).toEqual([]);
  });

  it('a <prefix>.* grant covers the dead-letter topic <prefix>.dlq; an exact grant does not', async () => {
    await server.admin.put('/api/topic-configs/dl', { max_retries: 1 });
    const { body } = await server.admin.enqueue('dl', 'will fail');
    await server.admin.dequeue('dl');
    expect((await server.admin.post(`/api/messages/${body.id}/nack`, { error: 'boom' })).status).toBe(204);
    const prefix = await createUser(server, ['read:dl.*']);
    const exact = await createUser(server, ['read:dl']);
    expect((await prefix.api.get('/api/messages?topic=dl.dlq')).body.items.map((m: any) => m.id)).toEqual([body.id]);
    expectForbidden(await exact.api.get('/api/messages?topic=dl.dlq'));
  });

  it('read: lists (filtered without a topic) and stats for granted topics only; nothing else', async () => {
    const user = await createUser(server, ['read:orders.*']);
    const list = await user.api.get('/api/messages');
    expect(list.status).toBe(200);
    expect(new Set(list.body.items.map((m: any) => m.topic))).toEqual(new Set(['orders', 'orders.eu']));
    expect(list.body.total).toBe(list.body.items.length);
    const stats = await user.api.get('/api/stats');
    expect(new Set(stats.body.topics.map((s: any) => s.topic))).toEqual(new Set(['orders', 'orders.eu']));
    const all = await server.admin.get('/api/stats');
    expect(all.body.topics.map((s: any) => s.topic)).toContain('payments');

    expectForbidden(await user.api.enqueue('orders', 'x'));
    expectForbidden(await user.api.dequeue('orders'));
    expectForbidden(await user.api.get('/api/topic-configs/orders'));

    const nobody = await createUser(server);
    expect((await nobody.api.get('/api/messages')).body).toMatchObject({ items: [], total: 0 });
    expect((await nobody.api.get('/api/stats')).body).toEqual({ topics: [], consumer_groups: [], ordering: [] });
  });

  it('read: a list without a topic holds exactly the topics the grants match, case and underscores as they are', async () => {
    const topics = ['scope', 'scope.a', 'scopeb', 'scope_c', 'Scope.a', 'scopf', 'scope-d.x'];
    expect((await server.admin.post('/api/messages/batch', { messages: topics.map((topic) => ({ topic, payload: topic })) })).status).toBe(201);
    const listed = async (grants: string[], query = '') => {
      const res = await (await createUser(server, grants)).api.get(`/api/messages?limit=200${query}`);
      expect(res.status, res.text).toBe(200);
      expect(res.body.total).toBe(res.body.items.length);
      return res.body.items.map((m: any) => m.topic).sort();
    };
    expect(await listed(['read:scope.*'])).toEqual(['scope', 'scope.a']);
    expect(await listed(['read:scope*'])).toEqual(['scope', 'scope-d.x', 'scope.a', 'scope_c', 'scopeb']);
    expect(await listed(['read:scope_c', 'read:Scope.*'])).toEqual(['Scope.a', 'scope_c']);
    expect(await listed(['read:scopf', 'write:scope*'])).toEqual(['scopf']);
    expect(await listed(['read:scope.*'], '&status=processing')).toEqual([]);
    // A name no topic can have is refused as such (400) before any grant is looked at, as for an admin.
    const reader = await createUser(server, ['read:scope.*']);
    for (const bad of ['a%20b', '', 'x'.repeat(256)]) expectErrorBody(await reader.api.get(`/api/messages?topic=${bad}`), 400);
  });

  it('read: the consumer groups of /api/stats are filtered like its topics', async () => {
    expect((await server.admin.enqueue('ledger.eu', 'x')).status).toBe(201);
    expect((await server.admin.enqueue('ledger.us', 'y')).status).toBe(201);
    for (const topic of ['ledger.eu', 'ledger.us']) expect((await server.admin.post(`/api/topics/${topic}/consumer-groups`, { consumer_group: 'audit' })).status).toBe(201);
    const user = await createUser(server, ['read:ledger.eu']);
    const stats = (await user.api.get('/api/stats')).body;
    expect(stats.topics).toEqual([{ topic: 'ledger.eu', status: 'pending', count: 1 }]);
    expect(stats.consumer_groups).toEqual([{ topic: 'ledger.eu', consumer_group: 'audit', status: 'pending', count: 1 }]);
    const all = (await server.admin.get('/api/stats')).body;
    expect(all.consumer_groups.map((g: any) => g.topic).sort()).toEqual(['ledger.eu', 'ledger.us']);
  });

  it('write: enqueue, dequeue, ack, nack and requeue on granted topics only', async () => {
    const user = await createUser(server, ['write:orders']);
    expect((await user.api.enqueue('orders', 'w1')).status).toBe(201);
    expectForbidden(await user.api.enqueue('payments', 'w1'));
    expectForbidden(await user.api.enqueue('orders.eu', 'w1'));
    expectForbidden(await user.api.get('/api/messages?topic=orders'));

    const got = await user.api.dequeue('orders', { count: 2 });
    expect(got.status).toBe(200);
    expect(got.body.messages).toHaveLength(2);
    expect((await user.api.post(`/api/messages/${got.body.messages[0].id}/ack`)).status).toBe(204);
    expect((await user.api.post(`/api/messages/${got.body.messages[1].id}/nack`, { error: 'retry' })).status).toBe(204);
    expectForbidden(await user.api.dequeue('payments'));

    // Messages of a topic the user may not write: ack and nack by id are refused, batch too.
    const foreign = (await server.admin.dequeue('payments')).body.messages[0];
    expectForbidden(await user.api.post(`/api/messages/${foreign.id}/ack`));
    expectForbidden(await user.api.post(`/api/messages/${foreign.id}/nack`, { error: 'x' }));
    expectForbidden(await user.api.post('/api/messages/ack', { ids: [foreign.id] }));
    expect((await server.admin.post(`/api/messages/${foreign.id}/nack`, {})).status).toBe(204);

    // Unknown ids stay 404 for everyone.
    expectErrorBody(await user.api.post('/api/messages/00000000-0000-4000-8000-000000000000/ack'), 404);

    // Batch enqueue needs write on every topic named.
    expectForbidden(await user.api.post('/api/messages/batch', { messages: [{ topic: 'orders', payload: 'a' }, { topic: 'payments', payload: 'b' }] }));
    expect((await user.api.post('/api/messages/batch', { messages: [{ topic: 'orders', payload: 'a' }] })).status).toBe(201);
  });

  it('an ack of a message dequeued here is checked on its topic, and needs a grant on the dead-letter topic once the message moved there', async () => {
    const user = await createUser(server, ['write:moving']);
    for (const payload of ['kept', 'moved']) expect((await user.api.enqueue('moving', payload)).status).toBe(201);
    const [kept, moved] = (await user.api.dequeue('moving', { count: 2 })).body.messages;
    // Another user, without a grant on the topic, is refused although the ack names a message dequeued here.
    expectForbidden(await (await createUser(server, ['write:orders'])).api.post(`/api/messages/${kept.id}/ack`));
    expect((await user.api.post(`/api/messages/${kept.id.toUpperCase()}/ack`)).status).toBe(204);
    expectErrorBody(await user.api.post(`/api/messages/${kept.id}/ack`), 404);

    // Moved to the dead-letter topic (and claimed there) by another instance, which this one does not hear of.
    expect(await server.db('messages').where({ id: moved.id }).update({ topic: 'moving.dlq', original_topic: 'moving' })).toBe(1);
    expectForbidden(await user.api.post(`/api/messages/${moved.id}/ack`));
    expect(await server.db('messages').where({ id: moved.id, topic: 'moving.dlq', status: 'processing' }).count({ n: '*' })).toEqual([{ n: 1 }]);
    expect((await server.admin.post(`/api/messages/${moved.id}/ack`)).status).toBe(204);
  });

  it('a batch ack of messages dequeued here acks nothing when another id lies on a topic the caller may not consume', async () => {
    const secret = (await server.admin.enqueue('payments', 'batch-secret')).body.id as string;
    const user = await createUser(server, ['write:batchheld']);
    for (const payload of ['a', 'b']) expect((await user.api.enqueue('batchheld', payload)).status).toBe(201);
    const ids = (await user.api.dequeue('batchheld', { count: 2 })).body.messages.map((m: { id: string }) => m.id);
    const processing = async (id: string) => Number((await server.db('messages').where({ id, status: 'processing' }).count({ n: '*' }))[0].n);
    expect((await server.admin.dequeue('payments', { count: 10 })).body.messages.map((m: { id: string }) => m.id)).toContain(secret);

    expectForbidden(await user.api.post('/api/messages/ack', { ids: [...ids, secret] }));
    for (const id of [...ids, secret]) expect(await processing(id)).toBe(1);
    // Another user, without a grant on the topic, is refused although the ids were dequeued here.
    expectForbidden(await (await createUser(server, ['write:orders'])).api.post('/api/messages/ack', { ids }));
    for (const id of ids) expect(await processing(id)).toBe(1);

    const unknown = '00000000-0000-4000-8000-000000000000';
    const res = await user.api.post('/api/messages/ack', { ids: [ids[1], unknown, ids[0].toUpperCase(), ids[1]] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ acked: [ids[1], ids[0].toUpperCase(), ids[1]], not_found: [unknown] });
    for (const id of ids) expect(await processing(id)).toBe(0);
    expect((await user.api.post('/api/messages/ack', { ids })).body).toEqual({ acked: [], not_found: ids });
    expect((await server.admin.post(`/api/messages/${secret}/ack`)).status).toBe(204);
  });

  it('a batch ack needs a grant on the dead-letter topic for a message dequeued here that moved there, and still acks the others', async () => {
    const user = await createUser(server, ['write:batchmove']);
    for (const payload of ['kept', 'moved']) expect((await user.api.enqueue('batchmove', payload)).status).toBe(201);
    const [kept, moved] = (await user.api.dequeue('batchmove', { count: 2 })).body.messages;
    expect(await server.db('messages').where({ id: moved.id }).update({ topic: 'batchmove.dlq', original_topic: 'batchmove' })).toBe(1);
    expectForbidden(await user.api.post('/api/messages/ack', { ids: [kept.id, moved.id] }));
    expect(await server.db('messages').where({ id: moved.id, topic: 'batchmove.dlq', status: 'processing' }).count({ n: '*' })).toEqual([{ n: 1 }]);
    expect(await server.db('messages').where({ id: kept.id }).count({ n: '*' })).toEqual([{ n: 0 }]);
    expect((await server.admin.post('/api/messages/ack', { ids: [moved.id] })).body).toEqual({ acked: [moved.id], not_found: [] });
  });

  it('write: requeue of a dead letter with write on its original topic or on the dead-letter topic', async () => {
    await server.admin.put('/api/topic-configs/rq', { max_retries: 1 });
    const deadLetter = async () => {
      const { body } = await server.admin.enqueue('rq', 'fails');
      for (const m of (await server.admin.dequeue('rq', { count: 10 })).body.messages) await server.admin.post(`/api/messages/${m.id}/nack`, {});
      return body.id as string;
    };
    const owner = await createUser(server, ['write:rq']);
    const dlqWriter = await createUser(server, ['write:rq.dlq']);
    const stranger = await createUser(server, ['write:orders', 'read:*']);
    const first = await deadLetter();
    expectForbidden(await stranger.api.post(`/api/messages/${first}/requeue`));
    expect((await owner.api.post(`/api/messages/${first}/requeue`)).status).toBe(204);
    expect((await dlqWriter.api.post(`/api/messages/${await deadLetter()}/requeue`)).status).toBe(204);
  });

  it('admin grant: configuration and schema of matching topics, lists filtered; not messages', async () => {
    const user = await createUser(server, ['admin:pay*']);
    expect((await user.api.put('/api/topic-configs/payments', { max_retries: 5 })).status).toBe(200);
    expect((await user.api.get('/api/topic-configs/payments')).body.max_retries).toBe(5);
    expectForbidden(await user.api.put('/api/topic-configs/orders', { max_retries: 5 }));
    expectForbidden(await user.api.get('/api/topic-configs/rq'));
    expectForbidden(await user.api.delete('/api/topic-configs/rq'));
    const schema = JSON.stringify({ type: 'record', name: 'P', fields: [{ name: 'amount', type: 'int' }] });
    expect((await user.api.put('/api/topic-schemas/payments', { schema_json: schema })).status).toBe(200);
    expect((await user.api.get('/api/topic-schemas/payments')).status).toBe(200);
    expectForbidden(await user.api.put('/api/topic-schemas/orders', { schema_json: schema }));
    expectForbidden(await user.api.get('/api/topic-schemas/orders'));
    await server.admin.put('/api/topic-schemas/orders', { schema_json: schema });

    expect((await user.api.get('/api/topic-configs')).body.items.map((c: any) => c.topic)).toEqual(['payments']);
    expect((await user.api.get('/api/topic-schemas')).body.items.map((c: any) => c.topic)).toEqual(['payments']);
    expect((await server.admin.get('/api/topic-configs')).body.items.map((c: any) => c.topic)).toEqual(expect.arrayContaining(['dl', 'payments', 'rq']));
    expect((await user.api.delete('/api/topic-schemas/payments')).status).toBe(204);
    expect((await user.api.delete('/api/topic-configs/payments')).status).toBe(204);
    expectForbidden(await user.api.enqueue('payments', '{"amount":1}'));
    expectForbidden(await user.api.get('/api/messages?topic=payments'));
  });

  it('consume: a consume grant restricts the topic to its groups, also when write is granted', async () => {
    const restricted = await createUser(server, ['write:orders', 'consume:orders:billing']);
    expectForbidden(await restricted.api.dequeue('orders'));
    expectForbidden(await restricted.api.dequeue('orders', { consumer_group: 'shipping' }));
    expectAllowed(await restricted.api.dequeue('orders', { consumer_group: 'billing' }));
    // The restriction is per topic: write elsewhere stays unrestricted.
    const mixed = await createUser(server, ['write:*', 'consume:orders:billing']);
    expect((await mixed.api.dequeue('ordersx')).status).toBe(200);
    expectForbidden(await mixed.api.dequeue('orders'));
    expectAllowed(await mixed.api.dequeue('orders', { consumer_group: 'billing' }));
  });

  it('consume: several consume grants allow each of their groups and no other', async () => {
    const user = await createUser(server, ['consume:orders:billing', 'consume:orders:shipping', 'consume:pay*:audit']);
    expectAllowed(await user.api.dequeue('orders', { consumer_group: 'billing' }));
    expectAllowed(await user.api.dequeue('orders', { consumer_group: 'shipping' }));
    expectForbidden(await user.api.dequeue('orders', { consumer_group: 'audit' }));
    expectAllowed(await user.api.dequeue('payments', { consumer_group: 'audit' }));
    expectForbidden(await user.api.dequeue('payments', { consumer_group: 'billing' }));
    expectForbidden(await user.api.dequeue('orders.eu', { consumer_group: 'billing' }));
    // consume is not write: no enqueue.
    expectForbidden(await user.api.enqueue('orders', 'x'));
  });

  it('consume: ack and nack by id need the granted group when the topic is restricted', async () => {
    const user = await createUser(server, ['write:orders', 'consume:orders:billing']);
    await server.admin.enqueue('orders', 'for ack');
    const message = (await server.admin.dequeue('orders')).body.messages[0];
    expectForbidden(await user.api.post(`/api/messages/${message.id}/ack`));
    expectForbidden(await user.api.post(`/api/messages/${message.id}/ack`, { consumer_group: 'shipping' }));
    expectForbidden(await user.api.post(`/api/messages/${message.id}/nack`, { error: 'x' }));
    expectForbidden(await user.api.post('/api/messages/ack', { ids: [message.id] }));
    expectAllowed(await user.api.post(`/api/messages/${message.id}/nack`, { error: 'x', consumer_group: 'billing' }));
  });

  it('a write grant without consume grants allows any consumer group', async () => {
    const user = await createUser(server, ['write:orders']);
    expectAllowed(await user.api.dequeue('orders', { consumer_group: 'anything' }));
  });

  it('non-admins get 403 "admin access required" on admin endpoints, whatever their grants', async () => {
    const user = await createUser(server, ['read:*', 'write:*', 'admin:*']);
    for (const res of [
      await user.api.post('/api/topics/orders/purge', {}),
      await user.api.delete('/api/topics/orders/messages/by-key/k1'),
      await user.api.get('/api/users'),
      await user.api.post('/api/admin/expiry-reaper/run'),
      await user.api.post('/api/admin/delete-reaper/run'),
      await user.api.post('/api/admin/archive-reaper/run'),
      await user.api.get('/api/admin/delete-reaper/schedule'),
      await user.api.put('/api/admin/delete-reaper/schedule', { schedule: '' }),
      await user.api.get('/api/topics/orders/message-log'),
      await user.api.delete('/api/topics/orders/message-log?before=2030-01-01T00:00:00.000Z'),
      await user.api.post('/api/topics/orders/replay', {}),
    ]) {
      expectForbidden(res, 'admin access required');
    }
    expect((await server.admin.post('/api/topics/ordersx/purge', {})).status).toBe(200);
    expect((await server.admin.post('/api/admin/expiry-reaper/run')).status).toBe(200);
    expect((await server.admin.get('/api/admin/delete-reaper/schedule')).status).toBe(200);
    expect((await server.admin.get('/api/topics/orders/message-log')).status).toBe(200);
    expect((await server.admin.delete('/api/topics/orders/messages/by-key/k1')).status).toBe(200);
  });

  it('an admin user bypasses every grant check', async () => {
    const admin = await createUser(server, [], true);
    expect((await admin.api.enqueue('anything', 'x')).status).toBe(201);
    expect((await admin.api.get('/api/messages?topic=anything')).body.total).toBe(1);
    expect((await admin.api.dequeue('anything')).body.messages).toHaveLength(1);
    expect((await admin.api.put('/api/topic-configs/anything', {})).status).toBe(200);
  });

  it('grant changes apply to the next request', async () => {
    const user = await createUser(server);
    expectForbidden(await user.api.get('/api/messages?topic=orders'));
    const grant = await server.admin.post(`/api/users/${user.id}/grants`, { action: 'read', topic_pattern: 'orders' });
    expect((await user.api.get('/api/messages?topic=orders')).status).toBe(200);
    await server.admin.delete(`/api/users/${user.id}/grants/${grant.body.id}`);
    expectForbidden(await user.api.get('/api/messages?topic=orders'));
  });

  it('admin grant on a topic: its consumer groups; a consume-restricted user works through its registered group', async () => {
    const topicAdmin = await createUser(server, ['admin:cg*']);
    const reader = await createUser(server, ['read:*']);
    expect((await topicAdmin.api.post('/api/topics/cg/consumer-groups', { consumer_group: 'billing' })).status).toBe(201);
    expect((await topicAdmin.api.get('/api/topics/cg/consumer-groups')).body.items).toEqual(['billing']);
    expectForbidden(await topicAdmin.api.post('/api/topics/orders/consumer-groups', { consumer_group: 'billing' }));
    expectForbidden(await reader.api.get('/api/topics/cg/consumer-groups'));
    expectForbidden(await reader.api.delete('/api/topics/cg/consumer-groups/billing'));

    const consumer = await createUser(server, ['consume:cg:billing']);
    const producer = await createUser(server, ['write:cg']);
    const { body } = await producer.api.enqueue('cg', 'fan-out');
    expectForbidden(await consumer.api.dequeue('cg', { consumer_group: 'other' }));
    const got = await consumer.api.dequeue('cg', { consumer_group: 'billing' });
    expect(got.status, got.text).toBe(200);
    expect(got.body.messages.map((m: any) => m.id)).toEqual([body.id]);
    expectForbidden(await consumer.api.post(`/api/messages/${body.id}/ack`, { consumer_group: 'other' }));
    expect((await consumer.api.post(`/api/messages/${body.id}/ack`, { consumer_group: 'billing' })).status).toBe(204);

    expect((await topicAdmin.api.post('/api/topics/cg/consumer-groups', { consumer_group: 'audit' })).status).toBe(201);
    expect((await topicAdmin.api.delete('/api/topics/cg/consumer-groups/audit')).status).toBe(204);
  });
});
