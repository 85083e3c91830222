import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BODY_FIELDS } from '../src/http/operations.js';
import { ADMIN, JWT_SECRET, USER_PASSWORD } from './helpers/auth.js';
import { describeEachEngine } from './helpers/engines.js';
import { changedBetween, fuzzSettings, guardedRows, installChangeCounter, runFuzz, setUpGuarded, unguarded, unguardedId, type Guarded } from './helpers/fuzz.js';
import { alarmingLogLines, errorShapeProblem, rawRequest, rawSocket, startLoggedServer, type LoggedServer, type RawResponse } from './helpers/raw-http.js';

/**
 * Property-based fuzzing of the whole HTTP surface (issue item 1): random methods, paths from the route table
 * with hostile parameters, query strings, headers, content encodings, framing and bodies, one request at a
 * time against one server per engine. Every answer must be below 500; every error `{"error": "<message>"}` as
 * application/json without internals; a rejected request must change no row (a trigger counts every write);
 * guarded messages set up beforehand must stay exactly as they were; /healthz must keep answering; no 5xx
 * may appear in the request metrics and no error or stack trace in the log.
 *
 * FUZZ_SEED (default: a fixed seed) and FUZZ_RUNS (default below) pick the cases; a failure prints the seed,
 * the shrunk request, the requests before it and the command that replays it. FUZZ_STATS=1 prints how the
 * answers spread over routes and statuses.
 */

/** Cases per engine (FUZZ_RUNS overrides both suites' counts). */
const DEFAULT_RUNS = 3000;
const DEFAULT_AUTH_RUNS = 1200;
const MAX_PAYLOAD = 4096;
const CHECK_EVERY = 250;
/** The single-request body limit of the server under test (src/http/app.ts, singleBodyLimit). */
const BODY_LIMIT = 6 * MAX_PAYLOAD + 64 * 1024;

/** Route templates with the methods they serve (others get 405), plus paths that are no route. */
const ROUTES: Array<[string, string[]]> = [
  ['/healthz', ['GET']],
  ['/readyz', ['GET']],
  ['/api/version', ['GET']],
  ['/metrics', ['GET']],
  ['/api/auth/status', ['GET']],
  ['/api/auth/login', ['POST']],
  ['/api/auth/refresh', ['POST']],
  ['/api/messages', ['GET', 'POST']],
  ['/api/messages/batch', ['POST']],
  ['/api/messages/dequeue', ['POST']],
  ['/api/messages/ack', ['POST']],
  ['/api/messages/:id/ack', ['POST']],
  ['/api/messages/:id/nack', ['POST']],
  ['/api/messages/:id/visibility', ['POST']],
  ['/api/messages/:id/requeue', ['POST']],
  ['/api/messages/:id', ['GET']],
  ['/api/topic-configs', ['GET']],
  ['/api/topic-configs/:topic', ['GET', 'PUT', 'DELETE']],
  ['/api/topic-schemas', ['GET']],
  ['/api/topic-schemas/:topic', ['GET', 'PUT', 'DELETE']],
  ['/api/stats', ['GET']],
  ['/api/topics', ['GET']],
  ['/api/topics/:topic/purge', ['POST']],
  ['/api/topics/:topic/messages/by-key/:key', ['DELETE']],
  ['/api/topics/:topic/consumer-groups', ['GET', 'POST']],
  ['/api/topics/:topic/consumer-groups/:group', ['GET', 'DELETE']],
  ['/api/topics/:topic/message-log', ['GET', 'DELETE']],
  ['/api/topics/:topic/replay', ['POST']],
  ['/api/admin/expiry-reaper/run', ['POST']],
  ['/api/admin/delete-reaper/run', ['POST']],
  ['/api/admin/archive-reaper/run', ['POST']],
  ['/api/admin/delete-reaper/schedule', ['GET', 'PUT']],
  ['/api/users', ['GET', 'POST']],
  ['/api/users/:id', ['PUT', 'DELETE']],
  ['/api/users/:id/grants', ['GET', 'POST']],
  ['/api/users/:id/grants/:grantId', ['DELETE']],
  ['/api/users/:id/consumer-group-grants', ['POST']],
  ['/api/users/:id/access-keys', ['GET', 'POST']],
  ['/api/users/:id/access-keys/:keyId', ['DELETE']],
  ['/api/audit-log', ['GET']],
  ['/api/topics/:topic', []],
  ['/api/nope', []],
  // The SQS-compatible API (docs/sqs.md): POST on / and on a queue URL's path, answering AWS-style errors.
  ['/', ['POST']],
  ['/000000000000/:topic', ['POST']],
];

