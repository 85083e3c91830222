import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { QueueClient, StreamRecorder } from './helpers/grpc.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/** Redis only speeds up other instances' wake-ups: a server whose Redis is unreachable still starts and serves. */
describeEachEngine('gRPC Subscribe with Redis unreachable', (engine) => {
  let server: TestServer;
  let client: QueueClient;
  beforeAll(async () => {
    server = await startTestServer(engine, { overrides: { redis: { url: 'redis://127.0.0.1:1' } } });
    client = new QueueClient(server.server.grpcPort);
  });
  afterAll(async () => {
    client?.close();
    const started = Date.now();
    await server?.close();
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('still enqueues and wakes local streams', async () => {
    const rec = new StreamRecorder(client.subscribe({ topic: 'no-redis' }));
    const { id } = await client.call('Enqueue', { topic: 'no-redis', payload: Buffer.from('x') });
    await rec.until(() => rec.received.length === 1, 3000, 'the local wake-up');
    expect(rec.received[0].id).toBe(id);
    rec.stream.cancel();
  });
});
