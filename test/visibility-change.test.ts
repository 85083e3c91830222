import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { createUser, startAuthServer, type AuthServer } from './helpers/auth.js';
import { describeEachEngine } from './helpers/engines.js';
import { clockedSuite, expectGrpcError } from './helpers/grpc.js';
import { dequeueIds, enqueueId, findMessage, MISSING_ID } from './helpers/messages.js';

/**
 * A consumer changes the claim of a message it is processing: POST /api/messages/:id/visibility and gRPC
 * ChangeVisibility extend it past the dequeue's timeout (a heartbeat) or shorten it; 0 gives the message back
 * at once without counting an attempt.
 */
describeEachEngine('visibility changes', (engine) => {
  const suite = clockedSuite(engine);

  it('an extension keeps the message away past its original timeout, and it comes back as an attempt after the new one', async () => {
    const id = await enqueueId(suite.server.api, 'vc-extend', 'x');
    expect(await dequeueIds(suite.server.api, 'vc-extend', { visibility_timeout_seconds: 10 })).toEqual([id]);
    suite.clock.advance(8_000);
    const res = await suite.server.api.post(`/api/messages/${id}/visibility`, { visibility_timeout_seconds: 60 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id, available_at: new Date(suite.clock.now() + 60_000).toISOString() });
    suite.clock.advance(30_000);
    expect(await dequeueIds(suite.server.api, 'vc-extend')).toEqual([]);
    // A heartbeat over gRPC keeps it longer again.
    const answer = await suite.client.call('ChangeVisibility', { id, visibility_timeout_seconds: 60 });
    expect(Number(answer.available_at.seconds) * 1000 + answer.available_at.nanos / 1e6).toBe(suite.clock.now() + 60_000);
    suite.clock.advance(59_000);
    expect(await dequeueIds(suite.server.api, 'vc-extend')).toEqual([]);
    suite.clock.advance(1_001);
    expect(await dequeueIds(suite.server.api, 'vc-extend')).toEqual([id]);
    expect((await findMessage(suite.server.api, 'vc-extend', id)).retry_count).toBe(1);
  });

  it('a shorter timeout brings the message back sooner', async () => {
    const id = await enqueueId(suite.server.api, 'vc-shorten', 'x');
    expect(await dequeueIds(suite.server.api, 'vc-shorten', { visibility_timeout_seconds: 600 })).toEqual([id]);
    expect((await suite.server.api.post(`/api/messages/${id}/visibility`, { visibility_timeout_seconds: 5 })).status).toBe(200);
    suite.clock.advance(5_001);
    expect(await dequeueIds(suite.server.api, 'vc-shorten')).toEqual([id]);
  });

  it('0 gives the message back at once with its retry_count unchanged, over HTTP and gRPC', async () => {
    const id = await enqueueId(suite.server.api, 'vc-release', 'x');
    expect(await dequeueIds(suite.server.api, 'vc-release', { visibility_timeout_seconds: 600 })).toEqual([id]);
    const res = await suite.server.api.post(`/api/messages/${id}/visibility`, { visibility_timeout_seconds: 0 });
    expect(res.body).toEqual({ id, available_at: new Date(suite.clock.now()).toISOString() });
    expect(await findMessage(suite.server.api, 'vc-release', id)).toMatchObject({ status: 'pending', retry_count: 0 });
    expect(await dequeueIds(suite.server.api, 'vc-release', { visibility_timeout_seconds: 600 })).toEqual([id]);
    await suite.client.call('ChangeVisibility', { id, visibility_timeout_seconds: 0 });
    expect(await findMessage(suite.server.api, 'vc-release', id)).toMatchObject({ status: 'pending', retry_count: 0 });
    expect(await dequeueIds(suite.server.api, 'vc-release')).toEqual([id]);
    expect((await suite.server.api.post(`/api/messages/${id}/ack`)).status).toBe(204);
  });

  it('a message that is not processing, or unknown, is 404 / NOT_FOUND; bad values are 400 / INVALID_ARGUMENT', async () => {
    const id = await enqueueId(suite.server.api, 'vc-errors', 'x');
    expectErrorBody(await suite.server.api.post(`/api/messages/${id}/visibility`, { visibility_timeout_seconds: 30 }), 404);
    expectErrorBody(await suite.server.api.post(`/api/messages/${MISSING_ID}/visibility`, { visibility_timeout_seconds: 30 }), 404);
    expectErrorBody(await suite.server.api.post('/api/messages/not-a-uuid/visibility', { visibility_timeout_seconds: 30 }), 404);
    await expectGrpcError(suite.client.call('ChangeVisibility', { id, visibility_timeout_seconds: 30 }), grpc.status.NOT_FOUND);
    expect(await dequeueIds(suite.server.api, 'vc-errors')).toEqual([id]);
    for (const body of [{}, { visibility_timeout_seconds: -1 }, { visibility_timeout_seconds: 43_201 }, { visibility_timeout_seconds: 1.5 }, { visibility_timeout_seconds: '30' }]) {
      const res = await suite.server.api.post(`/api/messages/${id}/visibility`, body);
      expectErrorBody(res, 400);
      expect(res.body.error).toBe('visibility_timeout_seconds must be an integer from 0 to 43200');
    }
    expectErrorBody(await suite.server.api.post(`/api/messages/${id}/visibility`, { visibility_timeout_seconds: 30, bogus: 1 }), 400);
    await expectGrpcError(suite.client.call('ChangeVisibility', { id, visibility_timeout_seconds: 43_201 }), grpc.status.INVALID_ARGUMENT, /from 0 to 43200/);
    // Nothing of that changed the claim.
    expect(await findMessage(suite.server.api, 'vc-errors', id)).toMatchObject({ status: 'processing', retry_count: 0 });
  });

  it("a consumer group's delivery: its own claim changes, the other group's does not", async () => {
    expect((await suite.server.api.post('/api/topics/vc-fan/consumer-groups', { consumer_group: 'a' })).status).toBe(201);
    expect((await suite.server.api.post('/api/topics/vc-fan/consumer-groups', { consumer_group: 'b' })).status).toBe(201);
    const id = await enqueueId(suite.server.api, 'vc-fan', 'x');
    expect(await dequeueIds(suite.server.api, 'vc-fan', { consumer_group: 'a', visibility_timeout_seconds: 10 })).toEqual([id]);
    expect(await dequeueIds(suite.server.api, 'vc-fan', { consumer_group: 'b', visibility_timeout_seconds: 10 })).toEqual([id]);
    expect((await suite.server.api.post(`/api/messages/${id}/visibility`, { visibility_timeout_seconds: 100, consumer_group: 'a' })).status).toBe(200);
    // Without the group the fan-out message has no claim to change.
    expectErrorBody(await suite.server.api.post(`/api/messages/${id}/visibility`, { visibility_timeout_seconds: 100 }), 400);
    suite.clock.advance(10_001);
    expect(await dequeueIds(suite.server.api, 'vc-fan', { consumer_group: 'a' })).toEqual([]);
    expect(await dequeueIds(suite.server.api, 'vc-fan', { consumer_group: 'b' })).toEqual([id]);
    await suite.client.call('ChangeVisibility', { id, visibility_timeout_seconds: 0, consumer_group: 'b' });
    expect(await dequeueIds(suite.server.api, 'vc-fan', { consumer_group: 'b' })).toEqual([id]);
    expectErrorBody(await suite.server.api.post(`/api/messages/${id}/visibility`, { visibility_timeout_seconds: 5, consumer_group: 'c' }), 422);
  });
});

describeEachEngine('visibility changes with authentication on', (engine) => {
  let server: AuthServer;
  beforeAll(async () => {
    server = await startAuthServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('need the grant an ack needs on the message topic', async () => {
    const id = await enqueueId(server.admin, 'vc-auth', 'x');
    expect(await dequeueIds(server.admin, 'vc-auth')).toEqual([id]);
    const reader = await createUser(server, ['read:vc-auth']);
    const writer = await createUser(server, ['write:vc-auth']);
    expectErrorBody(await reader.api.post(`/api/messages/${id}/visibility`, { visibility_timeout_seconds: 30 }), 403);
    expectErrorBody(await server.api.post(`/api/messages/${id}/visibility`, { visibility_timeout_seconds: 30 }), 401);
    expect((await writer.api.post(`/api/messages/${id}/visibility`, { visibility_timeout_seconds: 30 })).status).toBe(200);
  });
});
