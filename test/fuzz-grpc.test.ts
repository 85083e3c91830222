import { connect as connectHttp2, constants as httpConstants } from 'node:http2';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { queueProtoPath } from '../src/grpc/proto.js';
import { ADMIN, JWT_SECRET, USER_PASSWORD } from './helpers/auth.js';
import { describeEachEngine } from './helpers/engines.js';
import { changedBetween, fuzzSettings, guardedRows, installChangeCounter, runFuzz, setUpGuarded, unguarded, unguardedId, type Guarded } from './helpers/fuzz.js';
import { alarmingLogLines, rawRequest, startLoggedServer, type LoggedServer } from './helpers/raw-http.js';

/**
 * Property-based fuzzing of every method of queue.QueueService (issue item 1), one call at a time against one
 * server per engine: random field values (lone surrogates, huge counts, unknown ids, oversized batches),
 * requests mangled on the wire (invalid UTF-8 in strings, negative varints for uint32 fields, unknown and
 * wrongly typed fields, truncated or random bytes), raw HTTP/2 framing (compressed, cut short, two messages,
 * none), and Subscribe streams opened and cancelled. Every call must end with a proper status: never
 * INTERNAL, UNKNOWN or UNAVAILABLE, details without stack or SQL text; a rejected call changes no row; guarded
 * messages stay as they were; the server keeps answering.
 *
 * Two answers come from grpc-js itself, before any handler, and are INTERNAL there; the fuzzer allows exactly
 * those two (see TRANSPORT_INTERNALS) and nothing else.
 *
 * FUZZ_SEED (default: a fixed seed) and FUZZ_RUNS (default below) pick the cases; a failure prints the seed,
 * the shrunk call, the calls before it and the command that replays it. FUZZ_STATS=1 prints how the answers
 * spread over methods and statuses.
 */

/** Calls per engine (FUZZ_RUNS overrides both suites' counts). */
const DEFAULT_RUNS = 2500;
const DEFAULT_AUTH_RUNS = 1000;
const MAX_PAYLOAD = 4096;
const CHECK_EVERY = 250;

const root = protobuf.loadSync(queueProtoPath());
const SERVICE = 'queue.QueueService';
const METHODS = ['Enqueue', 'EnqueueBatch', 'Dequeue', 'BatchDequeue', 'Ack', 'Nack', 'AckBatch', 'ChangeVisibility', 'Subscribe'] as const;
type Method = (typeof METHODS)[number];
const requestType = (m: Method) => root.lookupType(`queue.${m}Request`);
const RESPONSE_TYPES: Record<Method, string> = {
  Enqueue: 'EnqueueResponse',
  EnqueueBatch: 'EnqueueBatchResponse',
  Dequeue: 'DequeueResponse',
  BatchDequeue: 'BatchDequeueResponse',
  Ack: 'AckResponse',
  Nack: 'NackResponse',
  AckBatch: 'AckBatchResponse',
  ChangeVisibility: 'ChangeVisibilityResponse',
  Subscribe: 'SubscribeResponse',
};

/** Statuses a call may end with. CANCELLED: a Subscribe the fuzzer cancelled. UNIMPLEMENTED: see the h2 cases. */
const ACCEPTABLE = new Set([
  grpc.status.OK,
  grpc.status.INVALID_ARGUMENT,
  grpc.status.NOT_FOUND,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.ALREADY_EXISTS,
  grpc.status.PERMISSION_DENIED,
  grpc.status.UNAUTHENTICATED,
  grpc.status.CANCELLED,
]);

/**
 * grpc-js answers these two faults of the transport itself with INTERNAL, before the service sees the call (no
 * hook reaches them): a compressed message that does not decompress, and a malformed grpc-timeout header.
 * Allowed only for the h2 cases that send exactly that.
 */
const TRANSPORT_INTERNALS: Record<string, string> = {
  'gzip-garbage': 'Failed to decompress message',
  'deflate-garbage': 'Failed to decompress message',
  'bad-timeout': 'Invalid grpc-timeout value',
};

