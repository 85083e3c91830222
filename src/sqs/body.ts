import type { IncomingMessage } from 'node:http';
import { BodyError } from '../http/body-errors.js';

/**
 * A request's raw body (the signature covers its bytes): identity encoding only (SDKs do not compress SQS
 * requests), at most `limit` bytes, else 413 before or while it is read; what is left is read off so the
 * connection stays usable.
 */
export function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let failed: BodyError | undefined = encoding !== 'identity' ? new BodyError('BODY_ENCODING_UNSUPPORTED') : declared !== undefined && declared > limit ? new BodyError('BODY_TOO_LARGE') : undefined;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      received += chunk.length;
      if (received > limit) failed = new BodyError('BODY_TOO_LARGE');
      else chunks.push(chunk);
    });
    req.on('end', () => (failed ? reject(failed) : declared !== undefined && declared !== received ? reject(new BodyError('BODY_SIZE_MISMATCH')) : resolve(Buffer.concat(chunks))));
    req.on('error', () => reject(new BodyError('BODY_ABORTED')));
    req.on('aborted', () => reject(new BodyError('BODY_ABORTED')));
  });
}
