import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { queueProtoPath } from '../src/grpc/proto.js';
import { describeEachEngine } from './helpers/engines.js';
import { startTestServer, type TestServer } from './helpers/server.js';

function call(client: any, method: string, request: object): Promise<any> {
  return new Promise((resolve, reject) => client[method](request, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res))));
}

describeEachEngine('gRPC over TLS', (engine) => {
  let dir: string;
  let server: TestServer;
  let QueueService: any;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'conveyor-tls-'));
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    ], { stdio: 'ignore' });
    server = await startTestServer(engine, {
      overrides: { server: { grpc_tls_cert: join(dir, 'cert.pem'), grpc_tls_key: join(dir, 'key.pem') } },
    });
    const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(queueProtoPath(), { keepCase: true, oneofs: true, defaults: true })) as any;
    QueueService = pkg.queue.QueueService;
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves QueueService to a client that trusts the configured certificate', async () => {
    const client = new QueueService(`localhost:${server.server.grpcPort}`, grpc.credentials.createSsl(readFileSync(join(dir, 'cert.pem'))));
    const { id } = await call(client, 'Enqueue', { topic: 'tls', payload: Buffer.from('secret') });
    expect((await call(client, 'Dequeue', { topic: 'tls' })).id).toBe(id);
    client.close();
  });

  it('does not speak plaintext once TLS is configured', async () => {
    const client = new QueueService(`127.0.0.1:${server.server.grpcPort}`, grpc.credentials.createInsecure());
    const deadline = new Date(Date.now() + 3000);
    await expect(
      new Promise((resolve, reject) => client.Enqueue({ topic: 'tls', payload: Buffer.from('x') }, new grpc.Metadata(), { deadline }, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res)))),
    ).rejects.toMatchObject({ code: expect.any(Number) });
    client.close();
  });
});