const LEAKS = /\bat (?:.+ \()?(?:file:\/\/)?[\w./\\-]+\.[cm]?[jt]s:\d+:\d+|node_modules|node:internal|\.ts:\d+|\bknex\b|sqlite|syntax to use near|\bER_[A-Z_]+|SQLITE_[A-Z]+|\bselect\b.+\bfrom\b/i;

// ---- values -------------------------------------------------------------------------------------------

const nameArb = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('gz-a', 'gz-b', 'gz-fan', 'gz-cap') },
  { weight: 3, arbitrary: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,20}$/) },
  { weight: 1, arbitrary: fc.constantFrom('', 'a'.repeat(200), 'a'.repeat(201), `${'b'.repeat(200)}.dlq`, 'x.dlq', '.x', 'a/b', 'é', 'a\u0000b', '\ud800', '\udfff\ud800', 'A'.repeat(5000)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 20, unit: 'binary' }) },
);
/** Unary calls never name a guarded topic nor a Subscribe topic (sub…), so no stream ever claims their messages. */
const topicArb = fc.tuple(nameArb, fc.nat(9)).map(([t, roll]) => {
  const name = unguarded(roll === 0 && t.length < 205 ? `${t}.dlq` : t);
  return /^sub/i.test(name) ? `x${name}` : name;
});
/** Subscribe topics: an empty namespace of their own (nothing is ever enqueued there), or invalid names. */
const subscribeTopicArb = nameArb.map((t) => (/^[A-Za-z0-9][A-Za-z0-9._-]{0,190}$/.test(t) ? `sub-${t}` : t));
const groupArb = fc.oneof(
  { weight: 4, arbitrary: fc.constant('') },
  { weight: 4, arbitrary: fc.constantFrom('g1', 'g2', 'other') },
  { weight: 1, arbitrary: fc.constantFrom('a/b', 'g'.repeat(201), 'é', '.g', '\ud800') },
);
const keyArb = fc.option(
  fc.oneof(fc.constantFrom('k1', 'k2', '', 'k'.repeat(255), 'k'.repeat(256), '\u{1F4E6}'.repeat(255), '\u{1F4E6}'.repeat(256), '\ud800'), fc.string({ maxLength: 10 })),
  { nil: undefined },
);
const uint32Arb = fc.option(fc.oneof(fc.integer({ min: 0, max: 1001 }), fc.constantFrom(0, 1, 43_200, 43_201, 2 ** 31, 2 ** 32 - 1)), { nil: undefined });
/**
 * Long polling: mostly absent, 0 or out of range (answered at once); a real wait (1 s, on a topic that may be
 * empty) only now and then, a few calls per run, so the waits do not dominate the suite's time.
 */
const waitArb = fc.oneof(
  { weight: 150, arbitrary: fc.constantFrom(undefined, 0, 21, 2 ** 31, 2 ** 32 - 1) },
  { weight: 1, arbitrary: fc.constant(1) },
);
const payloadArb = fc.oneof(
  { weight: 6, arbitrary: fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)) },
  { weight: 1, arbitrary: fc.constantFrom(0, MAX_PAYLOAD - 1, MAX_PAYLOAD, MAX_PAYLOAD + 1).map((n) => Buffer.alloc(n, 0x61)) },
);
const metadataArb = fc.dictionary(fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('__proto__', 'constructor', '\ud800')), fc.string({ maxLength: 6 }), { maxKeys: 3 });

type IdRef = { pool: number } | { literal: string };
const idArb: fc.Arbitrary<IdRef> = fc.oneof(
  { weight: 4, arbitrary: fc.nat().map((pool) => ({ pool })) },
  { weight: 2, arbitrary: fc.uuid({ version: [4, 7] }).map((literal) => ({ literal })) },
  { weight: 1, arbitrary: fc.constantFrom('', 'not-a-uuid', "1' OR '1'='1", '\ud800', 'x'.repeat(300)).map((literal) => ({ literal })) },
);

