import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MetricsRegistry } from '../metrics/registry.js';

export interface Readiness {
  /** undefined when ready, else the reason (shown in the 503 body). */
  problem(): Promise<string | undefined>;
}

/** The controller's own port: /healthz (the process runs), /readyz (caches synced, API server and database reachable), /metrics. */
export async function startHealthServer(host: string, port: number, readiness: Readiness, metrics: MetricsRegistry): Promise<{ port: number; close(): Promise<void> }> {
  const json = (res: import('node:http').ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
  const server: Server = createServer((req, res) => {
    const path = req.url?.split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(res, 405, { error: 'method not allowed' });
    if (path === '/healthz') return json(res, 200, { status: 'ok' });
    if (path === '/metrics') return metrics.handle(req, res);
    if (path === '/readyz') {
      return void readiness.problem().then(
        (problem) => (problem ? json(res, 503, { error: problem }) : json(res, 200, { status: 'ok' })),
        () => json(res, 503, { error: 'readiness check failed' }),
      );
    }
    json(res, 404, { error: 'not found' });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
