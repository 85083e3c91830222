import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../src/config/load.js';
import { createLogger } from '../src/log/logger.js';
import { describeEachEngine, engineByName, type TestDatabase } from './helpers/engines.js';
import { QueueClient } from './helpers/grpc.js';
import { OtlpReceiver, SpanKinds, type ReceivedSpan } from './helpers/otlp-receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/** A client's span: a fresh trace id and span id, sampled. */
function clientSpan(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

/** The trace and parent span ids of a traceparent. */
const partsOf = (traceparent: string) => {
  const [, traceId, spanId, flags] = traceparent.split('-');
  return { traceId, spanId, flags };
};

/** JSON log lines written by a server, for the trace ids they carry. */
class LogLines extends Writable {
  readonly lines: Array<Record<string, unknown>> = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) this.lines.push(JSON.parse(line));
    done();
  }
}

// Strings that exist only in payloads, keys and metadata values: none may appear in any export.
const MARKERS = { payload: 'payload-marker-7f3a', key: 'key-marker-91bc', metadata: 'metadata-marker-c4d2', error: 'nack-error-marker-55e1', orderingKey: 'ordering-marker-0a9d' };

const isMessaging = (operation: string, topic: string) => (s: ReceivedSpan) => s.attributes['messaging.operation.name'] === operation && s.attributes['messaging.destination.name'] === topic;
const linksTo = (span: ReceivedSpan, traceparent: string) => span.links.some((l) => l.traceId === partsOf(traceparent).traceId && l.spanId === partsOf(traceparent).spanId);