/** Delays: mostly none or short (a delayed message is simply not claimable yet), sometimes out of range. */
const delayArb = fc.option(fc.oneof(fc.integer({ min: -1, max: 5 }), fc.constantFrom(604_800, 604_801, 2 ** 31 - 1, -(2 ** 31))), { nil: undefined });
const timestampArb = fc.option(
  fc.oneof(
    fc.record({ seconds: fc.integer({ min: 0, max: 2 ** 40 }), nanos: fc.integer({ min: 0, max: 999_999_999 }) }),
    fc.constantFrom({ seconds: -1, nanos: 0 }, { seconds: 0, nanos: -5 }, { seconds: 2 ** 53, nanos: 0 }),
  ),
  { nil: undefined },
);
const enqueueArb = fc.record(
  { topic: topicArb, payload: payloadArb, metadata: metadataArb, key: keyArb, ordering_key: keyArb, delay_seconds: delayArb, deliver_at: timestampArb },
  { requiredKeys: ['topic', 'payload'] },
);

const requestArbs: Record<Method, fc.Arbitrary<Record<string, unknown>>> = {
  Enqueue: enqueueArb,
  EnqueueBatch: fc.oneof(
    { weight: 8, arbitrary: fc.record({ requests: fc.array(enqueueArb, { maxLength: 4 }) }) },
    { weight: 1, arbitrary: fc.constant({ requests: Array.from({ length: 1001 }, (_, i) => ({ topic: 'gz-a', payload: Buffer.from(String(i)) })) }) },
  ),
  Dequeue: fc.record({ topic: topicArb, visibility_timeout_seconds: uint32Arb, consumer_group: groupArb, wait_seconds: waitArb }, { requiredKeys: ['topic'] }),
  BatchDequeue: fc.record(
    { topic: topicArb, count: uint32Arb, visibility_timeout_seconds: uint32Arb, consumer_group: groupArb, wait_seconds: waitArb },
    { requiredKeys: ['topic'] },
  ),
  Ack: fc.record({ id: idArb, consumer_group: groupArb }),
  Nack: fc.record({ id: idArb, error: fc.oneof(fc.string({ maxLength: 20 }), fc.constant('e'.repeat(70_000))), consumer_group: groupArb, delay_seconds: delayArb }),
  AckBatch: fc.record({ ids: fc.oneof(fc.array(idArb, { maxLength: 5 }), fc.constant(Array.from({ length: 1001 }, (_, i) => ({ pool: i })))), consumer_group: groupArb }),
  ChangeVisibility: fc.record({ id: idArb, visibility_timeout_seconds: fc.integer({ min: -5, max: 50_000 }), consumer_group: groupArb }),
  Subscribe: fc.record({ topic: subscribeTopicArb, visibility_timeout_seconds: uint32Arb, consumer_group: groupArb }, { requiredKeys: ['topic'] }),
};

/** How the encoded request is mangled on the wire (appended fields win over earlier ones in protobuf). */
type Mutation =
  | { kind: 'none' }
  | { kind: 'unknown-field'; field: number }
  | { kind: 'invalid-utf8'; field: number; bytes: number[] }
  | { kind: 'negative-varint'; field: number }
  | { kind: 'wrong-wire-type'; field: number; wireType: number }
  | { kind: 'truncated'; cut: number }
  | { kind: 'random'; bytes: number[] };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 12, arbitrary: fc.constant<Mutation>({ kind: 'none' }) },
  { weight: 1, arbitrary: fc.integer({ min: 5, max: 1000 }).map((field): Mutation => ({ kind: 'unknown-field', field })) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.integer({ min: 1, max: 4 }), fc.constantFrom([0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80], [0x61, 0x00, 0x62]))
      .map(([field, bytes]): Mutation => ({ kind: 'invalid-utf8', field, bytes: [...bytes] })),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }).map((field): Mutation => ({ kind: 'negative-varint', field })) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 4 }), fc.constantFrom(0, 1, 2, 3, 4, 5, 6, 7)).map(([field, wireType]): Mutation => ({ kind: 'wrong-wire-type', field, wireType })) },
  { weight: 1, arbitrary: fc.nat().map((cut): Mutation => ({ kind: 'truncated', cut })) },
  { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 30 }).map((bytes): Mutation => ({ kind: 'random', bytes })) },
);

