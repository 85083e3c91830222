import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { engineByName } from './helpers/engines.js';
import { QueueClient, StreamRecorder } from './helpers/grpc.js';
import { holdClaims } from './helpers/held-claims.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const mysqlUrl = inject('mysqlUrl');

/**
 * A consumer that leaves while its claim runs (a Subscribe stream cancelled, a call past its deadline, an HTTP
 * client that hung up) cannot receive what the claim took: it goes back to pending at once, with no delivery
 * attempt counted. Otherwise it would wait out its visibility timeout (an hour here) and come back counted as
 * a failed attempt; a few such departures dead-letter a message nobody saw.
 * MySQL only: the claim is held back with a row lock on the topic's token bucket (test/helpers/held-claims.ts).
 */
(mysqlUrl ? describe : describe.skip)('claims of consumers that left meanwhile are given back [mysql]', () => {
  let server: TestServer;
  let client: QueueClient;
  let n = 0;

  beforeAll(async () => {
    server = await startTestServer(engineByName.mysql);
    client = new QueueClient(server.server.grpcPort);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  /** A throughput-limited topic (so every claim locks its bucket row) with one message, and the claims held. */
  async function heldTopic(group: string | undefined) {
    const topic = `give-back-${++n}`;
    expect((await server.api.put(`/api/topic-configs/${topic}`, { throughput_limit: 1000 })).status).toBe(200);
    const consumerGroup = group === undefined ? {} : { consumer_group: group };
    if (group !== undefined) expect((await server.api.post(`/api/topics/${topic}/consumer-groups`, consumerGroup)).status).toBe(201);
    // The bucket row exists after a first claim.
    expect((await client.call('BatchDequeue', { topic, count: 1, ...consumerGroup })).messages).toHaveLength(0);
    const { id } = await client.call('Enqueue', { topic, payload: Buffer.from('nobody saw me') });
    const held = await holdClaims(server.database.url, topic);
    const claimWaiting = () => expect.poll(held.waiting, { timeout: 10_000, interval: 150 }).toBe(1);
    /** Lets the claim go on, then: the message is there for the next consumer at once, with no attempt counted. */
    const releaseAndExpectBack = async () => {
      await held.release();
      await expect.poll(async () => (await client.call('BatchDequeue', { topic, count: 1, ...consumerGroup })).messages, { timeout: 5000 }).toMatchObject([{ id, retry_count: 0 }]);
    };
    return { topic, consumerGroup, claimWaiting, release: held.release, releaseAndExpectBack };
  }

  for (const group of [undefined, 'billing']) {
    const of = group === undefined ? '' : ' (a consumer group)';

    it(`a Subscribe stream cancelled while its claim ran${of}`, async () => {
      const t = await heldTopic(group);
      try {
        const rec = new StreamRecorder(client.subscribe({ topic: t.topic, visibility_timeout_seconds: 3600, ...t.consumerGroup }));
        await t.claimWaiting();
        rec.stream.cancel();
        const gauge = async () => (await server.api.get('/metrics')).text.split('\n').some((l) => l.startsWith('conveyor_subscribe_streams{') && l.includes(`topic="${t.topic}"`) && !l.endsWith(' 0'));
        await expect.poll(gauge).toBe(false);
      } finally {
        await t.releaseAndExpectBack();
      }
    });

    it(`a BatchDequeue past its deadline while its claim ran${of}`, async () => {
      const t = await heldTopic(group);
      try {
        const call = new Promise<{ code: status }>((resolve) =>
          client.raw.BatchDequeue({ topic: t.topic, count: 1, visibility_timeout_seconds: 3600, ...t.consumerGroup }, client.metadata(), { deadline: Date.now() + 1500 }, (err: { code: status } | null) =>
            resolve(err ?? { code: status.OK }),
          ),
        );
        await t.claimWaiting();
        expect((await call).code).toBe(status.DEADLINE_EXCEEDED);
      } finally {
        await t.releaseAndExpectBack();
      }
    });

    it(`an HTTP dequeue whose client hung up while its claim ran${of}`, async () => {
      const t = await heldTopic(group);
      try {
        const hangUp = new AbortController();
        const request = fetch(`${server.api.baseUrl}/api/messages/dequeue`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ topic: t.topic, visibility_timeout_seconds: 3600, ...t.consumerGroup }),
          signal: hangUp.signal,
        });
        await t.claimWaiting();
        hangUp.abort();
        await expect(request).rejects.toThrow();
      } finally {
        await t.releaseAndExpectBack();
      }
    });
  }

  it('a unary Dequeue past its deadline while its claim ran', async () => {
    const t = await heldTopic(undefined);
    try {
      const call = new Promise<{ code: status }>((resolve) =>
        client.raw.Dequeue({ topic: t.topic, visibility_timeout_seconds: 3600 }, client.metadata(), { deadline: Date.now() + 1500 }, (err: { code: status } | null) => resolve(err ?? { code: status.OK })),
      );
      await t.claimWaiting();
      expect((await call).code).toBe(status.DEADLINE_EXCEEDED);
    } finally {
      await t.releaseAndExpectBack();
    }
  });

  it('a consumer still there keeps what its claim took', async () => {
    const t = await heldTopic(undefined);
    const call = client.call('BatchDequeue', { topic: t.topic, count: 1, visibility_timeout_seconds: 3600 });
    await t.claimWaiting();
    await t.release();
    expect((await call).messages).toMatchObject([{ retry_count: 0 }]);
    expect((await client.call('BatchDequeue', { topic: t.topic, count: 1 })).messages).toHaveLength(0);
  });
});
