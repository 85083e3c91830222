import type { ServerResponse } from 'node:http';

/**
 * The API's JSON answers, written straight to node's response: the status, `Content-Type: application/json;
 * charset=utf-8` and the length, as clients have always received them. No ETag (every answer is `no-store`,
 * security-headers.ts) and no freshness check; node:http leaves out the body of an answer to HEAD.
 */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendJsonText(res, status, JSON.stringify(body));
}

/** A list answer beyond this many characters goes out in pieces of about this size. */
const PIECE_CHARS = 1 << 20;

/**
 * A list answer, `{"items": [...], ...rest}`, whose items may be large: 200 messages of 1 MiB, escaped, pass
 * the longest string V8 can make, so `JSON.stringify` of the whole page would throw. Sent whole with its length
 * when it fits one piece; otherwise in pieces (chunked), each after the socket took the one before, so the
 * process holds a piece of the text at a time instead of all of it.
 */
export async function sendJsonList(res: ServerResponse, status: number, items: unknown[], rest: Record<string, unknown>): Promise<void> {
  const fields = JSON.stringify(rest);
  const tail = fields === '{}' ? ']}' : `],${fields.slice(1)}`;
  let piece = '{"items":[';
  for (let i = 0; i < items.length; i++) {
    piece += (i === 0 ? '' : ',') + JSON.stringify(items[i]);
    if (piece.length < PIECE_CHARS) continue;
    if (!res.headersSent) {
      res.statusCode = status;
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
    }
    if (res.destroyed) return;
    if (!res.write(piece)) {
      await drained(res);
      if (res.destroyed) return;
    }
    piece = '';
  }
  if (!res.headersSent) sendJsonText(res, status, piece + tail);
  else if (!res.destroyed) res.end(piece + tail);
}

/** The socket took what was written, or the client is gone (then nothing more is written). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed) return resolve();
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** A JSON text already serialised (the OpenAPI document, built once). */
export function sendJsonText(res: ServerResponse, status: number, text: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** An answer without a body: 204, or 201 for a creation that returns nothing. */
export function sendEmpty(res: ServerResponse, status: 201 | 204): void {
  res.statusCode = status;
  res.end();
}