/** Raw HTTP/2 framing around the (mangled) message, for what the grpc-js client never sends. */
type Framing = 'client' | 'gzip' | 'gzip-garbage' | 'deflate-garbage' | 'unknown-encoding' | 'cut-frame' | 'no-message' | 'two-messages' | 'bad-timeout' | 'not-grpc';
const framingArb = fc.oneof(
  { weight: 20, arbitrary: fc.constant<Framing>('client') },
  { weight: 1, arbitrary: fc.constantFrom<Framing>('gzip', 'gzip-garbage', 'deflate-garbage', 'unknown-encoding', 'cut-frame', 'no-message', 'two-messages', 'bad-timeout', 'not-grpc') },
);

interface Case {
  method: Method | 'Nope';
  request: Record<string, unknown>;
  mutation: Mutation;
  framing: Framing;
  /** A broken authorization value, sent when `credential` is 'garbage' (or always, with authentication off). */
  authorization?: string;
  /** With authentication on: whose token the call carries. */
  credential: 'admin' | 'user' | 'none' | 'garbage';
  /** How long a Subscribe stream stays open before the fuzzer cancels it. */
  holdMs: number;
}

const caseArb: fc.Arbitrary<Case> = fc
  .oneof({ weight: 40, arbitrary: fc.constantFrom(...METHODS) }, { weight: 1, arbitrary: fc.constant<'Nope'>('Nope') })
  .chain((method) =>
    fc.record({
      method: fc.constant(method),
      request: requestArbs[method === 'Nope' ? 'Ack' : method],
      mutation: mutationArb,
      framing: framingArb,
      authorization: fc.oneof({ weight: 9, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom('Bearer x', 'Bearer ', 'Basic abc', 'Bearer eyJhbGciOiJub25lIn0.e30.') }),
      holdMs: fc.integer({ min: 0, max: 30 }),
      credential: fc.constantFrom<Case['credential']>('admin', 'admin', 'admin', 'admin', 'user', 'user', 'user', 'none', 'garbage'),
    }),
  );

// ---- running a case -----------------------------------------------------------------------------------

interface Context {
  port: number;
  client: grpc.Client;
  guarded: Guarded;
  pool: string[];
  /** With authentication on: bearer tokens of the bootstrap admin and of a user with a few grants. */
  tokens?: { admin: string; user: string };
}

function resolveIds(ctx: Context, request: Record<string, unknown>): Record<string, unknown> {
  const resolve = (ref: IdRef) => unguardedId(ctx.guarded, 'pool' in ref ? (ctx.pool.length ? ctx.pool[ref.pool % ctx.pool.length] : '0190a0a0-0000-7000-8000-000000000000') : ref.literal);
  const out = { ...request };
  if (out.id !== undefined) out.id = resolve(out.id as IdRef);
  if (Array.isArray(out.ids)) out.ids = (out.ids as IdRef[]).map(resolve);
  return out;
}

