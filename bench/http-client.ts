import { Agent, request } from 'node:http';

export interface HttpResponse {
  status: number;
  body: string;
}

/** A keep-alive JSON client for one server: every request reuses pooled loopback sockets. */
export class BenchClient {
  private readonly agent: Agent;
  private readonly host: string;

  constructor(
    private readonly port: number,
    maxSockets: number,
    /** The bearer token to send, if any (bench/auth.ts); read on every request, so a renewal applies at once. */
    private readonly token: () => string | undefined = () => undefined,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
    this.host = '127.0.0.1';
  }

  post(path: string, body: unknown): Promise<HttpResponse> {
    return this.send('POST', path, JSON.stringify(body));
  }

  get(path: string): Promise<HttpResponse> {
    return this.send('GET', path);
  }

  private send(method: 'GET' | 'POST', path: string, data?: string): Promise<HttpResponse> {
    const headers: Record<string, string | number> = data === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) };
    const token = this.token();
    if (token) headers.authorization = `Bearer ${token}`;
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: this.host,
          port: this.port,
          path,
          method,
          agent: this.agent,
          headers,
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
          res.on('error', reject);
        },
      );
      req.setTimeout(30_000, () => req.destroy(new Error(`request to ${path} timed out`)));
      req.on('error', reject);
      req.end(data);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Throws with the status and the (short) body unless the response has the expected status. */
export function expectStatus(res: HttpResponse, expected: number, what: string): HttpResponse {
  if (res.status !== expected) throw new Error(`${what}: HTTP ${res.status} ${res.body.slice(0, 200)}`);
  return res;
}
