import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A span as the OTLP/HTTP JSON export carries it, attributes flattened to a plain object. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's numbers: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string; attributes: Record<string, unknown> }>;
  status: { code?: number };
}

export const SpanKinds = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

type OtlpValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type OtlpAttribute = { key: string; value: OtlpValue };

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.doubleValue ?? value.boolValue));
  return out;
}

/**
 * An OTLP/HTTP traces receiver on a free local port: what the service's exporter posts to `url`, decoded from
 * its JSON. `bodies` keeps every export as received, for searching it for strings that must never be there.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly bodies: string[] = [];
  private server?: Server;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        this.bodies.push(text);
        try {
          this.collect(JSON.parse(text));
          res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
        } catch {
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1/traces`;
    return this;
  }

  private collect(body: { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: any[] }> }> }): void {
    for (const resource of body.resourceSpans ?? []) {
      for (const scope of resource.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          this.spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId ?? '',
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
            links: (span.links ?? []).map((l: any) => ({ traceId: l.traceId, spanId: l.spanId, attributes: attributesOf(l.attributes) })),
            status: span.status ?? {},
          });
        }
      }
    }
  }

  /** The spans matching `match`, once at least `count` of them have arrived (exports come every 100 ms in the tests). */
  async waitFor(match: (span: ReceivedSpan) => boolean, count = 1, timeoutMs = 10_000): Promise<ReceivedSpan[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.spans.filter(match);
      if (found.length >= count) return found;
      if (Date.now() > deadline) throw new Error(`expected ${count} matching span(s), got ${found.length} of ${this.spans.length}: ${this.spans.map((s) => s.name).join(', ')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