function encode(ctx: Context, c: Case): Buffer {
  const method = c.method === 'Nope' ? 'Ack' : c.method;
  const type = requestType(method);
  const request = resolveIds(ctx, c.request);
  let bytes = Buffer.from(type.encode(type.fromObject(request)).finish());
  const writer = protobuf.Writer.create();
  const m = c.mutation;
  switch (m.kind) {
    case 'unknown-field':
      writer.uint32((m.field << 3) | 0).uint64(12345);
      break;
    case 'invalid-utf8':
      writer.uint32((m.field << 3) | 2).bytes(Buffer.from(m.bytes));
      break;
    case 'negative-varint':
      writer.uint32((m.field << 3) | 0).int64(-1);
      break;
    case 'wrong-wire-type':
      writer.uint32((m.field << 3) | m.wireType);
      if (m.wireType === 0) writer.uint32(7);
      else if (m.wireType === 1) writer.fixed64(1);
      else if (m.wireType === 5) writer.fixed32(1);
      break;
    case 'truncated':
      bytes = bytes.subarray(0, m.cut % Math.max(1, bytes.length));
      break;
    case 'random':
      bytes = Buffer.from(m.bytes);
      break;
  }
  bytes = Buffer.concat([bytes, Buffer.from(writer.finish())]);
  // A Subscribe whose mangled bytes still decode must not reach a topic outside its namespace.
  if (method === 'Subscribe') {
    try {
      const decoded = type.decode(bytes) as unknown as { topic?: string };
      if (decoded.topic && !/^sub-/.test(decoded.topic) && /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(decoded.topic)) {
        bytes = Buffer.concat([bytes, Buffer.from(protobuf.Writer.create().uint32((1 << 3) | 2).string(`sub-${decoded.topic}`.slice(0, 200)).finish())]);
      }
    } catch {
      // Undecodable: the server refuses it as such.
    }
  }
  if (method !== 'Subscribe' && c.mutation.kind !== 'none') {
    // Mangled unary requests that still decode are held to the same namespaces as generated ones.
    try {
      const decoded = type.decode(bytes) as unknown as { topic?: string; id?: string; ids?: string[]; requests?: Array<{ topic?: string }> };
      const names = [decoded.topic, ...(decoded.requests ?? []).map((r) => r.topic)].filter((t): t is string => typeof t === 'string');
      const ids = [decoded.id, ...(decoded.ids ?? [])].filter((i): i is string => typeof i === 'string');
      if (names.some((t) => /^(guard|sub)/i.test(t)) || ids.some((i) => ctx.guarded.ids.has(i.toLowerCase()))) return Buffer.from([0xff]);
    } catch {
      // Undecodable.
    }
  }
  return bytes;
}

interface Outcome {
  code: grpc.status;
  details: string;
  /** Response messages (one for a unary call). */
  messages: Buffer[];
  /** Set when the status came over raw HTTP/2 as a non-gRPC HTTP status. */
  httpStatus?: number;
}

function authorizationOf(ctx: Context, c: Case): string | undefined {
  if (!ctx.tokens || c.credential === 'garbage') return c.authorization;
  return c.credential === 'none' ? undefined : `Bearer ${ctx.tokens[c.credential]}`;
}

function metadataOf(ctx: Context, c: Case): grpc.Metadata {
  const metadata = new grpc.Metadata();
  const authorization = authorizationOf(ctx, c);
  if (authorization !== undefined) metadata.set('authorization', authorization);
  return metadata;
}

const passthrough = { serialize: (b: Buffer) => b, deserialize: (b: Buffer) => b };

function callClient(ctx: Context, c: Case, bytes: Buffer): Promise<Outcome> {
  const path = `/${SERVICE}/${c.method}`;
  if (c.method === 'Subscribe') {
    return new Promise((resolve) => {
      const messages: Buffer[] = [];
      const stream = ctx.client.makeServerStreamRequest(path, passthrough.serialize, passthrough.deserialize, bytes, metadataOf(ctx, c), {});
      let timer: NodeJS.Timeout | undefined;
      stream.on('data', (m: Buffer) => messages.push(m));
      stream.on('error', () => undefined);
      stream.on('status', (s: grpc.StatusObject) => {
        clearTimeout(timer);
        resolve({ code: s.code, details: s.details, messages });
      });
      timer = setTimeout(() => stream.cancel(), c.holdMs);
    });
  }
  return new Promise((resolve) => {
    ctx.client.makeUnaryRequest(path, passthrough.serialize, passthrough.deserialize, bytes, metadataOf(ctx, c), { deadline: Date.now() + 20_000 }, (err, response) => {
      if (err) resolve({ code: err.code, details: err.details, messages: [] });
      else resolve({ code: grpc.status.OK, details: '', messages: response ? [response] : [] });
    });
  });
}

function frame(message: Buffer, compressed = false, length = message.length): Buffer {
  const head = Buffer.alloc(5);
  head[0] = compressed ? 1 : 0;
  head.writeUInt32BE(length, 1);
  return Buffer.concat([head, message]);
}

