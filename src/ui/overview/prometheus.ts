/** One sample of the Prometheus text exposition format: `name{label="value",...} 12.5`. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/y;

function unescape(value: string): string {
  return value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

function parseLabels(text: string): Record<string, string> | null {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const start = LABEL.lastIndex;
    const match = LABEL.exec(text);
    if (!match) return text.slice(start).trim() === '' ? labels : null;
    labels[match[1]] = unescape(match[2]);
  }
  return labels;
}

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

/** Every sample in `text`; comments, blank and unreadable lines are skipped. */
export function parsePrometheus(text: string): PromSample[] {
  const samples: PromSample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) continue;
    const labels = match[2] === undefined ? {} : parseLabels(match[2]);
    const value = parseValue(match[3]);
    if (labels === null || Number.isNaN(value)) continue;
    samples.push({ name: match[1], labels, value });
  }
  return samples;
}

/** The sum of a metric per value of one label (`topic`), across its other labels. */
export function sumBy(samples: PromSample[], name: string, label: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples) {
    if (s.name !== name || s.labels[label] === undefined) continue;
    out.set(s.labels[label], (out.get(s.labels[label]) ?? 0) + s.value);
  }
  return out;
}
