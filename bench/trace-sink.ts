import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TraceSink {
  /** The OTLP/HTTP traces URL the service exports to. */
  url: string;
  /** What arrived so far: exports and their bytes (a run with tracing on shows it did export). */
  received(): { exports: number; bytes: number };
  close(): Promise<void>;
}

/**
 * An OTLP/HTTP collector that reads each export and answers 200, for `--tracing`: the service pays for building,
 * serialising and sending its spans as it would to a real collector, and the bench process for reading them.
 */
export async function startTraceSink(): Promise<TraceSink> {
  let exports = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      exports++;
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    received: () => ({ exports, bytes }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