/** One call over a bare HTTP/2 stream, with the framing and headers a gRPC client would not produce. */
function callRaw(ctx: Context, c: Case, bytes: Buffer): Promise<Outcome> {
  const headers: Record<string, string> = { ':method': 'POST', ':path': `/${SERVICE}/${c.method}`, 'content-type': 'application/grpc', te: 'trailers' };
  const authorization = authorizationOf(ctx, c);
  if (authorization !== undefined) headers.authorization = authorization;
  let body: Buffer;
  switch (c.framing) {
    case 'gzip':
      headers['grpc-encoding'] = 'gzip';
      body = frame(gzipSync(bytes), true);
      break;
    case 'gzip-garbage':
      headers['grpc-encoding'] = 'gzip';
      body = frame(bytes, true);
      break;
    case 'deflate-garbage':
      headers['grpc-encoding'] = 'deflate';
      body = frame(Buffer.concat([Buffer.from([0xff]), bytes]), true);
      break;
    case 'unknown-encoding':
      headers['grpc-encoding'] = 'snappy';
      body = frame(bytes, true);
      break;
    case 'cut-frame':
      body = frame(bytes, false, bytes.length + 10);
      break;
    case 'no-message':
      body = Buffer.alloc(0);
      break;
    case 'two-messages':
      body = Buffer.concat([frame(bytes), frame(bytes)]);
      break;
    case 'bad-timeout':
      headers['grpc-timeout'] = 'soon';
      body = frame(bytes);
      break;
    default:
      headers['content-type'] = 'application/json';
      body = frame(bytes);
  }
  return new Promise((resolve) => {
    const session = connectHttp2(`http://127.0.0.1:${ctx.port}`);
    const outcome: Outcome = { code: grpc.status.UNKNOWN, details: 'no status', messages: [] };
    const finish = () => {
      session.close();
      resolve(outcome);
    };
    session.on('error', (err) => {
      outcome.details = `session error ${err.message}`;
      finish();
    });
    const req = session.request(headers);
    const read = (h: Record<string, unknown>) => {
      if (h['grpc-status'] !== undefined) {
        outcome.code = Number(h['grpc-status']);
        outcome.details = decodeURIComponent(String(h['grpc-message'] ?? ''));
      }
    };
    req.on('response', (h) => {
      if (h[':status'] !== 200) outcome.httpStatus = Number(h[':status']);
      read(h);
    });
    req.on('trailers', read);
    req.on('data', () => undefined);
    req.on('error', () => undefined);
    req.on('close', () => {
      // A Subscribe the fuzzer cancelled has no status of its own.
      if (c.method === 'Subscribe' && outcome.details === 'no status') Object.assign(outcome, { code: grpc.status.CANCELLED, details: 'cancelled by the fuzzer' });
      finish();
    });
    req.setTimeout(10_000, () => req.close());
    if (c.method === 'Subscribe') setTimeout(() => req.close(httpConstants.NGHTTP2_CANCEL), c.holdMs + 20);
    req.end(body);
  });
}

function problemOf(c: Case, outcome: Outcome): string | undefined {
  if (outcome.httpStatus !== undefined) {
    return c.framing === 'not-grpc' && outcome.httpStatus === 415 ? undefined : `HTTP status ${outcome.httpStatus} (${outcome.details})`;
  }
  const expectedInternal = TRANSPORT_INTERNALS[c.framing];
  if (outcome.code === grpc.status.INTERNAL && expectedInternal && outcome.details.startsWith(expectedInternal)) return undefined;
  const unimplementedOk = c.method === 'Nope' || ['unknown-encoding', 'cut-frame', 'no-message', 'two-messages'].includes(c.framing);
  if (!ACCEPTABLE.has(outcome.code) && !(unimplementedOk && outcome.code === grpc.status.UNIMPLEMENTED)) return `status ${grpc.status[outcome.code] ?? outcome.code}: ${outcome.details}`;
  if (outcome.code === grpc.status.CANCELLED && c.method !== 'Subscribe') return `CANCELLED on a unary call: ${outcome.details}`;
  if (outcome.code !== grpc.status.OK && outcome.code !== grpc.status.CANCELLED && outcome.details.length === 0) return 'an error without details';
  if (LEAKS.test(outcome.details)) return `details leak internals: ${outcome.details}`;
  if (c.method !== 'Nope') {
    const type = root.lookupType(`queue.${RESPONSE_TYPES[c.method]}`);
    for (const m of outcome.messages) {
      try {
        type.decode(m);
      } catch (err) {
        return `a response that does not decode as ${type.name}: ${(err as Error).message}`;
      }
    }
  }
  return undefined;
}

