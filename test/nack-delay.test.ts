import * as grpc from '@grpc/grpc-js';
import { expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { describeEachEngine } from './helpers/engines.js';
import { clockedSuite, expectGrpcError } from './helpers/grpc.js';
import { dequeueIds, enqueueId, findMessage } from './helpers/messages.js';

/**
 * A nack with `delay_seconds` keeps the retry from every consumer until the delay has passed, so a
 * downstream outage is waited out instead of burning the retries at once; without it a retry is claimable at
 * once, as before.
 */
describeEachEngine('nack with a delay', (engine) => {
  const suite = clockedSuite(engine);

  it('over HTTP: the retry is not dequeued before its delay and is right after, while other messages flow', async () => {
    const id = await enqueueId(suite.server.api, 'nd-http', 'x');
    expect(await dequeueIds(suite.server.api, 'nd-http')).toEqual([id]);
    expect((await suite.server.api.post(`/api/messages/${id}/nack`, { error: 'thumbnailer down', delay_seconds: 30 })).status).toBe(204);
    expect(await findMessage(suite.server.api, 'nd-http', id)).toMatchObject({ status: 'pending', retry_count: 1, last_error: 'thumbnailer down' });
    const other = await enqueueId(suite.server.api, 'nd-http', 'y');
    expect(await dequeueIds(suite.server.api, 'nd-http', { count: 10, visibility_timeout_seconds: 600 })).toEqual([other]);
    suite.clock.advance(29_000);
    expect(await dequeueIds(suite.server.api, 'nd-http', { count: 10 })).toEqual([]);
    suite.clock.advance(1_000);
    expect(await dequeueIds(suite.server.api, 'nd-http', { count: 10 })).toEqual([id]);
  });

  it('without a delay, or with 0, the retry is claimable at once', async () => {
    const id = await enqueueId(suite.server.api, 'nd-none', 'x');
    expect(await dequeueIds(suite.server.api, 'nd-none')).toEqual([id]);
    expect((await suite.server.api.post(`/api/messages/${id}/nack`, { delay_seconds: 0 })).status).toBe(204);
    expect(await dequeueIds(suite.server.api, 'nd-none')).toEqual([id]);
    expect((await suite.server.api.post(`/api/messages/${id}/nack`)).status).toBe(204);
    expect(await dequeueIds(suite.server.api, 'nd-none')).toEqual([id]);
  });

  it('over gRPC, and per consumer group on a fan-out topic', async () => {
    const id = await enqueueId(suite.server.api, 'nd-grpc', 'x');
    expect(await dequeueIds(suite.server.api, 'nd-grpc')).toEqual([id]);
    await suite.client.call('Nack', { id, error: 'later', delay_seconds: 10 });
    expect(await dequeueIds(suite.server.api, 'nd-grpc')).toEqual([]);
    suite.clock.advance(10_000);
    expect(await dequeueIds(suite.server.api, 'nd-grpc')).toEqual([id]);
    // Absent on the wire: at once.
    await suite.client.call('Nack', { id, error: 'again' });
    expect(await dequeueIds(suite.server.api, 'nd-grpc')).toEqual([id]);

    expect((await suite.server.api.post('/api/topics/nd-fan/consumer-groups', { consumer_group: 'a' })).status).toBe(201);
    expect((await suite.server.api.post('/api/topics/nd-fan/consumer-groups', { consumer_group: 'b' })).status).toBe(201);
    const fan = await enqueueId(suite.server.api, 'nd-fan', 'x');
    expect(await dequeueIds(suite.server.api, 'nd-fan', { consumer_group: 'a' })).toEqual([fan]);
    expect(await dequeueIds(suite.server.api, 'nd-fan', { consumer_group: 'b' })).toEqual([fan]);
    expect((await suite.server.api.post(`/api/messages/${fan}/nack`, { consumer_group: 'a', delay_seconds: 20 })).status).toBe(204);
    expect((await suite.server.api.post(`/api/messages/${fan}/nack`, { consumer_group: 'b' })).status).toBe(204);
    expect(await dequeueIds(suite.server.api, 'nd-fan', { consumer_group: 'a' })).toEqual([]);
    expect(await dequeueIds(suite.server.api, 'nd-fan', { consumer_group: 'b' })).toEqual([fan]);
    suite.clock.advance(20_000);
    expect(await dequeueIds(suite.server.api, 'nd-fan', { consumer_group: 'a' })).toEqual([fan]);
  });

  it('a delay out of range is refused (400 / INVALID_ARGUMENT) and the message stays processing', async () => {
    const id = await enqueueId(suite.server.api, 'nd-bad', 'x');
    expect(await dequeueIds(suite.server.api, 'nd-bad')).toEqual([id]);
    for (const delay of [-1, 604_801, 1.5, '5']) {
      const res = await suite.server.api.post(`/api/messages/${id}/nack`, { delay_seconds: delay });
      expectErrorBody(res, 400);
      expect(res.body.error).toBe('delay_seconds must be an integer from 0 to 604800');
    }
    await expectGrpcError(suite.client.call('Nack', { id, delay_seconds: 604_801 }), grpc.status.INVALID_ARGUMENT, /delay_seconds/);
    expect(await findMessage(suite.server.api, 'nd-bad', id)).toMatchObject({ status: 'processing', retry_count: 0 });
  });
});
