/** Request latencies in milliseconds; percentiles by nearest rank. */
export class LatencyRecorder {
  private samples: number[] = [];

  record(ms: number): void {
    this.samples.push(ms);
  }

  /** Times `work` and records its latency (also when it throws). */
  async time<T>(work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      this.record(performance.now() - started);
    }
  }

  get count(): number {
    return this.samples.length;
  }

  summary(): LatencySummary {
    const sorted = Float64Array.from(this.samples).sort();
    const at = (p: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]);
    const round = (ms: number) => Math.round(ms * 100) / 100;
    return { requests: sorted.length, p50Ms: round(at(50)), p99Ms: round(at(99)), maxMs: round(sorted.length ? sorted[sorted.length - 1] : 0) };
  }
}

export interface LatencySummary {
  requests: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}
