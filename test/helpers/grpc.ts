import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, expect } from 'vitest';
import { queueProtoPath } from '../../src/grpc/proto.js';
import type { Engine } from './engines.js';
import { manualClock, startTestServer, type ConfigOverrides, type TestClock, type TestServer } from './server.js';

type AnyClient = grpc.Client & Record<string, any>;

/** A real @grpc/grpc-js client for QueueService, loaded from proto/queue.proto. */
export class QueueClient {
  readonly raw: AnyClient;

  constructor(port: number, private readonly token?: string, options?: grpc.ChannelOptions) {
    const definition = protoLoader.loadSync(queueProtoPath(), { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
    const pkg = grpc.loadPackageDefinition(definition) as any;
    this.raw = new pkg.queue.QueueService(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), options);
  }

  metadata(token = this.token): grpc.Metadata {
    const metadata = new grpc.Metadata();
    if (token !== undefined) metadata.set('authorization', `Bearer ${token}`);
    return metadata;
  }

  call<T = any>(method: string, request: object, metadata = this.metadata()): Promise<T> {
    return new Promise((resolve, reject) => {
      this.raw[method](request, metadata, (err: grpc.ServiceError | null, response: T) => (err ? reject(err) : resolve(response)));
    });
  }

  subscribe(request: object, metadata = this.metadata()): grpc.ClientReadableStream<any> {
    return this.raw.Subscribe(request, metadata);
  }

  close(): void {
    this.raw.close();
  }
}

/** The call fails with `code`, and its details are a plain message without driver or stack text. */
export async function expectGrpcError(promise: Promise<unknown>, code: grpc.status, details?: RegExp): Promise<grpc.ServiceError> {
  const err = (await promise.then(
    (value) => {
      throw new Error(`expected ${grpc.status[code]}, got ${JSON.stringify(value)}`);
    },
    (e: grpc.ServiceError) => e,
  )) as grpc.ServiceError;
  expect(grpc.status[err.code], err.details).toBe(grpc.status[code]);
  expect(err.details.length).toBeGreaterThan(0);
  expect(err.details).not.toMatch(/\bat .+:\d+:\d+|node_modules|sqlite|knex/i);
  expect(err.details).not.toMatch(/\bER_[A-Z_]+|SQLITE_[A-Z]+/);
  if (details) expect(err.details).toMatch(details);
  return err;
}

/** Collects what a Subscribe stream pushes, and how it ended. */
export class StreamRecorder {
  readonly received: any[] = [];
  readonly receivedAt: number[] = [];
  ended?: { code: grpc.status; details: string };
  private waiters: Array<() => void> = [];

  constructor(readonly stream: grpc.ClientReadableStream<any>) {
    stream.on('data', (message) => {
      this.received.push(message);
      this.receivedAt.push(Date.now());
      this.notify();
    });
    stream.on('error', (err: grpc.ServiceError) => {
      this.ended = { code: err.code, details: err.details };
      this.notify();
    });
    stream.on('status', (s: grpc.StatusObject) => {
      this.ended ??= { code: s.code, details: s.details };
      this.notify();
    });
  }

  /** Waits until `predicate` holds, failing after `timeoutMs`. */
  async until(predicate: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; received ${this.received.length}, ended ${JSON.stringify(this.ended)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  private notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A suite's server on a manual clock, with a gRPC client: started before the suite's tests, closed after them. */
export interface ClockedSuite {
  clock: TestClock;
  server: TestServer;
  client: QueueClient;
}

export function clockedSuite(engine: Engine, overrides?: ConfigOverrides): ClockedSuite {
  const suite = { clock: manualClock() } as ClockedSuite;
  beforeAll(async () => {
    suite.server = await startTestServer(engine, { now: suite.clock.now, overrides });
    suite.client = new QueueClient(suite.server.server.grpcPort);
  });
  afterAll(async () => {
    suite.client?.close();
    await suite.server?.close();
  });
  return suite;
}
