import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BodyError } from '../src/http/body-errors.js';
import { errorResponse } from '../src/http/errors.js';
import { createLogger } from '../src/log/logger.js';
import { describeEachEngine } from './helpers/engines.js';
import { MISSING_ID } from './helpers/messages.js';
import { alarmingLogLines, errorShapeProblem, rawRequest, rawSocket, startLoggedServer, type LoggedServer, type RawResponse } from './helpers/raw-http.js';

/**
 * Issue item 1: a body that fails to decompress was a 500 with a stack trace in the log, on every JSON route.
 * Every error raised while reading a body carries a 4xx status and is answered with it, on every route.
 */

/** Hot routes first, then a sample of the other routes, every method with a body. */
const ROUTES: Array<[string, string]> = [
  ['POST', '/api/messages'],
  ['POST', '/api/messages/dequeue'],
  ['POST', `/api/messages/${MISSING_ID}/ack`],
  ['POST', '/api/messages/batch'],
  ['POST', '/api/messages/ack'],
  ['POST', `/api/messages/${MISSING_ID}/nack`],
  ['POST', `/api/messages/${MISSING_ID}/requeue`],
  ['PUT', '/api/topic-configs/t'],
  ['PUT', '/api/topic-schemas/t'],
  ['POST', '/api/topics/t/purge'],
  ['POST', '/api/topics/t/consumer-groups'],
  ['POST', '/api/topics/t/replay'],
  ['PUT', '/api/admin/delete-reaper/schedule'],
  ['POST', '/api/auth/login'],
  ['POST', '/api/users'],
  ['GET', '/api/stats'],
  ['DELETE', '/api/topic-configs/t'],
];

const JSON_BODY = '{"topic":"zipped","payload":"x"}';
const COMPRESS: Record<string, (b: Buffer) => Buffer> = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync };

/** Bodies that do not decompress under their Content-Encoding: plain bytes, nothing, a cut-off stream. */
const UNDECOMPRESSABLE: Array<[string, string, Buffer]> = Object.entries(COMPRESS).flatMap(([encoding, compress]): Array<[string, string, Buffer]> => [
  [encoding, 'plain bytes', Buffer.from(JSON_BODY)],
  [encoding, 'an empty body', Buffer.alloc(0)],
  [encoding, 'a truncated stream', compress(Buffer.from(JSON_BODY.repeat(50))).subarray(0, 12)],
  [encoding.toUpperCase(), 'plain bytes', Buffer.from(JSON_BODY)],
]);

let batchBombBytes: Buffer | undefined;
const batchBomb = () => (batchBombBytes ??= gzipSync(Buffer.alloc(64 * 1024 * 1024 + 1, 0x20)));

describe('errors raised while reading a body keep their 4xx status (the error table)', () => {
  const log = createLogger('silent');
  it.each([
    ['BODY_MALFORMED_JSON', 400, 'malformed JSON body'],
    ['BODY_NOT_UTF8', 400, 'request body is not valid UTF-8'],
    ['BODY_TOO_LARGE', 413, 'request body too large'],
    ['BODY_TOO_COMPLEX', 413, 'request body holds more than 1,000,000 objects and arrays'],
    ['BODY_ENCODING_UNSUPPORTED', 415, 'unsupported Content-Encoding; send the body as identity, gzip, deflate or br'],
    ['BODY_CHARSET_UNSUPPORTED', 415, 'unsupported charset; send UTF-8 JSON'],
    ['BODY_ABORTED', 400, 'request aborted'],
    ['BODY_SIZE_MISMATCH', 400, 'request body size does not match Content-Length'],
    ['BODY_NOT_DECOMPRESSED', 400, 'request body could not be decompressed; check Content-Encoding'],
  ] as const)('%s -> %i', (code, status, message) => {
    const err = new BodyError(code, { cause: Object.assign(new Error('incorrect header check: secret detail'), { code: 'Z_DATA_ERROR' }) });
    expect(err).toBeInstanceOf(Error);
    expect(err.code).toBe(code);
    expect(errorResponse(err, log)).toEqual({ status, message });
  });

  it('an error that merely carries a status is not trusted: 500, its text never answered', () => {
    expect(errorResponse({ status: 400, message: 'secret detail' }, log)).toEqual({ status: 500, message: 'internal error' });
    expect(errorResponse({ type: 'stream.encoding.set', status: 500 }, log)).toEqual({ status: 500, message: 'internal error' });
  });
});

