import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { LOADER_OPTIONS, queueProtoPath } from '../src/grpc/proto.js';
import { BenchClient } from './http-client.js';

/**
 * The machine's speed at the time of a run, in the currency the service spends: the server CPU of a no-op
 * HTTP request on node:http and of a no-op unary call on grpc-js, each served by a process of its own with
 * the service's Node flags and nothing else in it. This machine's speed differs by 2-3x between days, so a
 * figure of the service means little without the reference beside it; "a Subscribe message costs 5.4 no-op
 * gRPC calls" compares across days, "217 µs" does not.
 */
export interface ReferenceCosts {
  /** Server CPU µs per no-op `POST` with a JSON body and a bearer token, 8 in flight, keep-alive. */
  httpNoopUs: number;
  /** Server CPU µs per no-op unary `Ack` call with `authorization` metadata, 8 in flight, one channel. */
  grpcNoopUs: number;
}

const CALLS = 3000;
const WARMUP = 1500;
/** Rounds per reference; the cheapest counts, as the one least disturbed by whatever else ran meanwhile. */
const ROUNDS = 5;
const IN_FLIGHT = 8;
/** As long as the bench's own tokens, so both servers parse headers of the size the service does. */
const TOKEN = 'x'.repeat(180);
const SELF = fileURLToPath(import.meta.url);

/** The no-op servers, in the child process this file is when forked with `serve`. */
function serve(): void {
  const http = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 2 });
      res.end('{}');
    });
  });
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(queueProtoPath(), LOADER_OPTIONS)) as unknown as { queue: { QueueService: grpc.ServiceClientConstructor } };
  const service = pkg.queue.QueueService.service;
  // The service's own setting (src/grpc/server.ts): no channelz.
  const server = new grpc.Server({ 'grpc.enable_channelz': 0 });
  const noop: grpc.UntypedServiceImplementation = {};
  for (const method of Object.keys(service)) noop[method] = (_call: unknown, callback: grpc.sendUnaryData<object>) => callback(null, {});
  server.addService(service, noop);
  http.listen(0, '127.0.0.1', () => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, grpcPort) => {
      if (err) throw err;
      process.send!({ httpPort: (http.address() as { port: number }).port, grpcPort });
    });
  });
  // The servers' CPU so far, in µs, whenever asked: finer than /proc's clock ticks.
  process.on('message', () => {
    const { user, system } = process.cpuUsage();
    process.send!({ cpuUs: user + system });
  });
}

/** Runs `calls` of `one` with IN_FLIGHT at a time. */
async function drive(calls: number, one: () => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < calls) {
      next++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

async function cpuPerCall(cpuUs: () => Promise<number>, one: () => Promise<unknown>): Promise<number> {
  await drive(WARMUP, one);
  let cheapest = Number.POSITIVE_INFINITY;
  for (let round = 0; round < ROUNDS; round++) {
    const before = await cpuUs();
    await drive(CALLS, one);
    cheapest = Math.min(cheapest, ((await cpuUs()) - before) / CALLS);
  }
  return Math.round(cheapest * 10) / 10;
}

/** Measures both references (10-20 s). */
export async function referenceCosts(nodeArgs: string[]): Promise<ReferenceCosts> {
  const child = fork(SELF, ['serve'], { execArgv: nodeArgs, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  try {
    const ports = await new Promise<{ httpPort: number; grpcPort: number }>((resolve, reject) => {
      child.once('message', (m) => resolve(m as { httpPort: number; grpcPort: number }));
      child.once('exit', (code) => reject(new Error(`the reference servers exited with ${code}`)));
    });
    const cpuUs = () =>
      new Promise<number>((resolve) => {
        child.once('message', (m) => resolve((m as { cpuUs: number }).cpuUs));
        child.send('cpu');
      });
    const http = new BenchClient(ports.httpPort, IN_FLIGHT, () => TOKEN);
    const body = { topic: 'reference', payload: 'x'.repeat(256) };
    const httpNoopUs = await cpuPerCall(cpuUs, () => http.post('/api/messages', body));
    http.close();

    const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(queueProtoPath(), LOADER_OPTIONS)) as unknown as { queue: { QueueService: grpc.ServiceClientConstructor } };
    const client = new pkg.queue.QueueService(`127.0.0.1:${ports.grpcPort}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      Ack(request: object, metadata: grpc.Metadata, callback: (err: grpc.ServiceError | null) => void): void;
    };
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${TOKEN}`);
    const ack = () => new Promise<void>((resolve, reject) => client.Ack({ id: '1234567890123456789' }, metadata, (err) => (err ? reject(err) : resolve())));
    const grpcNoopUs = await cpuPerCall(cpuUs, ack);
    client.close();
    return { httpNoopUs, grpcNoopUs };
  } finally {
    child.kill();
  }
}

if (process.argv[1] === SELF && process.argv[2] === 'serve' && process.send) serve();