/** Routes that hold or move messages come up three times as often. */
const BUSY = new Set(['/api/messages', '/api/messages/batch', '/api/messages/dequeue', '/api/messages/ack', '/api/messages/:id/ack', '/api/messages/:id/nack', '/api/messages/:id/visibility', '/api/messages/:id/requeue', '/api/topics/:topic/purge', '/api/topics/:topic/replay']);

const ODD_METHODS = ['PATCH', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND', 'M-SEARCH', 'PURGE', 'LOCK', 'SEARCH', 'QUERY'];

/** Mostly what clients send; now and then something odd. */
const oddly = <T>(usual: fc.Arbitrary<T>, odd: fc.Arbitrary<T>) => fc.oneof({ weight: 6, arbitrary: usual }, { weight: 1, arbitrary: odd });

// ---- values -------------------------------------------------------------------------------------------

/** A few topics the cases share (so they meet each other's messages), random ones, and hostile ones. */
const topicArb: fc.Arbitrary<string> = fc
  .tuple(
    fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom('fz-a', 'fz-b', 'fz-keyed', 'fz-fan', 'fz-replay', 'fz-cap') },
      { weight: 3, arbitrary: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,24}$/) },
      { weight: 1, arbitrary: fc.constantFrom('a'.repeat(200), 'a'.repeat(201), 'z'.repeat(199) + '.', '.dlq', '-x', '_x', 'x.dlq.dlq', 'x..y') },
      { weight: 1, arbitrary: fc.constantFrom('', ' ', 'a b', 'a/b', 'é', 'a\u0000b', '%', '%ZZ', '..', '*', 'a\nb', '\u{1F4E6}', 'A'.repeat(1000)) },
      { weight: 1, arbitrary: fc.string({ maxLength: 30, unit: 'binary' }) },
    ),
    fc.nat(9),
  )
  .map(([topic, roll]) => unguarded(roll === 0 && topic.length < 205 ? `${topic}.dlq` : topic));

const groupArb: fc.Arbitrary<string> = fc
  .oneof(
    { weight: 6, arbitrary: fc.constantFrom('g1', 'g2', 'fz-g', 'other') },
    { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,12}$/) },
    { weight: 1, arbitrary: fc.constantFrom('', 'a/b', 'g'.repeat(201), ' g', 'é', '.g') },
  )
  .map(unguarded);

const keyArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom('k1', 'k2', 'K1', 'k1 ') },
  { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 20, unit: 'grapheme' }) },
  { weight: 1, arbitrary: fc.constantFrom('', 'k'.repeat(255), 'k'.repeat(256), '\u{1F4E6}'.repeat(255), '\u{1F4E6}'.repeat(256), 'a/b', '%00', '\u0000') },
);

/** A random UUID, upper or lower case, or an id a previous case got back (resolved when the case runs). */
type IdRef = { pool: number } | { literal: string };
const idArb: fc.Arbitrary<IdRef> = fc.oneof(
  { weight: 4, arbitrary: fc.nat().map((pool) => ({ pool })) },
  { weight: 2, arbitrary: fc.uuid({ version: [4, 7] }).map((literal) => ({ literal })) },
  { weight: 1, arbitrary: fc.uuid().map((u) => ({ literal: u.toUpperCase() })) },
  { weight: 1, arbitrary: fc.constantFrom('not-a-uuid', '123', '', "1' OR '1'='1", '0190a0a0-0000-7000-8000-00000000000g', 'x'.repeat(300)).map((literal) => ({ literal })) },
);

const payloadArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.string({ minLength: 0, maxLength: 40, unit: 'grapheme' }) },
  { weight: 1, arbitrary: fc.constantFrom('{"n":1}', '{"n":"x"}', '{}', '""') },
  { weight: 1, arbitrary: fc.constantFrom(MAX_PAYLOAD - 1, MAX_PAYLOAD, MAX_PAYLOAD + 1).chain((n) => fc.constantFrom('x', '"', '\u0001', 'é', '\u{1F4E6}').map((c) => c.repeat(Math.ceil(n / Buffer.byteLength(c))))) },
);