describeEachEngine('tracing: propagation and spans', (engine) => {
  let receiver: OtlpReceiver;
  let server: TestServer;
  let grpcClient: QueueClient;
  const logs = new LogLines();

  beforeAll(async () => {
    receiver = await new OtlpReceiver().start();
    server = await startTestServer(engine, {
      overrides: { telemetry: { traces_endpoint: receiver.url, traces_sample_ratio: 1, traces_export_interval: '100ms' } },
      logger: createLogger('debug', logs),
    });
    grpcClient = new QueueClient(server.server.grpcPort);
  });
  afterAll(async () => {
    grpcClient?.close();
    await server?.close();
    await receiver?.close();
  });

  it('HTTP: the send span is the child of the client span, the message carries its context, receive and settle spans link to it', async () => {
    const client = clientSpan();
    const topic = `trace-http-${engine.name}`;
    const enqueued = await server.api.post(
      '/api/messages',
      { topic, payload: MARKERS.payload, key: MARKERS.key, metadata: { note: MARKERS.metadata } },
      { traceparent: client.traceparent, tracestate: 'vendor=opaque' },
    );
    expect(enqueued.status).toBe(201);
    const first = await server.api.dequeue(topic, { visibility_timeout_seconds: 60 });
    const delivered = first.body.messages[0];
    expect(delivered.id).toBe(enqueued.body.id);
    // The stored context: the client's trace, a span of the server's (the send span), sampled; tracestate kept.
    const stored = partsOf(delivered.metadata.traceparent);
    expect(stored.traceId).toBe(client.traceId);
    expect(stored.spanId).not.toBe(client.spanId);
    expect(stored.flags).toBe('01');
    expect(delivered.metadata).toEqual({ note: MARKERS.metadata, traceparent: delivered.metadata.traceparent, tracestate: 'vendor=opaque' });

    expect((await server.api.post(`/api/messages/${delivered.id}/nack`, { error: MARKERS.error })).status).toBe(204);
    const second = await server.api.dequeue(topic, { visibility_timeout_seconds: 60 });
    expect(second.body.messages[0].metadata.traceparent).toBe(delivered.metadata.traceparent);
    expect((await server.api.post(`/api/messages/${delivered.id}/ack`)).status).toBe(204);

    const [send] = await receiver.waitFor(isMessaging('send', topic));
    expect(send).toMatchObject({ traceId: client.traceId, parentSpanId: client.spanId, spanId: stored.spanId, kind: SpanKinds.producer, name: `send ${topic}` });
    expect(send.attributes).toMatchObject({ 'messaging.system': 'conveyor', 'messaging.operation.type': 'send', 'messaging.message.id': delivered.id });

    const receives = await receiver.waitFor(isMessaging('receive', topic), 2);
    expect(receives.map((r) => r.attributes['conveyor.message.retry_count']).sort()).toEqual([0, 1]);
    for (const receive of receives) {
      expect(receive.kind).toBe(SpanKinds.consumer);
      expect(receive.attributes).toMatchObject({ 'messaging.operation.type': 'receive', 'messaging.message.id': delivered.id, 'messaging.batch.message_count': 1 });
      expect(linksTo(receive, delivered.metadata.traceparent)).toBe(true);
    }
    const [nack] = await receiver.waitFor(isMessaging('nack', topic));
    expect(nack.attributes).toMatchObject({ 'messaging.operation.type': 'settle', 'messaging.message.id': delivered.id, 'conveyor.nack.outcome': 'retry' });
    expect(linksTo(nack, delivered.metadata.traceparent)).toBe(true);
    const [ack] = await receiver.waitFor(isMessaging('ack', topic));
    expect(ack.attributes).toMatchObject({ 'messaging.operation.type': 'settle', 'messaging.message.id': delivered.id });
    expect(linksTo(ack, delivered.metadata.traceparent)).toBe(true);

    // The HTTP server span of the enqueue: the child of the client span, named by its route template.
    const [serverSpan] = await receiver.waitFor((s) => s.kind === SpanKinds.server && s.traceId === client.traceId);
    expect(serverSpan).toMatchObject({ name: 'POST /api/messages', parentSpanId: client.spanId });
    expect(serverSpan.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/api/messages', 'http.response.status_code': 201 });
    // The receive and settle spans are children of their requests' server spans.
    const byId = new Map(receiver.spans.map((s) => [s.spanId, s]));
    expect(byId.get(ack.parentSpanId)).toMatchObject({ kind: SpanKinds.server, name: 'POST /api/messages/:id/ack' });
    expect(byId.get(receives[0].parentSpanId)).toMatchObject({ kind: SpanKinds.server, name: 'POST /api/messages/dequeue' });

    // The enqueue's INSERT is a statement span in the client's trace: its shape, no values.
    const statements = await receiver.waitFor((s) => s.kind === SpanKinds.client && s.traceId === client.traceId && /^insert/i.test(String(s.attributes['db.query.text'])));
    expect(statements[0].attributes).toMatchObject({ 'db.system.name': engine.name, 'db.operation.name': 'INSERT', 'db.collection.name': 'messages' });
    expect(String(statements[0].attributes['db.query.text'])).toContain('?');
  });

  it('HTTP batch: each message is sent under the context in its own metadata, else the header', async () => {
    const topic = `trace-batch-${engine.name}`;
    const [own, header] = [clientSpan(), clientSpan()];
    const res = await server.api.post(
      '/api/messages/batch',
      { messages: [{ topic, payload: 'a', metadata: { traceparent: own.traceparent } }, { topic, payload: 'b' }] },
      { traceparent: header.traceparent },
    );
    expect(res.status).toBe(201);
    const sends = await receiver.waitFor(isMessaging('send', topic), 2);
    const byMessage = new Map(sends.map((s) => [s.attributes['messaging.message.id'], s]));
    expect(byMessage.get(res.body.ids[0])).toMatchObject({ traceId: own.traceId, parentSpanId: own.spanId });
    expect(byMessage.get(res.body.ids[1])).toMatchObject({ traceId: header.traceId, parentSpanId: header.spanId });
    expect(sends[0].attributes['messaging.batch.message_count']).toBe(2);
    const { body } = await server.api.dequeue(topic, { count: 10 });
    expect(body.messages.map((m: any) => partsOf(m.metadata.traceparent).traceId)).toEqual([own.traceId, header.traceId]);
    const [receive] = await receiver.waitFor((s) => isMessaging('receive', topic)(s) && s.attributes['messaging.batch.message_count'] === 2);
    expect(receive.links).toHaveLength(2);
  });

  it('gRPC: Enqueue with traceparent metadata, BatchDequeue and Ack', async () => {
    const client = clientSpan();
    const topic = `trace-grpc-${engine.name}`;
    const metadata = new grpc.Metadata();
    metadata.set('traceparent', client.traceparent);
    const { id } = await grpcClient.call<{ id: string }>('Enqueue', { topic, payload: Buffer.from(MARKERS.payload), key: MARKERS.key, metadata: { note: MARKERS.metadata } }, metadata);
    const { messages } = await grpcClient.call<{ messages: any[] }>('BatchDequeue', { topic, count: 5 });
    expect(messages.map((m) => m.id)).toEqual([id]);
    const stored = messages[0].metadata.traceparent;
    expect(partsOf(stored).traceId).toBe(client.traceId);
    await grpcClient.call('Ack', { id });

    const [send] = await receiver.waitFor(isMessaging('send', topic));
    expect(send).toMatchObject({ traceId: client.traceId, parentSpanId: client.spanId, spanId: partsOf(stored).spanId });
    const [call] = await receiver.waitFor((s) => s.kind === SpanKinds.server && s.traceId === client.traceId);
    expect(call).toMatchObject({ name: 'queue.QueueService/Enqueue', parentSpanId: client.spanId });
    expect(call.attributes).toMatchObject({ 'rpc.system': 'grpc', 'rpc.method': 'Enqueue', 'rpc.grpc.status_code': 0 });
    const [receive] = await receiver.waitFor(isMessaging('receive', topic));
    expect(receive.attributes['messaging.batch.message_count']).toBe(1);
    expect(linksTo(receive, stored)).toBe(true);
    const [ack] = await receiver.waitFor(isMessaging('ack', topic));
    expect(linksTo(ack, stored)).toBe(true);
    const byId = new Map(receiver.spans.map((s) => [s.spanId, s]));
    expect(byId.get(ack.parentSpanId)?.name).toBe('queue.QueueService/Ack');
  });

  it('gRPC Subscribe: each push is a receive span linked to the message', async () => {
    const client = clientSpan();
    const topic = `trace-sub-${engine.name}`;
    const stream = grpcClient.subscribe({ topic });
    const received = new Promise<any>((resolve) => stream.once('data', resolve));
    const metadata = new grpc.Metadata();
    metadata.set('traceparent', client.traceparent);
    await grpcClient.call('Enqueue', { topic, payload: Buffer.from('x') }, metadata);
    const message = await received;
    expect(partsOf(message.metadata.traceparent).traceId).toBe(client.traceId);
    stream.cancel();
    stream.on('error', () => {});
    const [receive] = await receiver.waitFor(isMessaging('receive', topic));
    expect(receive.attributes['messaging.message.id']).toBe(message.id);
    expect(linksTo(receive, message.metadata.traceparent)).toBe(true);
    await receiver.waitFor((s) => s.name === 'queue.QueueService/Subscribe');
  });

  it('dead-lettering, requeue and replay keep the trace context', async () => {
    const client = clientSpan();
    const topic = `trace-dlq-${engine.name}`;
    expect((await server.api.put(`/api/topic-configs/${topic}`, { max_retries: 1, replayable: true })).status).toBe(200);
    const { body } = await server.api.post('/api/messages', { topic, payload: 'job' }, { traceparent: client.traceparent });
    const first = (await server.api.dequeue(topic)).body.messages[0];
    const stored = first.metadata.traceparent;
    expect(partsOf(stored).traceId).toBe(client.traceId);
    expect((await server.api.post(`/api/messages/${body.id}/nack`, { error: 'down' })).status).toBe(204);
    const [nack] = await receiver.waitFor(isMessaging('nack', topic));
    expect(nack.attributes['conveyor.nack.outcome']).toBe('dlq');

    const dead = (await server.api.get(`/api/messages?topic=${topic}.dlq`)).body.items[0];
    expect(dead.metadata.traceparent).toBe(stored);
    expect((await server.api.post(`/api/messages/${dead.id}/requeue`)).status).toBe(204);
    const requeued = (await server.api.dequeue(topic)).body.messages[0];
    expect(requeued.metadata.traceparent).toBe(stored);
    expect((await server.api.post(`/api/messages/${requeued.id}/ack`)).status).toBe(204);

    const replay = await server.api.post(`/api/topics/${topic}/replay`, {});
    expect(replay.body.enqueued).toBe(1);
    const replayed = (await server.api.dequeue(topic)).body.messages[0];
    expect(replayed.id).not.toBe(requeued.id);
    expect(replayed.metadata.traceparent).toBe(stored);
  });

  it('a delivery whose visibility timeout a dequeue finds passed makes an expire span linked to the send span, naming its group', async () => {
    const groupTopic = `trace-expire-group-${engine.name}`;
    expect((await server.api.post(`/api/topics/${groupTopic}/consumer-groups`, { consumer_group: 'billing' })).status).toBe(201);
    const plainTopic = `trace-expire-plain-${engine.name}`;
    const sent = async (t: string) => {
      const res = await server.api.post('/api/messages', { topic: t, payload: MARKERS.payload, key: `${MARKERS.key}-${t}`, metadata: { note: MARKERS.metadata } }, { traceparent: clientSpan().traceparent });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const [groupId, plainId] = [await sent(groupTopic), await sent(plainTopic)];
    const [viaGroup] = (await server.api.dequeue(groupTopic, { consumer_group: 'billing', visibility_timeout_seconds: 1 })).body.messages;
    const [plain] = (await server.api.dequeue(plainTopic, { visibility_timeout_seconds: 1 })).body.messages;
    expect([viaGroup.id, plain.id]).toEqual([groupId, plainId]);
    await new Promise((resolve) => setTimeout(resolve, 1300));
    // The next dequeues release both first (the expiry reaper runs once a minute here).
    await server.api.dequeue(groupTopic, { consumer_group: 'billing' });
    await server.api.dequeue(plainTopic);

    const [groupExpire] = await receiver.waitFor(isMessaging('expire', groupTopic));
    expect(groupExpire).toMatchObject({ name: `expire ${groupTopic}`, kind: SpanKinds.internal, parentSpanId: '' });
    expect(groupExpire.attributes).toMatchObject({
      'messaging.system': 'conveyor',
      'messaging.operation.type': 'settle',
      'messaging.message.id': groupId,
      'messaging.consumer.group.name': 'billing',
      'conveyor.expire.outcome': 'retry',
    });
    expect(linksTo(groupExpire, viaGroup.metadata.traceparent)).toBe(true);
    // The root of its own trace: not the producer's.
    expect(groupExpire.traceId).not.toBe(partsOf(viaGroup.metadata.traceparent).traceId);

    const [plainExpire] = await receiver.waitFor(isMessaging('expire', plainTopic));
    expect(plainExpire.attributes).toMatchObject({ 'messaging.message.id': plainId, 'conveyor.expire.outcome': 'retry' });
    expect(plainExpire.attributes['messaging.consumer.group.name']).toBeUndefined();
    expect(linksTo(plainExpire, plain.metadata.traceparent)).toBe(true);
  });

  it('no payload, key, metadata value or nack error appears in any export; log lines of a traced request carry its ids', async () => {
    const client = clientSpan();
    const probe = clientSpan();
    const topic = `trace-logs-${engine.name}`;
    expect((await server.api.get('/healthz', { traceparent: probe.traceparent })).status).toBe(200);
    await server.api.post('/api/messages', { topic, payload: MARKERS.payload, ordering_key: MARKERS.orderingKey }, { traceparent: client.traceparent });
    await receiver.waitFor((s) => s.traceId === client.traceId && s.kind === SpanKinds.server);
    // Spans are exported in the order they end: the probe's would have come first. Probes make none.
    expect(receiver.spans.filter((s) => s.traceId === probe.traceId)).toEqual([]);
    const exported = receiver.bodies.join('\n');
    for (const marker of Object.values(MARKERS)) expect(exported, marker).not.toContain(marker);

    const access = logs.lines.find((l) => l.route === '/api/messages' && l.trace_id === client.traceId);
    expect(access, 'the access line of the traced enqueue').toBeDefined();
    expect(access!.span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(receiver.spans.some((s) => s.spanId === access!.span_id)).toBe(true);
  });
});

describeEachEngine('tracing: expiry reaper and a second instance', (engine) => {
  let receiver: OtlpReceiver;
  let a: TestServer & { database: TestDatabase };
  let b: TestServer;

  beforeAll(async () => {
    receiver = await new OtlpReceiver().start();
    const overrides = { telemetry: { traces_endpoint: receiver.url, traces_sample_ratio: 1, traces_export_interval: '100ms' }, queue: { expiry_reaper_interval: '1s' } };
    a = await startTestServer(engine, { overrides });
    b = await startTestServer(engine, { overrides, database: a.database });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await receiver?.close();
  });

  it('the expiry reaper dead-letters a delivery nobody settled and makes an expire span linked to its send span', async () => {
    const topic = `trace-reaped-${engine.name}`;
    expect((await a.api.put(`/api/topic-configs/${topic}`, { max_retries: 1 })).status).toBe(200);
    const enqueued = await a.api.post('/api/messages', { topic, payload: MARKERS.payload, key: MARKERS.key, metadata: { note: MARKERS.metadata } }, { traceparent: clientSpan().traceparent });
    expect(enqueued.status).toBe(201);
    const [delivered] = (await a.api.dequeue(topic, { visibility_timeout_seconds: 1 })).body.messages;
    expect(delivered.id).toBe(enqueued.body.id);
    // Nobody dequeues the topic again: only the reaper can release it.
    const [expire] = await receiver.waitFor(isMessaging('expire', topic), 1, 15_000);
    expect(expire).toMatchObject({ name: `expire ${topic}`, parentSpanId: '' });
    expect(expire.attributes).toMatchObject({ 'messaging.operation.type': 'settle', 'messaging.message.id': delivered.id, 'conveyor.expire.outcome': 'dlq' });
    const [send] = await receiver.waitFor(isMessaging('send', topic));
    expect(partsOf(delivered.metadata.traceparent)).toMatchObject({ traceId: send.traceId, spanId: send.spanId });
    expect(linksTo(expire, delivered.metadata.traceparent)).toBe(true);
    expect((await a.api.get(`/api/messages?topic=${topic}.dlq`)).body.items.map((m: any) => m.id)).toEqual([delivered.id]);
  });

  it('an ack on another instance than the delivery\'s links to the send span, read from the store', async () => {
    const topic = `trace-elsewhere-${engine.name}`;
    const enqueued = await a.api.post('/api/messages', { topic, payload: MARKERS.payload, metadata: { note: MARKERS.metadata } }, { traceparent: clientSpan().traceparent });
    const [delivered] = (await a.api.dequeue(topic, { visibility_timeout_seconds: 60 })).body.messages;
    expect(delivered.id).toBe(enqueued.body.id);
    expect((await b.api.post(`/api/messages/${delivered.id}/ack`)).status).toBe(204);
    const [ack] = await receiver.waitFor(isMessaging('ack', topic));
    expect(ack).toMatchObject({ name: `ack ${topic}` });
    expect(ack.attributes).toMatchObject({ 'messaging.operation.type': 'settle', 'messaging.message.id': delivered.id });
    expect(linksTo(ack, delivered.metadata.traceparent)).toBe(true);
  });

  it('no payload, key or metadata value appears in these exports', async () => {
    await receiver.waitFor((s) => s.attributes['messaging.operation.name'] === 'expire');
    const exported = receiver.bodies.join('\n');
    for (const marker of Object.values(MARKERS)) expect(exported, marker).not.toContain(marker);
  });
});

describe('tracing: export settings', () => {
  const sqlite = engineByName.sqlite;

  it('sample ratio 0 exports nothing, even for a sampled caller, and still carries the caller\'s trace with the message', async () => {
    const receiver = await new OtlpReceiver().start();
    const server = await startTestServer(sqlite, { overrides: { telemetry: { traces_endpoint: receiver.url, traces_sample_ratio: 0, traces_export_interval: '100ms' } } });
    const client = clientSpan();
    try {
      expect((await server.api.post('/api/messages', { topic: 'ratio0', payload: 'x' }, { traceparent: client.traceparent })).status).toBe(201);
      const [message] = (await server.api.dequeue('ratio0')).body.messages;
      expect(partsOf(message.metadata.traceparent)).toMatchObject({ traceId: client.traceId, flags: '00' });
      expect((await server.api.post(`/api/messages/${message.id}/ack`)).status).toBe(204);
    } finally {
      // Shutdown exports whatever is queued: after it, nothing more can come.
      await server.close();
      await receiver.close();
    }
    expect(receiver.spans).toEqual([]);
  });

  it('with tracing off, a traceparent header is ignored and the message keeps the metadata it was given', async () => {
    const server = await startTestServer(sqlite);
    try {
      await server.api.post('/api/messages', { topic: 'off', payload: 'x', metadata: { a: 'b' } }, { traceparent: clientSpan().traceparent });
      const dq = await server.api.dequeue('off');
      expect(dq.status, dq.text).toBe(200);
      expect(dq.body.messages[0].metadata).toEqual({ a: 'b' });
    } finally {
      await server.close();
    }
  });

  it('an unreachable collector fails no request, and the log says exports fail', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const logs = new LogLines();
    const server = await startTestServer(sqlite, {
      overrides: { telemetry: { traces_endpoint: `http://127.0.0.1:${port}/v1/traces`, traces_sample_ratio: 1, traces_export_interval: '50ms' } },
      logger: createLogger('warn', logs),
    });
    try {
      for (let i = 0; i < 20; i++) {
        expect((await server.api.post('/api/messages', { topic: 'nowhere', payload: `m${i}` }, { traceparent: clientSpan().traceparent })).status).toBe(201);
        const [message] = (await server.api.dequeue('nowhere')).body.messages;
        expect((await server.api.post(`/api/messages/${message.id}/ack`)).status).toBe(204);
      }
      await expect.poll(() => logs.lines.some((l) => l.msg === 'trace export failed; spans are dropped until the collector answers'), { timeout: 10_000 }).toBe(true);
    } finally {
      await server.close();
    }
  });

  it('refuses settings that cannot work, naming the key', () => {
    expect(() => validateConfig({ telemetry: { traces_endpoint: 'tempo:4318' } })).toThrow(/telemetry\.traces_endpoint: expected the http:\/\/ or https:\/\/ URL/);
    expect(() => validateConfig({ telemetry: { traces_sample_ratio: 1.5 } })).toThrow(/telemetry\.traces_sample_ratio/);
    expect(() => validateConfig({ telemetry: { traces_headers: 'api-key' } })).toThrow(/telemetry\.traces_headers: expected name=value pairs/);
    expect(validateConfig({ telemetry: { traces_headers: 'api-key=s3cret,x-org=a%20b' } }).telemetry.traces_headers).toBe('api-key=s3cret,x-org=a%20b');
    const headersFile = join(mkdtempSync(join(tmpdir(), 'conveyor-tracing-')), 'headers');
    writeFileSync(headersFile, 'api-key\n');
    expect(() => validateConfig({ telemetry: { traces_headers_file: headersFile } })).toThrow(`telemetry.traces_headers (read from ${headersFile}): expected name=value pairs`);
    expect(validateConfig({}).telemetry).toEqual({ traces_endpoint: '', traces_headers: '', traces_headers_file: '', traces_sample_ratio: 0.1, traces_export_interval: 5 });
  });
});