function collectIds(ctx: Context, c: Case, outcome: Outcome): void {
  if (outcome.code !== grpc.status.OK || c.method === 'Nope') return;
  const type = root.lookupType(`queue.${RESPONSE_TYPES[c.method]}`);
  for (const m of outcome.messages) {
    const o = type.toObject(type.decode(m)) as { id?: string; ids?: string[]; messages?: Array<{ id?: string }> };
    for (const id of [o.id, ...(o.ids ?? []), ...(o.messages ?? []).map((x) => x.id)]) if (typeof id === 'string' && id && ctx.pool.length < 5000) ctx.pool.push(id);
  }
}

function describeCase(ctx: Context, c: Case): string {
  const request = resolveIds(ctx, c.request);
  const shown = JSON.stringify(request, (_k, v) => (v && v.type === 'Buffer' && Array.isArray(v.data) ? `<${v.data.length} bytes>` : typeof v === 'string' && v.length > 80 ? `${v.slice(0, 80)}…(${v.length})` : v));
  const who = ctx.tokens ? `, as ${c.credential}` : '';
  return `${c.method} ${shown.slice(0, 400)} [wire: ${JSON.stringify(c.mutation)}, framing: ${c.framing}${who}${authorizationOf(ctx, c) && c.credential === 'garbage' ? `, authorization ${JSON.stringify(c.authorization)}` : ''}]`;
}

/**
 * One suite per engine; with `auth`, authentication is on and the calls carry the admin's token, a regular
 * user's (write on gz-*, a consume grant on gz-fan), no token or a broken one.
 */