const intArb = oddly(fc.integer({ min: 1, max: 100 }), fc.constantFrom(-1, 0, 1000, 1001, 43_200, 43_201, 2 ** 31, 2 ** 53, -(2 ** 53), 1.5, -0.5, 1e308));
const hostileArb: fc.Arbitrary<unknown> = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom(null, '', 'x'.repeat(70_000), [], {}, -1, true));
const timeArb = fc.oneof(
  fc.date({ min: new Date('1970-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom('2026-11-22T10:00:00Z', '2026-11-22T10:00:00+02:00', '2026-11-22 10:00:00Z', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59.999999999Z', 'yesterday', '2026-13-45T25:61:61Z', ''),
);
const cronArb = fc.oneof(
  fc.constantFrom('', '0 3 * * *', '*/5 * * * *', '0 0 3 * * *', '@daily', '@reboot', '61 * * * *', '* * *', '0 0 0 0 0 0 0', 'L W # ?', '* * * * * * * * * *'),
  fc.array(fc.constantFrom('*', '0', '59', '*/2', '1-5', 'MON', 'x', '?', 'L'), { minLength: 0, maxLength: 8 }).map((p) => p.join(' ')),
);
const schemaJsonArb = fc.oneof(
  fc.constantFrom('"string"', '{"type":"record","name":"N","fields":[{"name":"n","type":"int"}]}', '{"type":"nonsense"}', '{not json', '[]', 'null', '{"type":"record","name":"R","fields":[{"name":"r","type":"R"}]}'),
  fc.string({ maxLength: 30 }),
);

/** A plausible value for each field a route reads (or, now and then, anything at all). */
const FIELD_VALUES: Record<string, fc.Arbitrary<unknown>> = {
  topic: topicArb,
  payload: payloadArb,
  metadata: oddly<unknown>(fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 }), fc.constantFrom({ a: 1 }, { a: { b: 'c' } }, 'a=b', [], null)),
  key: keyArb,
  count: intArb,
  visibility_timeout_seconds: intArb,
  consumer_group: groupArb,
  // Long polling: mostly answered at once (0, out of range, not an integer); a real 1 s wait only now and then.
  wait_seconds: fc.oneof({ weight: 150, arbitrary: fc.constantFrom(0, 21, -1, 1.5, '1', null) }, { weight: 1, arbitrary: fc.constant(1) }),
  error: fc.oneof(fc.string({ maxLength: 30 }), fc.constant('e'.repeat(70_000))),
  ids: fc.array(idArb, { maxLength: 5 }),
  messages: fc.array(
    fc.record({ topic: topicArb, payload: payloadArb, key: fc.option(keyArb, { nil: undefined }) }, { requiredKeys: ['topic', 'payload'] }),
    { minLength: 0, maxLength: 4 },
  ),
  statuses: fc.array(fc.constantFrom('pending', 'processing', 'expired', 'failed', 'done', 'PENDING'), { maxLength: 3 }),
  schema_json: schemaJsonArb,
  max_retries: fc.oneof(intArb, fc.constant(null)),
  message_ttl_seconds: fc.oneof(intArb, fc.constant(null)),
  max_depth: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constant(null)),
  throughput_limit: fc.oneof(intArb, fc.constant(null)),
  replayable: fc.oneof(fc.boolean(), fc.constantFrom('yes', 1, null)),
  replay_window_seconds: fc.oneof(intArb, fc.constant(null)),
  from_time: timeArb,
  schedule: cronArb,
  username: fc.oneof(fc.stringMatching(/^fz-[a-z]{1,6}$/), fc.string({ maxLength: 10 })),
  password: fc.oneof(fc.constant('a-long-enough-password'), fc.string({ maxLength: 14 })),
  is_admin: fc.oneof(fc.boolean(), fc.constantFrom('true', 1, null)),
  action: fc.constantFrom('read', 'write', 'admin', 'consume', 'READ', ''),
  topic_pattern: fc.constantFrom('*', 'fz-*', 'fz.*', '', '**', 'a'.repeat(300)),
};

// ---- requests -----------------------------------------------------------------------------------------

type BodySpec =
  | { kind: 'object'; fields: Array<[string, unknown]> }
  | { kind: 'json'; value: unknown }
  | { kind: 'text'; text: string }
  | { kind: 'bytes'; bytes: number[] }
  | { kind: 'truncated'; fields: Array<[string, unknown]>; cut: number }
  | { kind: 'none' };

type Encoding = 'none' | 'identity' | 'gzip' | 'deflate' | 'br' | 'gzip-invalid' | 'br-invalid' | 'gzip-truncated' | 'garbage' | 'GZIP' | 'gzip, identity';
type Framing = 'length' | 'chunked' | 'socket-short' | 'socket-long' | 'socket-double-length' | 'socket-cl-and-te' | 'socket-bad-chunk' | 'socket-raw-line';

