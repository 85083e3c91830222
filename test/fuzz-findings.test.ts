import { connect } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { ADMIN, startAuthServer } from './helpers/auth.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/** What the fuzz suites (test/fuzz-http.test.ts, test/fuzz-grpc.test.ts) found, each pinned by a focused test. */
describeEachEngine('fuzz findings', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('unregistering a group whose name could never be registered is 400, not a database error (500 on MySQL)', async () => {
    for (const group of ['%C3%A9', '%F0%9F%93%A6', 'a%20b', '.g', 'g'.repeat(201)]) {
      const res = await server.api.delete(`/api/topics/fz/consumer-groups/${group}`);
      expectErrorBody(res, 400);
      expect(res.body.error).toMatch(/^consumer_group must be 1-200 characters/);
    }
    expectErrorBody(await server.api.delete('/api/topics/fz/consumer-groups/g'), 404);
  });

  it('a gRPC request whose bytes are no message of its type is INVALID_ARGUMENT, not INTERNAL (every method)', async () => {
    const client = new grpc.Client(`127.0.0.1:${server.server.grpcPort}`, grpc.credentials.createInsecure());
    const raw = (b: Buffer) => b;
    try {
      // A group start with no end, a varint longer than 10 bytes, an invalid wire type (6).
      const garbage = [Buffer.from([0x0b]), Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), Buffer.from([0x0e])];
      for (const method of ['Enqueue', 'EnqueueBatch', 'Dequeue', 'BatchDequeue', 'Ack', 'Nack', 'AckBatch']) {
        for (const bytes of garbage) {
          const err = await new Promise<grpc.ServiceError | null>((resolve) =>
            client.makeUnaryRequest(`/queue.QueueService/${method}`, raw, raw, bytes, new grpc.Metadata(), {}, (e) => resolve(e)),
          );
          expect(err && grpc.status[err.code], `${method} ${bytes.toString('hex')}`).toBe('INVALID_ARGUMENT');
          expect(err!.details).toBe(`the request is not a valid queue.${method}Request message`);
        }
      }
      const status = await new Promise<grpc.StatusObject>((resolve) => {
        const stream = client.makeServerStreamRequest('/queue.QueueService/Subscribe', raw, raw, garbage[0], new grpc.Metadata(), {});
        stream.on('error', () => undefined);
        stream.on('status', resolve);
      });
      expect(grpc.status[status.code]).toBe('INVALID_ARGUMENT');
      expect(status.details).toBe('the request is not a valid queue.SubscribeRequest message');
    } finally {
      client.close();
    }
  });
});

describeEachEngine('fuzz findings with authentication on', (engine) => {
  /** Writes raw bytes and then ends the connection as told: half-close, destroy, or leave it open a moment. */
  function send(port: number, bytes: string, how: 'end' | 'destroy' | 'keep'): Promise<void> {
    return new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.on('close', () => resolve());
      socket.setTimeout(1000, () => socket.destroy());
      if (how === 'end') socket.end(bytes);
      else if (how === 'destroy') socket.write(bytes, () => socket.destroy());
      else socket.write(bytes);
    });
  }

  it('a request whose body can no longer be read is not served (a purge ran with the default statuses)', async () => {
    const server = await startAuthServer(engine);
    try {
      const port = Number(new URL(server.url).port);
      for (let i = 0; i < 3; i++) expect((await server.admin.enqueue('kept', `m${i}`)).status).toBe(201);
      const token = (await server.api.post('/api/auth/login', ADMIN)).body.token;
      const head = `POST /api/topics/kept/purge HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n`;
      const body = '{"statuses":["failed"]}';
      const cases: Array<[string, string, 'end' | 'destroy' | 'keep']> = [
        ['a malformed chunk', `${head}Transfer-Encoding: chunked\r\n\r\nzz\r\n${body}\r\n0\r\n\r\n`, 'keep'],
        ['a whole body, then the client hangs up', `${head}Content-Length: ${body.length}\r\n\r\n${body}`, 'end'],
        ['a whole body, then the connection is reset', `${head}Content-Length: ${body.length}\r\n\r\n${body}`, 'destroy'],
        ['half a body, then the connection is reset', `${head}Content-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`, 'destroy'],
      ];
      for (const [what, bytes, how] of cases) {
        await send(port, bytes, how);
        // The purge, had it run, would have taken the pending messages (the default statuses), not failed ones.
        await new Promise((r) => setTimeout(r, 150));
        expect((await server.admin.get('/api/messages?topic=kept')).body.total, what).toBe(3);
      }
      // The same purge, sent whole over a connection that stays, runs with its statuses.
      expect((await server.admin.post('/api/topics/kept/purge', JSON.parse(body))).body).toEqual({ deleted: 0 });
    } finally {
      await server.close();
    }
  });
});

