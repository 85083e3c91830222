import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { describeEachEngine, engineByName } from './helpers/engines.js';
import { expectGrpcError, QueueClient } from './helpers/grpc.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startTcpProxy } from './helpers/tcp-proxy.js';

const LOADER = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };
const require = createRequire(import.meta.url);
const reflectionProto = join(dirname(require.resolve('@grpc/reflection/package.json')), 'build/proto/grpc/reflection/v1/reflection.proto');

function healthClient(port: number): any {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(healthProtoPath, LOADER)) as any;
  return new pkg.grpc.health.v1.Health(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
}

function check(client: any, service = ''): Promise<string> {
  return new Promise((resolve, reject) => client.Check({ service }, (err: Error | null, res: { status: string }) => (err ? reject(err) : resolve(res.status))));
}

/** Asks server reflection (grpc.reflection.v1) which services the server offers. */
function listServices(port: number): Promise<string[]> {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(reflectionProto, LOADER)) as any;
  const client = new pkg.grpc.reflection.v1.ServerReflection(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) => {
    const call = client.ServerReflectionInfo();
    call.on('data', (res: any) => {
      resolve(res.list_services_response.service.map((s: { name: string }) => s.name));
      call.end();
      client.close();
    });
    call.on('error', reject);
    call.write({ list_services: '' });
  });
}

/** Fetches the file descriptor that defines `symbol`, as reflection serves it to grpcurl. */
function fileContaining(port: number, symbol: string): Promise<Buffer[]> {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(reflectionProto, LOADER)) as any;
  const client = new pkg.grpc.reflection.v1.ServerReflection(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) => {
    const call = client.ServerReflectionInfo();
    call.on('data', (res: any) => {
      resolve(res.file_descriptor_response?.file_descriptor_proto ?? []);
      call.end();
      client.close();
    });
    call.on('error', reject);
    call.write({ file_containing_symbol: symbol });
  });
}

describeEachEngine('gRPC health and reflection', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('reports SERVING for the server and for queue.QueueService', async () => {
    const client = healthClient(server.server.grpcPort);
    expect(await check(client)).toBe('SERVING');
    expect(await check(client, 'queue.QueueService')).toBe('SERVING');
    await expect(check(client, 'no.such.Service')).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    client.close();
  });

  it('lists QueueService and Health through server reflection, with the descriptor grpcurl needs', async () => {
    const services = await listServices(server.server.grpcPort);
    expect(services).toEqual(expect.arrayContaining(['queue.QueueService', 'grpc.health.v1.Health']));
    const files = await fileContaining(server.server.grpcPort, 'queue.QueueService');
    expect(files.length).toBeGreaterThan(0);
    expect(Buffer.concat(files).toString('latin1')).toContain('EnqueueBatch');
  });
});

(inject('mysqlUrl') ? it : it.skip)('[mysql] a lost database turns health NOT_SERVING and calls UNAVAILABLE without database text', async () => {
  const database = await engineByName.mysql.createDatabase();
  const real = new URL(database.url);
  const proxy = await startTcpProxy(real.hostname, Number(real.port || 3306));
  const viaProxy = new URL(database.url);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  const server = await startTestServer(engineByName.mysql, { database: { url: viaProxy.toString(), drop: async () => {} } });
  const health = healthClient(server.server.grpcPort);
  const client = new QueueClient(server.server.grpcPort);
  try {
    await client.call('Enqueue', { topic: 'down', payload: Buffer.from('x') });
    expect(await check(health)).toBe('SERVING');
    await proxy.cut();
    await expectGrpcError(client.call('Enqueue', { topic: 'down', payload: Buffer.from('y') }), grpc.status.UNAVAILABLE, /^database unavailable$/);
    await expectGrpcError(client.call('BatchDequeue', { topic: 'down', count: 1 }), grpc.status.UNAVAILABLE, /^database unavailable$/);
    await expect.poll(() => check(health), { timeout: 8000, interval: 250 }).toBe('NOT_SERVING');
  } finally {
    health.close();
    client.close();
    await server.close();
    await database.drop();
  }
});