interface Case {
  method: string;
  template: string;
  params: Record<string, string | IdRef>;
  /** Path parameters sent without percent-encoding (as hostile raw strings). */
  rawParams: boolean;
  suffix: string;
  query: string;
  headers: Record<string, string>;
  encoding: Encoding;
  framing: Framing;
  body: BodySpec;
  /** With authentication on: whose bearer token the request carries ('garbage': the generated header, if any). */
  credential: 'admin' | 'user' | 'none' | 'garbage';
}

/** Route fields (all of them, or some) with plausible values; a hostile case mixes in anything at all and unknown fields. */
const fieldsArb = (names: readonly string[], hostile: boolean) =>
  fc
    .tuple(
      fc.oneof(fc.constant([...names]), fc.subarray([...names])),
      fc.oneof({ weight: hostile ? 2 : 19, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom('bogus', 'extra_field', '__proto__', 'constructor', 'TOPIC') }),
    )
    .chain(([chosen, extra]) =>
      fc
        .tuple(
          ...chosen.map((name) => fc.oneof({ weight: hostile ? 2 : 12, arbitrary: FIELD_VALUES[name] ?? hostileArb }, { weight: 1, arbitrary: hostileArb })),
          extra === undefined ? fc.constant(undefined) : hostileArb,
        )
        .map((values) => {
          const fields: Array<[string, unknown]> = chosen.map((name, i) => [name, values[i]]);
          if (extra !== undefined) fields.push([extra, values[chosen.length]]);
          return fields;
        }),
    );

const bodyArb = (fieldNames: readonly string[], hostile: boolean): fc.Arbitrary<BodySpec> =>
  hostile
    ? fc.oneof(
        { weight: 6, arbitrary: fieldsArb(fieldNames, true).map((fields): BodySpec => ({ kind: 'object', fields })) },
        { weight: 2, arbitrary: fc.constant<BodySpec>({ kind: 'none' }) },
        { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value): BodySpec => ({ kind: 'json', value })) },
        { weight: 1, arbitrary: fc.constantFrom('', ' ', 'null', '"x"', '5', 'true', '[', '{', '[]', '{"a":1,}', '\ufeff{}', '{"topic":"fz-a","payload":"x"}garbage', 'topic=fz-a&payload=x', '{"a":' + '['.repeat(5000), '['.repeat(3000) + ']'.repeat(3000)).map((text): BodySpec => ({ kind: 'text', text })) },
        { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 40 }).map((bytes): BodySpec => ({ kind: 'bytes', bytes })) },
        // Right around the single-body limit (6 x max_payload_bytes + 64 KiB): 413 above it, parsed below.
        { weight: 1, arbitrary: fc.integer({ min: -40, max: 40 }).map((delta): BodySpec => ({ kind: 'text', text: `{"payload":"${'x'.repeat(BODY_LIMIT - 14 + delta)}"}` })) },
        { weight: 1, arbitrary: fc.tuple(fieldsArb(fieldNames, true), fc.nat()).map(([fields, cut]): BodySpec => ({ kind: 'truncated', fields, cut })) },
      )
    : fc.oneof(
        { weight: 8, arbitrary: fieldsArb(fieldNames, false).map((fields): BodySpec => ({ kind: 'object', fields })) },
        { weight: 1, arbitrary: fc.constant<BodySpec>({ kind: 'none' }) },
      );

/** An access key id: well-formed (and unknown), or not one. */
const keyIdArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.stringMatching(/^CVAK[A-Z2-7]{16}$/) },
  { weight: 1, arbitrary: fc.constantFrom('', 'CVAK', 'cvakaaaaaaaaaaaaaaaa', 'CVAK' + 'A'.repeat(300), '%ZZ', 'CVAKAAAAAAAAAAAAAAAA.secret') },
);

const paramArbs: Record<string, fc.Arbitrary<string | IdRef>> = { topic: topicArb, group: groupArb, key: keyArb, id: idArb, grantId: idArb, keyId: keyIdArb };

const headersArb = fc.record(
  {
    'content-type': oddly(
      fc.constantFrom('application/json', 'application/json; charset=utf-8'),
      fc.constantFrom(
        'application/json; charset=UTF-8',
        'application/json; charset=latin1',
        'application/json; charset=utf-16',
        'application/json; charset=utf-nope',
        'application/json; charset',
        'application/json;;;',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        '',
        '*/*',
        'application/json; charset="utf-8"',
      ),
    ),
    'x-request-id': oddly(fc.stringMatching(/^[A-Za-z0-9._:-]{1,20}$/), fc.constantFrom('x'.repeat(200), 'bad id', '')),
    accept: fc.constantFrom('application/json', 'text/html', '*/*', 'application/xml'),
    authorization: fc.constantFrom('Bearer x', 'Bearer ', 'Basic Zm9vOmJhcg==', 'Bearer eyJhbGciOiJub25lIn0.eyJ1aWQiOiIxIn0.', `Bearer CVAKAAAAAAAAAAAAAAAA.${'A'.repeat(40)}`, 'Bearer CVAK.'),
    expect: fc.constantFrom('100-continue'),
  },
  { requiredKeys: [] },
);

