import { connect } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterEach, describe, expect, it } from 'vitest';
import { queueProtoPath } from '../src/grpc/proto.js';
import { createUser, startAuthServer } from './helpers/auth.js';
import { describeEachEngine, engineByName, type Engine } from './helpers/engines.js';
import { expectGrpcError, sleep, StreamRecorder } from './helpers/grpc.js';
import { startTestServer, type ConfigOverrides, type TestServer } from './helpers/server.js';

/**
 * The gRPC listener's limits (docs/security.md, Limits), each with a small configured value and answered as
 * documented. Transport-only limits run on SQLite alone; those that claim messages or load users run on
 * both engines.
 */

type AnyClient = grpc.Client & Record<string, any>;

/**
 * A QueueService client on a connection of its own: grpc-js shares one connection between clients of the same
 * target unless told otherwise, and these tests count per connection.
 */
class Conn {
  readonly raw: AnyClient;

  constructor(
    port: number,
    private readonly token?: string,
  ) {
    const definition = protoLoader.loadSync(queueProtoPath(), { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
    const pkg = grpc.loadPackageDefinition(definition) as any;
    this.raw = new pkg.queue.QueueService(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
      'grpc.use_local_subchannel_pool': 1,
      'grpc.max_receive_message_length': -1,
    });
  }

  private metadata(): grpc.Metadata {
    const metadata = new grpc.Metadata();
    if (this.token) metadata.set('authorization', `Bearer ${this.token}`);
    return metadata;
  }

  call<T = any>(method: string, request: object): Promise<T> {
    return new Promise((resolve, reject) => {
      this.raw[method](request, this.metadata(), (err: grpc.ServiceError | null, response: T) => (err ? reject(err) : resolve(response)));
    });
  }

  subscribe(topic: string): StreamRecorder {
    return new StreamRecorder(this.raw.Subscribe({ topic, visibility_timeout_seconds: 60 }, this.metadata()));
  }

  state(): grpc.connectivityState {
    return this.raw.getChannel().getConnectivityState(false);
  }

  close(): void {
    this.raw.close();
  }
}

const payload = (text: string) => Buffer.from(text);

/** Servers, connections and streams of one test, all ended after it. */
function fixture() {
  let server: TestServer | undefined;
  const conns: Conn[] = [];
  const streams: StreamRecorder[] = [];
  let feeder: Conn | undefined;
  let feederToken: string | undefined;
  afterEach(async () => {
    feeder = undefined;
    feederToken = undefined;
    for (const stream of streams.splice(0)) stream.stream.cancel();
    for (const conn of conns.splice(0)) conn.close();
    await server?.close();
    server = undefined;
  });
  return {
    async start(engine: Engine, overrides: ConfigOverrides['server'] = {}) {
      server = await startTestServer(engine, { overrides: { server: overrides } });
      return server;
    },
    /** A server started elsewhere; `token` enqueues the messages that prove a stream open. */
    adopt<T extends TestServer>(started: T, token?: string): T {
      server = started;
      feederToken = token;
      return started;
    },
    conn(port: number, token?: string) {
      const conn = new Conn(port, token);
      conns.push(conn);
      return conn;
    },
    /**
     * A Subscribe stream that is known to be open: it has received a message enqueued for it (through a
     * connection of its own, so the stream's connection has no other call open).
     */
    async openStream(conn: Conn, topic: string) {
      const rec = conn.subscribe(topic);
      streams.push(rec);
      feeder ??= this.conn(server!.server.grpcPort, feederToken);
      await feeder.call('Enqueue', { topic, payload: payload('hello') });
      await rec.until(() => rec.received.length === 1 || rec.ended !== undefined, 5000, `a delivery on ${topic}`);
      expect(rec.ended, `the stream on ${topic} ended`).toBeUndefined();
      return rec;
    },
    /** A Subscribe stream expected to be refused: how it ended. */
    async refusedStream(conn: Conn, topic: string) {
      const rec = conn.subscribe(topic);
      streams.push(rec);
      await rec.until(() => rec.ended !== undefined, 5000, `the stream on ${topic} to end`);
      return rec.ended!;
    },
  };
}

describe('gRPC transport limits [sqlite; no database involved]', () => {
  const f = fixture();

  it('a request over the receive limit (the HTTP batch body limit, 64 MiB) fails with RESOURCE_EXHAUSTED; the connection serves on', async () => {
    const server = f.adopt(await startTestServer(engineByName.sqlite, { overrides: { queue: { max_payload_bytes: 6 * 1024 * 1024 } } }));
    const conn = f.conn(server.server.grpcPort);
    // Above grpc-js's own 4 MiB default: the limit is the service's.
    expect((await conn.call('Enqueue', { topic: 'limits.big', payload: Buffer.alloc(5 * 1024 * 1024, 0x62) })).id).toBeTruthy();
    const tooLarge = Buffer.alloc(64 * 1024 * 1024 + 1, 0x61);
    await expectGrpcError(conn.call('Enqueue', { topic: 'limits.big', payload: tooLarge }), grpc.status.RESOURCE_EXHAUSTED, /larger than max/);
    expect((await conn.call('Enqueue', { topic: 'limits.big', payload: payload('small') })).id).toBeTruthy();
  });

  it('calls beyond server.grpc_max_concurrent_streams on one connection wait for a free stream, then complete', async () => {
    const server = await f.start(engineByName.sqlite, { grpc_max_concurrent_streams: 2, subscribe_streams_per_user: 10 });
    const conn = f.conn(server.server.grpcPort);
    const first = await f.openStream(conn, 'limits.streams.a');
    await f.openStream(conn, 'limits.streams.b');
    // Both streams of the connection are taken: a third call waits, while another connection is served.
    let done = false;
    const waiting = conn.call('Enqueue', { topic: 'limits.streams.c', payload: payload('queued') }).finally(() => (done = true));
    const other = f.conn(server.server.grpcPort);
    expect((await other.call('Enqueue', { topic: 'limits.streams.c', payload: payload('other') })).id).toBeTruthy();
    await sleep(300);
    expect(done, 'the third call completed while both streams were open').toBe(false);
    first.stream.cancel();
    expect((await waiting).id).toBeTruthy();
  });

  it('the server pings every connection and closes one that does not answer within server.grpc_keepalive_timeout; real clients stay connected', async () => {
    const server = await f.start(engineByName.sqlite, { grpc_keepalive_time: '500ms', grpc_keepalive_timeout: '1500ms', grpc_max_connection_idle: 0 });
    // A TCP connection that never speaks HTTP/2, so never answers a ping.
    const silent = connect(server.server.grpcPort, '127.0.0.1');
    silent.on('error', () => {});
    silent.resume();
    const closed = await Promise.race([new Promise<boolean>((resolve) => silent.once('close', () => resolve(true))), sleep(10_000).then(() => false)]);
    silent.destroy();
    expect(closed, 'the silent connection was not closed').toBe(true);

    const conn = f.conn(server.server.grpcPort);
    await conn.call('Enqueue', { topic: 'limits.keepalive', payload: payload('x') });
    const states = new Set<grpc.connectivityState>();
    for (let i = 0; i < 30; i++) {
      states.add(conn.state());
      await sleep(100);
    }
    // Several ping rounds later the same connection is still up: a client that answers pings is never cut.
    expect([...states]).toEqual([grpc.connectivityState.READY]);
  });

  it('a connection flooding pings without reading the answers is closed; the server serves on', async () => {
    const server = await f.start(engineByName.sqlite);
    const ping = Buffer.from([0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    const burst = Buffer.concat(Array.from({ length: 5000 }, () => ping));
    const closed = await new Promise<boolean>((resolve) => {
      const socket = connect(server.server.grpcPort, '127.0.0.1', () => {
        // The HTTP/2 preface and an empty SETTINGS frame, then bursts of PING frames, never reading a PING ACK.
        socket.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
        socket.write(Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]));
        socket.pause();
        let bursts = 0;
        const timer = setInterval(() => {
          if (++bursts > 100) {
            clearInterval(timer);
            socket.destroy();
            resolve(false);
          } else socket.write(burst);
        }, 50);
        socket.once('close', () => {
          clearInterval(timer);
          resolve(true);
        });
      });
      socket.on('error', () => {});
    });
    expect(closed, 'the flooding connection was not closed').toBe(true);
    expect((await f.conn(server.server.grpcPort).call('Enqueue', { topic: 'limits.flood', payload: payload('x') })).id).toBeTruthy();
  });

  it('a connection without calls for server.grpc_max_connection_idle is closed; the client reconnects on its next call', async () => {
    const server = await f.start(engineByName.sqlite, { grpc_max_connection_idle: '500ms' });
    const conn = f.conn(server.server.grpcPort);
    await conn.call('Enqueue', { topic: 'limits.idle', payload: payload('x') });
    expect(conn.state()).toBe(grpc.connectivityState.READY);
    const deadline = Date.now() + 10_000;
    while (conn.state() === grpc.connectivityState.READY && Date.now() < deadline) await sleep(50);
    expect(conn.state()).not.toBe(grpc.connectivityState.READY);
    expect((await conn.call('Enqueue', { topic: 'limits.idle', payload: payload('y') })).id).toBeTruthy();
  });
});

describeEachEngine('gRPC limits that claim or authenticate', (engine) => {
  const f = fixture();

  it('a reply over server.grpc_max_send_message_bytes fails with RESOURCE_EXHAUSTED; its messages return after their visibility timeout', async () => {
    const server = await f.start(engine, { grpc_max_send_message_bytes: 4096 });
    const conn = f.conn(server.server.grpcPort);
    const topic = 'limits.send';
    await conn.call('EnqueueBatch', { requests: Array.from({ length: 8 }, (_, i) => ({ topic, payload: Buffer.alloc(1000, 48 + i) })) });
    await expectGrpcError(conn.call('BatchDequeue', { topic, count: 8, visibility_timeout_seconds: 1 }), grpc.status.RESOURCE_EXHAUSTED, /larger than max/);
    // Fewer at a time fit; the eight come back once the failed claim's visibility timeout has passed.
    const seen = new Set<string>();
    const deadline = Date.now() + 15_000;
    while (seen.size < 8 && Date.now() < deadline) {
      const { messages } = await conn.call('BatchDequeue', { topic, count: 2, visibility_timeout_seconds: 60 });
      for (const m of messages) seen.add(m.id);
      if (messages.length === 0) await sleep(200);
    }
    expect(seen.size).toBe(8);
  });

  it('auth off: a Subscribe stream over server.subscribe_streams_per_user on one connection fails with RESOURCE_EXHAUSTED; other connections and freed slots are served', async () => {
    const server = await f.start(engine, { subscribe_streams_per_user: 2 });
    const port = server.server.grpcPort;
    const conn = f.conn(port);
    const first = await f.openStream(conn, 'limits.sub.a');
    await f.openStream(conn, 'limits.sub.b');
    const refused = await f.refusedStream(conn, 'limits.sub.c');
    expect(grpc.status[refused.code]).toBe('RESOURCE_EXHAUSTED');
    expect(refused.details).toMatch(/this connection has 2 open Subscribe streams.*server\.subscribe_streams_per_user/);
    // Unary calls on the same connection go on.
    expect((await conn.call('Enqueue', { topic: 'limits.sub.c', payload: payload('still') })).id).toBeTruthy();
    // Another connection has slots of its own.
    await f.openStream(f.conn(port), 'limits.sub.d');
    // Ending a stream frees its slot.
    first.stream.cancel();
    await first.until(() => first.ended !== undefined, 5000, 'the cancelled stream to end');
    let reopened: StreamRecorder | undefined;
    for (let attempt = 0; attempt < 50 && !reopened; attempt++) {
      const rec = conn.subscribe('limits.sub.e');
      await Promise.race([rec.until(() => rec.ended !== undefined, 5000).catch(() => {}), sleep(200)]);
      if (rec.ended === undefined) reopened = rec;
    }
    expect(reopened, 'no stream could be opened after one was cancelled').toBeDefined();
    reopened!.stream.cancel();
  });

  it('auth on: the cap counts per user across connections; another user is not affected', async () => {
    const server = await startAuthServer(engine, { overrides: { server: { subscribe_streams_per_user: 2 } } });
    const port = server.server.grpcPort;
    const [alice, bob, feeder] = [await createUser(server, ['write:limits.*']), await createUser(server, ['write:limits.*']), await createUser(server, ['write:limits.*'])];
    f.adopt(server, feeder.token);
    await f.openStream(f.conn(port, alice.token), 'limits.user.a');
    await f.openStream(f.conn(port, alice.token), 'limits.user.b');
    const refused = await f.refusedStream(f.conn(port, alice.token), 'limits.user.c');
    expect(grpc.status[refused.code]).toBe('RESOURCE_EXHAUSTED');
    expect(refused.details).toMatch(/this user has 2 open Subscribe streams/);
    await f.openStream(f.conn(port, bob.token), 'limits.user.d');
    // A caller without a valid token learns nothing about the cap: UNAUTHENTICATED comes first.
    const anonymous = await f.refusedStream(f.conn(port), 'limits.user.e');
    expect(grpc.status[anonymous.code]).toBe('UNAUTHENTICATED');
  });
});