describeEachEngine('compressed and oddly encoded bodies', (engine) => {
  let server: LoggedServer;
  beforeAll(async () => {
    // trust_proxy: each login request comes from its own address, so the login rate limit (every attempt counts,
    // a refused body too) never answers these with 429.
    server = await startLoggedServer(engine, { queue: { max_payload_bytes: 1024 }, server: { trust_proxy: true } });
  });
  afterAll(async () => {
    await server?.close();
  });

  let client = 0;
  const clientAddress = () => `10.${(++client >> 16) & 255}.${(client >> 8) & 255}.${client & 255}`;
  const send = (method: string, path: string, headers: Record<string, string>, body: Buffer) =>
    rawRequest(server.port, {
      method,
      path,
      headers: { 'content-type': 'application/json', 'content-length': String(body.length), 'x-forwarded-for': clientAddress(), ...headers },
      body,
    });

  function expectError(res: RawResponse, status: number, message?: string) {
    expect(res.status, `${res.status} ${res.text}`).toBe(status);
    expect(errorShapeProblem(res)).toBeUndefined();
    if (message) expect(JSON.parse(res.text).error).toBe(message);
  }

  it('a path that no route has is 404 whatever its body: bodies are read by routes, not before routing', async () => {
    for (const [encoding, , body] of UNDECOMPRESSABLE) expectError(await send('POST', '/api/no-such-route', { 'content-encoding': encoding }, body), 404, 'not found');
    expectError(await send('POST', '/api/no-such-route', { 'content-encoding': 'garbage' }, Buffer.from(JSON_BODY)), 404, 'not found');
  });

  for (const [method, path] of ROUTES) {
    it.each(UNDECOMPRESSABLE)(`${method} ${path}: Content-Encoding %s with %s is 400`, async (encoding, _what, body) => {
      expectError(await send(method, path, { 'content-encoding': encoding }, body), 400, 'request body could not be decompressed; check Content-Encoding');
    });

    it(`${method} ${path}: an unsupported Content-Encoding is 415, a decompression bomb 413`, async () => {
      for (const encoding of ['compress', 'x-gzip', 'gzip, br', 'garbage', 'zstd-nope']) {
        expectError(await send(method, path, { 'content-encoding': encoding }, Buffer.from(JSON_BODY)), 415);
      }
      // Spaces compress a thousandfold: over the single-body limit (6 x 1024 + 64 KiB), or the batch limit (64 MiB).
      const bomb = path === '/api/messages/batch' ? batchBomb() : gzipSync(Buffer.alloc(200 * 1024, 0x20));
      expectError(await send(method, path, { 'content-encoding': 'gzip' }, bomb), 413, 'request body too large');
    });
  }

  it('a route that takes no body fields reads at most 1 KiB of body: the open routes decompress and parse no more for anyone', async () => {
    // 2 MB of `{},` in a few hundred bytes of brotli: under the single-message limit this was decompressed and
    // parsed in full (seconds of CPU) before the route answered, on routes that need no token.
    const objects = brotliCompressSync(Buffer.from(`[${'{},'.repeat(700_000)}{}]`));
    expect(objects.length).toBeLessThan(1000);
    for (const [method, path] of [['GET', '/healthz'], ['GET', '/readyz'], ['GET', '/api/version'], ['GET', '/api/openapi.json'], ['GET', '/api/auth/status'], ['POST', `/api/messages/${MISSING_ID}/requeue`]]) {
      expectError(await send(method, path, { 'content-encoding': 'br' }, objects), 413, 'request body too large');
      expectError(await send(method, path, {}, Buffer.from(`{}${' '.repeat(1023)}`)), 413, 'request body too large');
      // What such a route accepts still fits: nothing, or an empty object.
      const fits = await send(method, path, {}, Buffer.from(`{}${' '.repeat(1022)}`));
      expect(fits.status, `${method} ${path}: ${fits.text}`).toBeLessThan(500);
      expect(fits.status, `${method} ${path}: ${fits.text}`).not.toBe(413);
    }
  });

  it('a body of more than 1,000,000 objects and arrays is 413 before it is parsed; brackets inside strings are text', async () => {
    // 2 bytes on the wire each, far more once parsed: a few KB of gzip that would parse into gigabytes.
    const empties = gzipSync(Buffer.from(`{"messages":[${'{},'.repeat(1_000_000)}{}]}`));
    expectError(await send('POST', '/api/messages/batch', { 'content-encoding': 'gzip' }, empties), 413, 'request body holds more than 1,000,000 objects and arrays');
    // 1,024,000 braces, all inside payloads, in a body long enough to be counted: enqueued.
    const messages = Array.from({ length: 1000 }, () => ({ topic: 'braces', payload: '{'.repeat(1024) }));
    const padded = Buffer.from(`${JSON.stringify({ messages })}${' '.repeat(1_000_000)}`);
    const res = await send('POST', '/api/messages/batch', { 'content-encoding': 'gzip' }, gzipSync(padded));
    expect(res.status, res.text).toBe(201);
  });

  it('the hot routes answer alike however the path is spelt (trailing slash, query string)', async () => {
    const hot = ROUTES.slice(0, 3);
    const cases: Array<[Record<string, string>, Buffer]> = [
      ...UNDECOMPRESSABLE.map(([encoding, , body]): [Record<string, string>, Buffer] => [{ 'content-encoding': encoding }, body]),
      [{ 'content-encoding': 'garbage' }, Buffer.from(JSON_BODY)],
      [{ 'content-encoding': 'gzip' }, gzipSync(Buffer.alloc(200 * 1024, 0x20))],
      [{ 'content-encoding': 'identity' }, Buffer.from('{"topic":')],
    ];
    for (const [method, path] of hot) {
      for (const [headers, body] of cases) {
        const plain = await send(method, path, headers, body);
        const other = await send(method, `${path}/?spelling=other`, headers, body);
        expect([plain.status, plain.text], JSON.stringify(headers)).toEqual([other.status, other.text]);
        expect(plain.status).toBeGreaterThanOrEqual(400);
        expect(plain.status).toBeLessThan(500);
      }
    }
  });

  it('a well-compressed body is read, under every supported encoding, on the hot routes and the others', async () => {
    for (const [encoding, compress] of Object.entries(COMPRESS)) {
      const res = await send('POST', '/api/messages', { 'content-encoding': encoding }, compress(Buffer.from(JSON_BODY)));
      expect(res.status, res.text).toBe(201);
      const purge = await send('POST', '/api/topics/zipped/purge', { 'content-encoding': encoding }, compress(Buffer.from('{"statuses":["pending"]}')));
      expect(JSON.parse(purge.text)).toEqual({ deleted: 1 });
    }
  });

  it('a charset is UTF-8 (utf-8 or utf8, any case, quoted or not) or the body is 415', async () => {
    const body = Buffer.from('{"topic":"charsets","payload":"x"}');
    const utf8 = ['charset=utf-8', 'charset=utf8', 'charset=UTF8', 'charset=UTF-8', 'charset="utf-8"', 'charset="UTF8"', 'charset = Utf-8', 'foo=bar; charset=utf8'];
    for (const parameter of utf8) {
      const res = await send('POST', '/api/messages', { 'content-type': `application/json; ${parameter}` }, body);
      expect(res.status, `${parameter}: ${res.text}`).toBe(201);
    }
    const others = ['charset=utf-16le', 'charset=UTF-16', 'charset=utf-16be', 'charset=utf-32', 'charset="utf-7"', 'charset=utf-8x', 'charset=latin1', 'charset=iso-8859-1', 'charset=us-ascii', 'charset=unicode-1-1-utf-8'];
    for (const parameter of others) {
      expectError(await send('POST', '/api/messages', { 'content-type': `application/json; ${parameter}` }, body), 415, 'unsupported charset; send UTF-8 JSON');
    }
    // A body really in UTF-16 is refused too, not read as something else.
    const utf16 = Buffer.from('{"topic":"charsets","payload":"x"}', 'utf16le');
    expectError(await send('POST', '/api/messages', { 'content-type': 'application/json; charset=utf-16le' }, utf16), 415, 'unsupported charset; send UTF-8 JSON');
    expectError(await send('POST', '/api/topics/charsets/purge', { 'content-type': 'application/json; charset=utf-16' }, Buffer.from('{}', 'utf16le')), 415);
    expect((await server.api.get('/api/messages?topic=charsets')).body.total).toBe(utf8.length);
  });

  it('bytes that are not UTF-8 are 400, never stored as U+FFFD', async () => {
    const invalid: Array<[string, Buffer]> = [
      ['a surrogate as UTF-8 would spell it (ED A0 80)', Buffer.from([0xed, 0xa0, 0x80])],
      ['a byte no UTF-8 text holds', Buffer.from([0xff])],
      ['a sequence cut short', Buffer.from([0xc3])],
      ['an overlong encoding of "/"', Buffer.from([0xc0, 0xaf])],
    ];
    const json = (middle: Buffer) => Buffer.concat([Buffer.from('{"topic":"not-utf8","payload":"a'), middle, Buffer.from('b"}')]);
    for (const [what, bytes] of invalid) {
      for (const [encoding, encode] of [['identity', (b: Buffer) => b], ['gzip', gzipSync]] as const) {
        const res = await send('POST', '/api/messages', { 'content-encoding': encoding }, encode(json(bytes)));
        expect([res.status, res.text], `${what}, ${encoding}`).toEqual([400, '{"error":"request body is not valid UTF-8"}']);
      }
    }
    expect((await server.api.get('/api/messages?topic=not-utf8')).body.total).toBe(0);
    // Valid multi-byte text, a byte order mark included, is read as it is.
    const valid = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json(Buffer.from('é📦'))]);
    expect((await send('POST', '/api/messages', {}, valid)).status).toBe(201);
    expect((await server.api.get('/api/messages?topic=not-utf8')).body.items.map((m: { payload: string }) => m.payload)).toEqual(['aé📦b']);
  });

  it('what node:http answers by itself is a JSON error too', async () => {
    const cases: Array<[string, string, number]> = [
      ['an unknown method', 'FOO /api/messages HTTP/1.1\r\nHost: x\r\n\r\n', 400],
      ['Content-Length and Transfer-Encoding together', 'POST /api/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}', 400],
      ['two different Content-Lengths', 'POST /api/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}', 400],
      ['a broken chunk', 'POST /api/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', 400],
      ['a body shorter than its Content-Length', 'POST /api/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n{}', 400],
      ['a body longer than its Content-Length', 'POST /api/messages/dequeue HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n{"topic":"t"}', 400],
      ['a control character in a header', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n', 400],
      ['headers over 16 KiB', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
      ['HTTP/1.1 without Host', 'GET /healthz HTTP/1.1\r\n\r\n', 400],
      ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405],
      ['an Expect other than 100-continue', 'POST /api/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: teapot\r\n\r\n{}', 417],
    ];
    for (const [what, bytes, status] of cases) {
      const res = await rawSocket(server.port, bytes, { halfClose: what === 'a body shorter than its Content-Length' });
      expect(res.status, `${what}: ${res.status} ${res.failure ?? ''} ${res.text}`).toBe(status);
      expect(errorShapeProblem(res), what).toBeUndefined();
    }
    // HTTP/1.0 needs no Host.
    expect((await rawSocket(server.port, 'GET /healthz HTTP/1.0\r\n\r\n')).status).toBe(200);
  });

  it('none of it logged a warning, an error or a stack trace', () => {
    expect(alarmingLogLines(server.logs)).toEqual([]);
  });
});

describeEachEngine('garbage after a complete request on the same connection', (engine) => {
  let server: LoggedServer;
  beforeAll(async () => {
    server = await startLoggedServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('the request is answered with its own outcome first; the 400 for the garbage comes after it', async () => {
    // The body is longer than its Content-Length: the request is `{"topic":"pipe","payload":"x"}`, the rest
    // garbage. The enqueue takes effect, so its answer must be the 201, not the garbage's 400.
    for (const path of ['/api/messages', '/api/messages?via=express']) {
      const body = '{"topic":"pipe","payload":"x"}';
      const res = await rawSocket(server.port, `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}GARBAGE\r\n\r\n`);
      expect(res.status, res.text).toBe(201);
    }
    expect((await server.api.get('/api/messages?topic=pipe')).body.total).toBe(2);
    const del = await rawSocket(server.port, 'DELETE /api/topics/pipe/messages/by-key/k HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\nNOT HTTP\r\n\r\n');
    expect(del.status, del.text).toBe(200);
  });
});
