import { status } from '@grpc/grpc-js';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createUser, startAuthServer, type AuthServer } from './helpers/auth.js';
import { engineByName } from './helpers/engines.js';
import { describeGalera, startGaleraCluster, type GaleraCluster, type GaleraDatabase } from './helpers/galera.js';
import { expectGrpcError, QueueClient, sleep } from './helpers/grpc.js';

// Grants on a node that has not applied the message yet. Galera applies other nodes' commits asynchronously,
// so an ack through one node may name a message it does not know yet; the settle then waits for the node to
// catch up and looks again. The grant check must wait the same way: checking the topics it could read (none)
// and then settling what the catch-up found would ack a message on a topic the caller may not consume.
// The lag is made certain, not waited for: FLUSH TABLES WITH READ LOCK on the second node pauses its appliers
// (the node desyncs; the rest of the cluster goes on) until UNLOCK TABLES.

describeGalera('grants checked on a node that has not applied the message yet [galera]', () => {
  let cluster: GaleraCluster;
  let database: GaleraDatabase;
  let a: AuthServer;
  let b: AuthServer;

  beforeAll(async () => {
    cluster = await startGaleraCluster({ nodes: 2 });
    database = await cluster.createDatabase();
    const on = (node: number) => ({ url: database.urlOn(node), drop: async () => {} });
    // One after the other: the first bootstraps the admin user, the second finds it.
    a = await startAuthServer(engineByName.mysql, { database: on(0) });
    b = await startAuthServer(engineByName.mysql, { database: on(1) });
  }, 120_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await cluster?.stopAll();
  });

  it('a batch ack, gRPC Ack, AckBatch and Nack of a message on a topic the caller may not consume are refused, and settle nothing', async () => {
    const mallory = await createUser(a, ['write:mine']);
    const lock = await mysql.createConnection(database.urlOn(1));
    const client = new QueueClient(b.server.grpcPort, mallory.token);
    try {
      await lock.query('FLUSH TABLES WITH READ LOCK');
      const enqueued = await a.admin.post('/api/messages/batch', { messages: [1, 2, 3, 4].map((i) => ({ topic: 'theirs', payload: `m${i}` })) });
      expect(enqueued.status, enqueued.text).toBe(201);
      const dequeued = await a.admin.post('/api/messages/dequeue', { topic: 'theirs', count: 4 });
      expect(dequeued.status, dequeued.text).toBe(200);
      const ids: string[] = dequeued.body.messages.map((m: { id: string }) => m.id);
      expect(ids).toHaveLength(4);
      // The control: the second node does not have them yet.
      const [seen] = await lock.query<mysql.RowDataPacket[]>('SELECT COUNT(*) AS n FROM messages WHERE id IN (?)', [ids]);
      expect(Number(seen[0].n)).toBe(0);

      const answers = Promise.all([
        b.api.withToken(mallory.token).post('/api/messages/ack', { ids: [ids[0]] }),
        expectGrpcError(client.call('Ack', { id: ids[1] }), status.PERMISSION_DENIED, /insufficient permissions/),
        expectGrpcError(client.call('AckBatch', { ids: [ids[2]] }), status.PERMISSION_DENIED, /insufficient permissions/),
        expectGrpcError(client.call('Nack', { id: ids[3], error: 'no' }), status.PERMISSION_DENIED, /insufficient permissions/),
      ]);
      await sleep(500);
      await lock.query('UNLOCK TABLES');
      const [httpAck] = await answers;
      expect(httpAck.status, httpAck.text).toBe(403);
      expect(httpAck.body).toEqual({ error: 'insufficient permissions' });

      const listed = await a.admin.get('/api/messages?topic=theirs');
      expect(listed.status, listed.text).toBe(200);
      expect(listed.body.items.map((m: { id: string; status: string; retry_count: number }) => [m.id, m.status, m.retry_count]).sort()).toEqual(
        ids.map((id) => [id, 'processing', 0]).sort(),
      );
    } finally {
      await lock.query('UNLOCK TABLES').catch(() => {});
      await lock.end().catch(() => {});
      client.close();
    }
  }, 60_000);
});
