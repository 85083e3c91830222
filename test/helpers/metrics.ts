import type { Api } from './http.js';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses Prometheus text exposition into samples (enough of the format for these assertions). */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) throw new Error(`unparseable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

export function valueOf(samples: Sample[], name: string, labels: Record<string, string>): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} series`);
  return found[0]?.value;
}

/** One series' value from the server's /metrics now; 0 when the series does not exist yet. */
export async function metricValue(api: Api, name: string, labels: Record<string, string>): Promise<number> {
  return valueOf(parseMetrics((await api.get('/metrics')).text), name, labels) ?? 0;
}

/** Resolves once the server reports `n` waiting dequeues (conveyor_long_poll_waiting, summed over topics). */
export async function untilWaiting(api: Api, n: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = (await api.get('/metrics')).text;
    const total = [...text.matchAll(/^conveyor_long_poll_waiting\{[^}]*\} (\S+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    if (total === n) return;
    if (Date.now() > deadline) throw new Error(`expected ${n} waiting dequeues, the server reports ${total}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
