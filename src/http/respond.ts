import type { ServerResponse } from 'node:http';

/**
 * The API's JSON answers, written straight to node's response: the status, `Content-Type: application/json;
 * charset=utf-8` and the length, as clients have always received them. No ETag (every answer is `no-store`,
 * security-headers.ts) and no freshness check; node:http leaves out the body of an answer to HEAD.
 */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendJsonText(res, status, JSON.stringify(body));
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