/**
 * A plausible request (a real method of the route, sane headers, framing and encoding, the route's fields with
 * mostly plausible values), so the cases get past parsing into the domain; or a hostile one, where every
 * dimension may be odd at once.
 */
const caseArb: fc.Arbitrary<Case> = fc
  .tuple(fc.constantFrom(...ROUTES, ...ROUTES.filter(([t]) => BUSY.has(t)), ...ROUTES.filter(([t]) => BUSY.has(t))), fc.nat(99), fc.boolean())
  .chain(([[template, methods], roll, hostile]) => {
    const method =
      methods.length > 0 && (!hostile || roll < 60) ? fc.constantFrom(...methods) : roll < 85 ? fc.constantFrom('GET', 'POST', 'PUT', 'DELETE') : fc.constantFrom(...ODD_METHODS);
    const names = [...template.matchAll(/:(\w+)/g)].map((m) => m[1]);
    const params = names.length === 0 ? fc.constant({}) : fc.record(Object.fromEntries(names.map((n) => [n, paramArbs[n]])));
    const fieldNames = BODY_FIELDS[`POST ${template}`] ?? BODY_FIELDS[`PUT ${template}`] ?? [];
    const queries = fc.array(
      fc.tuple(fc.constantFrom('topic', 'limit', 'offset', 'before', 'actor', 'via', 'x', 'topic[a]', 'limit[]'), fc.constantFrom('fz-a', 'fz-fan', '1', '0', '-1', '200', '201', 'x', '%ZZ', '2026-11-22T10:00:00Z', '', '1e3', '9'.repeat(30))),
      { maxLength: 4 },
    );
    return fc.record({
      method,
      template: fc.constant(template),
      params,
      rawParams: fc.constant(hostile && roll % 3 === 0),
      suffix: hostile ? fc.constantFrom('', '', '', '/', '//', '/..', '%2F', '/extra', '/%2e%2e') : fc.constant(''),
      query: fc.oneof({ weight: 3, arbitrary: fc.constant('') }, { weight: 1, arbitrary: queries.map((pairs) => (pairs.length ? `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}` : '')) }),
      headers: hostile ? headersArb : fc.record({ 'content-type': fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain') }, { requiredKeys: [] }),
      encoding: hostile
        ? fc.constantFrom<Encoding>('none', 'none', 'identity', 'gzip', 'deflate', 'br', 'gzip-invalid', 'br-invalid', 'gzip-truncated', 'garbage', 'GZIP', 'gzip, identity')
        : fc.constantFrom<Encoding>('none', 'none', 'none', 'none', 'none', 'none', 'identity', 'gzip', 'deflate', 'br'),
      framing: hostile
        ? fc.constantFrom<Framing>('length', 'length', 'length', 'chunked', 'socket-short', 'socket-long', 'socket-double-length', 'socket-cl-and-te', 'socket-bad-chunk', 'socket-raw-line')
        : fc.constantFrom<Framing>('length', 'length', 'length', 'chunked'),
      body: bodyArb(fieldNames, hostile),
      credential: fc.constantFrom('admin', 'admin', 'admin', 'admin', 'user', 'user', 'user', 'none', 'garbage'),
    });
  });

// ---- running a case -----------------------------------------------------------------------------------

interface Context {
  port: number;
  guarded: Guarded;
  /** Ids the server handed out during the run. */
  pool: string[];
  /** With authentication on: bearer tokens of the bootstrap admin and of a user with a few grants. */
  tokens?: { admin: string; user: string };
}

function resolveId(ctx: Context, ref: IdRef): string {
  const id = 'pool' in ref ? (ctx.pool.length > 0 ? ctx.pool[ref.pool % ctx.pool.length] : '0190a0a0-0000-7000-8000-000000000000') : ref.literal;
  return unguardedId(ctx.guarded, id);
}

/** Body fields holding ids (ids, messages) resolved; everything else as generated. */
function bodyValue(ctx: Context, fields: Array<[string, unknown]>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of fields) {
    const resolved = name === 'ids' && Array.isArray(value) ? value.map((v) => (typeof v === 'object' && v !== null && ('pool' in v || 'literal' in v) ? resolveId(ctx, v as IdRef) : v)) : value;
    Object.defineProperty(out, name, { value: resolved, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function bodyBytes(ctx: Context, spec: BodySpec): Buffer | undefined {
  switch (spec.kind) {
    case 'none':
      return undefined;
    case 'object':
      return Buffer.from(JSON.stringify(bodyValue(ctx, spec.fields)));
    case 'json':
      return Buffer.from(JSON.stringify(spec.value) ?? 'null');
    case 'text':
      return Buffer.from(spec.text);
    case 'bytes':
      return Buffer.from(spec.bytes);
    case 'truncated': {
      const full = JSON.stringify(bodyValue(ctx, spec.fields));
      return Buffer.from(full.slice(0, spec.cut % Math.max(1, full.length)));
    }
  }
}

function encode(encoding: Encoding, body: Buffer | undefined): { bytes: Buffer | undefined; header?: string } {
  const raw = body ?? Buffer.alloc(0);
  switch (encoding) {
    case 'none':
      return { bytes: body };
    case 'identity':
      return { bytes: body, header: 'identity' };
    case 'gzip':
    case 'GZIP':
      return { bytes: gzipSync(raw), header: encoding };
    case 'deflate':
      return { bytes: deflateSync(raw), header: 'deflate' };
    case 'br':
      return { bytes: brotliCompressSync(raw), header: 'br' };
    case 'gzip-invalid':
      return { bytes: raw, header: 'gzip' };
    case 'br-invalid':
      return { bytes: raw, header: 'br' };
    case 'gzip-truncated':
      return { bytes: gzipSync(raw).subarray(0, 10), header: 'gzip' };
    case 'garbage':
      return { bytes: raw, header: 'x-garbage' };
    case 'gzip, identity':
      return { bytes: gzipSync(raw), header: 'gzip, identity' };
  }
}

function pathOf(ctx: Context, c: Case): string {
  const path = c.template.replace(/:(\w+)/g, (_, name: string) => {
    const value = c.params[name];
    const text = typeof value === 'string' ? value : resolveId(ctx, value);
    // Raw parameters go as written when node:http takes them (printable ASCII without space, ?, #).
    return c.rawParams && /^[\x21-\x7e]*$/.test(text) && !/[?#/]/.test(text) ? text : encodeURIComponent(text);
  });
  return `${path}${c.suffix}${c.query}`;
}

/** One request as a human reads it, for the failure report. */
function describeCase(ctx: Context, c: Case): string {
  const body = bodyBytes(ctx, c.body);
  const shown = body === undefined ? '(no body)' : JSON.stringify(body.toString('utf8').slice(0, 300)) + (body.length > 300 ? `… (${body.length} bytes)` : '');
  return `${c.method} ${pathOf(ctx, c)} [${c.framing}, encoding ${c.encoding}${ctx.tokens ? `, as ${c.credential}` : ''}] headers ${JSON.stringify(c.headers)} body ${shown}`;
}

async function send(ctx: Context, c: Case): Promise<RawResponse> {
  const path = pathOf(ctx, c);
  const { bytes, header } = encode(c.encoding, bodyBytes(ctx, c.body));
  const headers: Record<string, string> = { ...c.headers };
  if (header !== undefined) headers['content-encoding'] = header;
  if (ctx.tokens && c.credential === 'none') delete headers.authorization;
  if (ctx.tokens && (c.credential === 'admin' || c.credential === 'user')) headers.authorization = `Bearer ${ctx.tokens[c.credential]}`;
  if (!c.framing.startsWith('socket')) {
    if (bytes !== undefined && c.framing === 'length') headers['content-length'] = String(bytes.length);
    if (bytes !== undefined && c.framing === 'chunked') headers['transfer-encoding'] = 'chunked';
    return rawRequest(ctx.port, { method: c.method, path, headers, body: bytes });
  }
  const body = bytes ?? Buffer.from('{}');
  const head = Object.entries(headers)
    .filter(([name]) => name !== 'expect')
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  const start = `${c.method} ${path} HTTP/1.1\r\nHost: fuzz\r\n${head}`;
  const options = { head: c.method === 'HEAD' };
  switch (c.framing) {
    case 'socket-short':
      return rawSocket(ctx.port, Buffer.concat([Buffer.from(`${start}Content-Length: ${body.length + 5}\r\n\r\n`), body]), { ...options, halfClose: true });
    case 'socket-long':
      return rawSocket(ctx.port, Buffer.concat([Buffer.from(`${start}Content-Length: ${Math.max(0, body.length - 1)}\r\n\r\n`), body, Buffer.from('GARBAGE')]), options);
    case 'socket-double-length':
      return rawSocket(ctx.port, Buffer.concat([Buffer.from(`${start}Content-Length: ${body.length}\r\nContent-Length: ${body.length + 1}\r\n\r\n`), body]), options);
    case 'socket-cl-and-te':
      return rawSocket(ctx.port, Buffer.concat([Buffer.from(`${start}Content-Length: ${body.length}\r\nTransfer-Encoding: chunked\r\n\r\n`), body]), options);
    case 'socket-bad-chunk':
      return rawSocket(ctx.port, Buffer.concat([Buffer.from(`${start}Transfer-Encoding: chunked\r\n\r\nzz\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]), options);
    default:
      // The path as bytes, not as node:http would escape it: spaces, controls, non-ASCII.
      return rawSocket(ctx.port, Buffer.concat([Buffer.from(`${c.method} ${c.template.replace(/:(\w+)/g, (_, n: string) => String(typeof c.params[n] === 'string' ? c.params[n] : 'id'))} HTTP/1.1\r\nHost: fuzz\r\nContent-Length: ${body.length}\r\n\r\n`), body]), options);
  }
}

const SQS_TYPE = 'application/x-amz-json-1.0';

/** An SQS error (`{__type, message}`), and only from the SQS endpoint: a POST on / or on a queue URL's path. */
function sqsErrorProblem(c: Case, res: RawResponse): string | undefined {
  if (c.method !== 'POST' || (c.template !== '/' && !c.template.startsWith('/000000000000/'))) return 'an SQS answer off the SQS endpoint';
  let body: { __type?: unknown; message?: unknown };
  try {
    body = JSON.parse(res.text) as typeof body;
  } catch {
    return 'SQS error body is not JSON';
  }
  if (Object.keys(body ?? {}).join() !== '__type,message') return `SQS error keys are ${JSON.stringify(Object.keys(body ?? {}))}`;
  if (typeof body.__type !== 'string' || !/^com\.amazonaws\.sqs#[A-Za-z]+$/.test(body.__type)) return 'SQS error __type is malformed';
  if (typeof body.message !== 'string' || body.message === '' || /node_modules|node:internal|\.ts:\d+|\bER_[A-Z_]+|SQLITE_[A-Z]+/.test(body.message)) return 'SQS error message is empty or leaks internals';
  return undefined;
}

/** What is wrong with one answer, or undefined. */
function answerProblem(c: Case, res: RawResponse): string | undefined {
  if (res.status === 0) return `no response (${res.failure})`;
  if (res.status >= 500) return `status ${res.status}`;
  if (c.method === 'HEAD') return undefined;
  if (res.status >= 400) return String(res.headers['content-type'] ?? '').startsWith(SQS_TYPE) ? sqsErrorProblem(c, res) : errorShapeProblem(res);
  const type = String(res.headers['content-type'] ?? '');
  if (type.startsWith('application/json') && res.text.length > 0) {
    try {
      JSON.parse(res.text);
    } catch {
      return 'a 2xx JSON answer that does not parse';
    }
  }
  return undefined;
}

function collectIds(ctx: Context, res: RawResponse): void {
  if (res.status < 200 || res.status >= 300 || !res.text.startsWith('{')) return;
  try {
    const body = JSON.parse(res.text) as { id?: unknown; ids?: unknown; messages?: Array<{ id?: unknown }> };
    const found = [body.id, ...(Array.isArray(body.ids) ? body.ids : []), ...(Array.isArray(body.messages) ? body.messages.map((m) => m?.id) : [])];
    for (const id of found) if (typeof id === 'string' && ctx.pool.length < 5000) ctx.pool.push(id);
  } catch {
    // Not every 2xx is JSON (metrics).
  }
}

/**
 * One suite per engine; with `auth`, authentication is on and the requests carry the admin's token, a regular
 * user's (write and read on fz-*, a consume grant on fz-fan), no token or a broken one.
 */
function fuzzSuite(title: string, auth: boolean, defaultRuns: number): void {
  describeEachEngine(title, (engine) => {
    const settings = fuzzSettings(defaultRuns);
    const label = `${title} [${engine.name}]`;
    let server: LoggedServer;
    let changes: () => Promise<Record<string, number>>;
    let ctx: Context;

    beforeAll(async () => {
      // External reapers: nothing writes in the background, so any change is the request's own.
      server = await startLoggedServer(engine, {
        queue: { max_payload_bytes: MAX_PAYLOAD },
        reapers: { mode: 'external' },
        auth: { credentials_key: Buffer.alloc(32, 7).toString('base64'), ...(auth ? { enabled: true, jwt_secret: JWT_SECRET, username: ADMIN.username, password: ADMIN.password } : {}) },
      });
      let api = server.api;
      let tokens: Context['tokens'];
      if (auth) {
        const login = await api.post('/api/auth/login', ADMIN);
        api = api.withToken(login.body.token);
        const user = await api.post('/api/users', { username: 'fuzz-user', password: USER_PASSWORD });
        for (const action of ['write', 'read']) await api.post(`/api/users/${user.body.id}/grants`, { action, topic_pattern: 'fz-*' });
        await api.post(`/api/users/${user.body.id}/consumer-group-grants`, { consumer_group: 'g1', topic_pattern: 'fz-fan' });
        const userLogin = await api.post('/api/auth/login', { username: 'fuzz-user', password: USER_PASSWORD });
        tokens = { admin: login.body.token, user: userLogin.body.token };
      }
      const guarded = await setUpGuarded(api, server.server.db);
      // fz-fan is a fan-out topic and fz-cap a tiny capped one, so the cases meet those rules too.
      await api.post('/api/topics/fz-fan/consumer-groups', { consumer_group: 'g1' });
      await api.put('/api/topic-configs/fz-cap', { max_depth: 2 });
      await api.put('/api/topic-configs/fz-replay', { replayable: true, max_retries: 2 });
      changes = await installChangeCounter(server.server.db);
      ctx = { port: server.port, guarded, pool: [], tokens };
    });
    afterAll(async () => {
      await server?.close();
    });

    async function invariantsHold(): Promise<void> {
      const health = await rawRequest(server.port, { method: 'GET', path: '/healthz' });
      expect(health.status, 'the server stopped answering /healthz').toBe(200);
      expect(await guardedRows(server.server.db), 'a guarded message, configuration or group changed').toEqual(ctx.guarded.snapshot);
    }

    it(`${settings.numRuns} random requests (seed ${settings.seed}): no 5xx, only well-formed errors, no change by a rejected request`, async () => {
      let count = 0;
      const outcomes = new Map<string, number>();
      /** The cases before the current one: a failure may be the after-effect of one of them. */
      const recent: string[] = [];
      const history = () => `\n  the cases before it, oldest first:\n${recent.map((r) => `    ${r}`).join('\n')}`;
      const property = fc.asyncProperty(caseArb, async (c) => {
        const before = await changes();
        const sent = Date.now();
        const res = await send(ctx, c);
        const problem = answerProblem(c, res);
        if (problem) throw new Error(`${problem}\n  request: ${describeCase(ctx, c)}\n  answer: ${res.status} ${JSON.stringify(res.headers['content-type'])} ${res.text.slice(0, 300)}${history()}`);
        if (res.status >= 400) {
          const changed = changedBetween(before, await changes());
          if (changed) throw new Error(`a rejected request (${res.status} ${res.text.slice(0, 200)}) changed rows: ${changed}\n  request: ${describeCase(ctx, c)}${history()}`);
        }
        recent.push(`${res.status} ${Date.now() - sent} ms ${describeCase(ctx, c).slice(0, 300)}`);
        if (recent.length > 5) recent.shift();
        collectIds(ctx, res);
        const outcome = `${c.method} ${c.template} -> ${res.status}`;
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        if (++count % CHECK_EVERY === 0) await invariantsHold();
      });
      const started = Date.now();
      await runFuzz(label, property, settings, 'test/fuzz-http.test.ts');
      console.log(`[${label}] ${settings.numRuns} cases, seed ${settings.seed}, ${((Date.now() - started) / 1000).toFixed(1)} s`);
      // FUZZ_STATS=1 prints how the answers spread over routes and statuses (what the cases reached).
      if (process.env.FUZZ_STATS) console.log([...outcomes].sort().map(([k, n]) => `${String(n).padStart(6)}  ${k}`).join('\n'));
      await invariantsHold();
    }, 360_000);

    it('no request was answered with a 5xx, and nothing was logged as an error or with a stack trace', async () => {
      const metrics = await rawRequest(server.port, { method: 'GET', path: '/metrics', headers: ctx.tokens ? { authorization: `Bearer ${ctx.tokens.admin}` } : {} });
      expect(metrics.status).toBe(200);
      const fivexx = metrics.text.split('\n').filter((l) => l.startsWith('conveyor_http_request_duration_seconds_count') && /status="5\d\d"/.test(l));
      expect(fivexx).toEqual([]);
      expect(alarmingLogLines(server.logs)).toEqual([]);
    });
  });
}

fuzzSuite('HTTP fuzzing', false, DEFAULT_RUNS);
fuzzSuite('HTTP fuzzing with authentication on', true, DEFAULT_AUTH_RUNS);