function fuzzSuite(title: string, auth: boolean, defaultRuns: number): void {
  describeEachEngine(title, (engine) => {
    const settings = fuzzSettings(defaultRuns);
    const label = `${title} [${engine.name}]`;
    let server: LoggedServer;
    let changes: () => Promise<Record<string, number>>;
    let ctx: Context;

    beforeAll(async () => {
      server = await startLoggedServer(engine, {
        queue: { max_payload_bytes: MAX_PAYLOAD },
        reapers: { mode: 'external' },
        ...(auth ? { auth: { enabled: true, jwt_secret: JWT_SECRET, username: ADMIN.username, password: ADMIN.password } } : {}),
      });
      let api = server.api;
      let tokens: Context['tokens'];
      if (auth) {
        const login = await api.post('/api/auth/login', ADMIN);
        api = api.withToken(login.body.token);
        const user = await api.post('/api/users', { username: 'fuzz-user', password: USER_PASSWORD });
        await api.post(`/api/users/${user.body.id}/grants`, { action: 'write', topic_pattern: 'gz-*' });
        await api.post(`/api/users/${user.body.id}/consumer-group-grants`, { consumer_group: 'g1', topic_pattern: 'gz-fan' });
        const userLogin = await api.post('/api/auth/login', { username: 'fuzz-user', password: USER_PASSWORD });
        tokens = { admin: login.body.token, user: userLogin.body.token };
      }
      const guarded = await setUpGuarded(api, server.server.db);
      await api.post('/api/topics/gz-fan/consumer-groups', { consumer_group: 'g1' });
      await api.put('/api/topic-configs/gz-cap', { max_depth: 2 });
      changes = await installChangeCounter(server.server.db);
      const client = new grpc.Client(`127.0.0.1:${server.grpcPort}`, grpc.credentials.createInsecure(), {
        'grpc.max_receive_message_length': -1,
        'grpc.max_send_message_length': -1,
      });
      ctx = { port: server.grpcPort, client, guarded, pool: [], tokens };
    });
    afterAll(async () => {
      ctx?.client.close();
      await server?.close();
    });

    async function invariantsHold(): Promise<void> {
      expect((await rawRequest(server.port, { method: 'GET', path: '/healthz' })).status, 'the server stopped answering /healthz').toBe(200);
      const probe: Case = { method: 'Dequeue', request: { topic: 'gz-empty' }, mutation: { kind: 'none' }, framing: 'client', holdMs: 0, credential: 'admin' };
      const empty = await callClient(ctx, probe, encode(ctx, probe));
      expect(grpc.status[empty.code], 'a plain Dequeue of an empty topic').toBe('NOT_FOUND');
      expect(await guardedRows(server.server.db), 'a guarded message, configuration or group changed').toEqual(ctx.guarded.snapshot);
    }

    it(`${settings.numRuns} random calls (seed ${settings.seed}): proper statuses only, no change by a rejected call`, async () => {
      let count = 0;
      const outcomes = new Map<string, number>();
      const recent: string[] = [];
      const history = () => `\n  the calls before it, oldest first:\n${recent.map((r) => `    ${r}`).join('\n')}`;
      const property = fc.asyncProperty(caseArb, async (c) => {
        const before = await changes();
        const bytes = encode(ctx, c);
        const outcome = c.framing === 'client' ? await callClient(ctx, c, bytes) : await callRaw(ctx, c, bytes);
        const problem = problemOf(c, outcome);
        if (problem) throw new Error(`${problem}\n  call: ${describeCase(ctx, c)}${history()}`);
        if (outcome.code !== grpc.status.OK && c.method !== 'Subscribe') {
          const changed = changedBetween(before, await changes());
          if (changed) throw new Error(`a rejected call (${grpc.status[outcome.code]}: ${outcome.details}) changed rows: ${changed}\n  call: ${describeCase(ctx, c)}${history()}`);
        }
        collectIds(ctx, c, outcome);
        const key = `${c.method} -> ${grpc.status[outcome.code] ?? outcome.code}${outcome.httpStatus ? ` (HTTP ${outcome.httpStatus})` : ''}`;
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
        recent.push(`${grpc.status[outcome.code]} ${describeCase(ctx, c).slice(0, 300)}`);
        if (recent.length > 5) recent.shift();
        if (++count % CHECK_EVERY === 0) await invariantsHold();
      });
      const started = Date.now();
      await runFuzz(label, property, settings, 'test/fuzz-grpc.test.ts');
      console.log(`[${label}] ${settings.numRuns} cases, seed ${settings.seed}, ${((Date.now() - started) / 1000).toFixed(1)} s`);
      if (process.env.FUZZ_STATS) console.log([...outcomes].sort().map(([k, n]) => `${String(n).padStart(6)}  ${k}`).join('\n'));
      await invariantsHold();
    }, 360_000);

    it('the server recorded no INTERNAL or UNKNOWN of its own, and logged no error or stack trace', async () => {
      const metrics = await rawRequest(server.port, { method: 'GET', path: '/metrics', headers: ctx.tokens ? { authorization: `Bearer ${ctx.tokens.admin}` } : {} });
      expect(metrics.status).toBe(200);
      const bad = metrics.text.split('\n').filter((l) => l.startsWith('conveyor_grpc_request_duration_seconds_count') && /code="(INTERNAL|UNKNOWN|UNAVAILABLE|DATA_LOSS)"/.test(l));
      expect(bad).toEqual([]);
      expect(alarmingLogLines(server.logs)).toEqual([]);
    });
  });
}

fuzzSuite('gRPC fuzzing', false, DEFAULT_RUNS);
fuzzSuite('gRPC fuzzing with authentication on', true, DEFAULT_AUTH_RUNS);
