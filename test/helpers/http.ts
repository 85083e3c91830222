export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

/** A thin fetch wrapper for tests: JSON in, parsed JSON (or raw text) out, never throws on a status. */
export class Api {
  constructor(
    readonly baseUrl: string,
    private readonly defaultHeaders: Record<string, string> = {},
  ) {}

  withHeaders(headers: Record<string, string>): Api {
    return new Api(this.baseUrl, { ...this.defaultHeaders, ...headers });
  }

  withToken(token: string): Api {
    return this.withHeaders({ authorization: `Bearer ${token}` });
  }

  async request<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
    const init: RequestInit = { method, headers: { ...this.defaultHeaders, ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${this.baseUrl}${path}`, init);
    const text = await res.text();
    let parsed: unknown = undefined;
    if (text.length > 0) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    return { status: res.status, body: parsed as T, headers: res.headers, text };
  }

  get<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('GET', path, undefined, headers);
  }
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', path, body, headers);
  }
  put<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('PUT', path, body, headers);
  }
  delete<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('DELETE', path, undefined, headers);
  }

  enqueue(topic: string, payload: string, extra: Record<string, unknown> = {}) {
    return this.post<{ id: string }>('/api/messages', { topic, payload, ...extra });
  }

  dequeue(topic: string, extra: Record<string, unknown> = {}) {
    return this.post<{ messages: any[] }>('/api/messages/dequeue', { topic, ...extra });
  }
}
