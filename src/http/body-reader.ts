import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Duplex, Readable } from 'node:stream';
import { BodyError, MAX_JSON_CONTAINERS } from './body-errors.js';

/**
 * Reads a request's JSON body, for every route, for every route, once per request (no middleware in front of
 * every route), with these rules:
 * - a request without a body (no Content-Length, no Transfer-Encoding) has none: `undefined`;
 * - JSON whatever the Content-Type says (`curl -d` sends form encoding by default); its charset, when given,
 *   must be UTF-8 (`utf-8` or `utf8`, any case, quoted or not), else 415: JSON is UTF-8 (RFC 8259), and a
 *   body in another encoding would not read as what the client meant;
 * - Content-Encoding identity, gzip, deflate or br, else 415 before anything is read;
 * - at most `limit` bytes after decompression, else 413 (at once when Content-Length already says so), and at
 *   most MAX_JSON_CONTAINERS objects and arrays, else 413 before parsing;
 * - bytes that are not UTF-8 (an invalid sequence, or a surrogate such as ED A0 80) are 400 `request body is
 *   not valid UTF-8`, where decoding would turn them into U+FFFD and store altered text;
 * - an empty body is `{}`, a UTF-8 byte order mark is dropped, anything JSON.parse accepts is returned
 *   (`null`, `"x"`, `5` included: the caller says what is wrong with them, not "malformed");
 * - a body that stops early, disagrees with its Content-Length or does not decompress is 400.
 * Errors are BodyErrors (body-errors.ts), with their status and message. After an error the rest of the body
 * is read off before the answer, so the connection stays usable.
 */

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length.trim() !== '' && !Number.isNaN(Number(length)));
}

const CHARSET = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]+))/i;

function charsetOf(req: IncomingMessage): string {
  const type = req.headers['content-type'];
  if (type === undefined) return 'utf-8';
  const match = CHARSET.exec(type);
  const charset = match ? (match[1] ?? match[2]).toLowerCase() : '';
  return charset === '' ? 'utf-8' : charset;
}

function decompressor(encoding: string): Duplex {
  if (encoding === 'gzip') return createGunzip();
  if (encoding === 'deflate') return createInflate();
  return createBrotliDecompress();
}

const isUtf8Charset = (charset: string) => charset === 'utf-8' || charset === 'utf8';

/** UTF-8 text (the only charset readJsonBody lets through), without a leading byte order mark. */
function decode(raw: Buffer): string {
  if (!isUtf8(raw)) throw new BodyError('BODY_NOT_UTF8');
  const text = raw.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Whether `text` opens at most `max` objects and arrays (brackets inside strings are text, not counted). */
function containersWithin(text: string, max: number): boolean {
  let count = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if ((c === 0x7b || c === 0x5b) && ++count > max) return false;
  }
  return true;
}

function parse(text: string): unknown {
  if (text.length === 0) return {};
  // An object or array takes 2 characters at least: only a body this long can hold too many.
  if (text.length > 2 * MAX_JSON_CONTAINERS && !containersWithin(text, MAX_JSON_CONTAINERS)) throw new BodyError('BODY_TOO_COMPLEX');
  try {
    return JSON.parse(text);
  } catch {
    throw new BodyError('BODY_MALFORMED_JSON');
  }
}

/** Reads what is left of a request and drops it, so an error answer does not cut the connection short. */
function drain(req: IncomingMessage): Promise<void> {
  if (req.complete || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    req.on('end', resolve);
    req.on('close', resolve);
    req.resume();
  });
}

export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  if (!hasBody(req)) return undefined;
  // A request whose connection has gone cannot be read: node would hand over no body at all, and the route
  // would run as if none had been sent (a purge with the default statuses).
  if (req.destroyed || !req.socket || !req.socket.readable) {
    if (!req.complete) throw new BodyError('BODY_ABORTED');
  }
  if (!isUtf8Charset(charsetOf(req))) throw new BodyError('BODY_CHARSET_UNSUPPORTED');
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip' && encoding !== 'deflate' && encoding !== 'br') throw new BodyError('BODY_ENCODING_UNSUPPORTED');
  const declared = encoding === 'identity' && req.headers['content-length'] !== undefined ? Number(req.headers['content-length']) : undefined;
  if (declared !== undefined && declared > limit) {
    await drain(req);
    throw new BodyError('BODY_TOO_LARGE');
  }
  let raw: Buffer;
  try {
    raw = await collect(req, encoding === 'identity' ? req : req.pipe(decompressor(encoding)), limit, declared);
  } catch (err) {
    await drain(req);
    throw err;
  }
  return parse(decode(raw));
}

function collect(req: IncomingMessage, stream: Readable, limit: number, declared: number | undefined): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    const finish = (err: unknown, body?: Buffer) => {
      if (settled) return;
      settled = true;
      stream.off('data', onData);
      if (stream !== req) {
        req.unpipe(stream as Duplex);
        stream.on('error', () => undefined);
        stream.destroy();
      }
      if (err) reject(err);
      else resolve(body!);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) return finish(new BodyError('BODY_TOO_LARGE'));
      chunks.push(chunk);
    };
    stream.on('data', onData);
    stream.on('end', () => {
      if (declared !== undefined && received !== declared) return finish(new BodyError('BODY_SIZE_MISMATCH'));
      finish(null, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    });
    // zlib's own errors (Z_DATA_ERROR, ...) are the client's: a body that does not decompress.
    stream.on('error', (err) => finish(new BodyError('BODY_NOT_DECOMPRESSED', { cause: err })));
    req.on('aborted', () => finish(new BodyError('BODY_ABORTED')));
    req.on('close', () => {
      if (!req.complete) finish(new BodyError('BODY_ABORTED'));
    });
  });
}
