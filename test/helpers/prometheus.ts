import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-ports.js';

/** The Debian package's binaries; override with PROMETHEUS_BIN / PROMTOOL_BIN. */
export const PROMETHEUS_BIN = process.env.PROMETHEUS_BIN ?? '/usr/bin/prometheus';
export const PROMTOOL_BIN = process.env.PROMTOOL_BIN ?? '/usr/bin/promtool';

export interface ScrapeJob {
  /** Becomes the `job` label (the alert rules expect `conveyor` and `conveyor-controller`). */
  name: string;
  /** host:port, scraped at /metrics over plain HTTP. */
  targets: string[];
  metricsPath?: string;
}

export interface PromSeries {
  metric: Record<string, string>;
  value: [number, string];
}

export type QueryOutcome = { ok: true; series: PromSeries[]; warnings?: string[] } | { ok: false; error: string };

export interface RunningPrometheus {
  url: string;
  /** Instant query through /api/v1/query: the vector's series, or the error Prometheus answered. */
  query(expr: string): Promise<QueryOutcome>;
  /** Like query, but throws on an error. */
  series(expr: string): Promise<PromSeries[]>;
  /** Polls `expr` until `done(series)` holds; throws after `timeoutMs` with the last answer. */
  waitFor(expr: string, done: (series: PromSeries[]) => boolean, timeoutMs?: number, what?: string): Promise<PromSeries[]>;
  /** /api/v1/label/<label>/values with match[] selectors (what Grafana's label_values() runs). */
  labelValues(label: string, match: string): Promise<string[]>;
  /** GET /api/v1/<path> and return its `data`. */
  api<T = any>(path: string): Promise<T>;
  /** Rewrites the scrape jobs and reloads the configuration (SIGHUP); resolves once every target is active. */
  setJobs(jobs: ScrapeJob[]): Promise<void>;
  output(): string;
  stop(): Promise<void>;
}

function configYaml(jobs: ScrapeJob[], ruleFiles: string[], scrapeInterval: string): string {
  // JSON is YAML: no quoting rules to get wrong.
  return JSON.stringify(
    {
      global: { scrape_interval: scrapeInterval, scrape_timeout: scrapeInterval, evaluation_interval: scrapeInterval },
      rule_files: ruleFiles,
      scrape_configs: jobs.map((job) => ({
        job_name: job.name,
        metrics_path: job.metricsPath ?? '/metrics',
        static_configs: [{ targets: job.targets }],
      })),
    },
    null,
    2,
  );
}

const live = new Set<ChildProcess>();
// Whatever happens to the test process, no Prometheus outlives it.
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/**
 * Starts the real `prometheus` on a free loopback port, with a generated config scraping `jobs` every
 * `scrapeInterval` (1 s) and a throwaway TSDB directory; resolves once /-/ready answers 200.
 * `stop()` kills it (SIGTERM, SIGKILL after 5 s) and removes the directory; call it in afterAll.
 */
export async function startPrometheus(options: { jobs: ScrapeJob[]; ruleFiles?: string[]; scrapeInterval?: string }): Promise<RunningPrometheus> {
  const dir = await mkdtemp(join(tmpdir(), 'conveyor-prometheus-'));
  const configFile = join(dir, 'prometheus.yml');
  await writeFile(configFile, configYaml(options.jobs, options.ruleFiles ?? [], options.scrapeInterval ?? '1s'));

  let lastError: Error | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const child = spawn(
      PROMETHEUS_BIN,
      [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--storage.tsdb.retention.time=1h',
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    live.add(child);
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    exited.then(() => live.delete(child));
    const url = `http://127.0.0.1:${port}`;

    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      await rm(dir, { recursive: true, force: true });
    };

    const ready = await waitReady(url, exited, 20_000);
    if (ready !== true) {
      lastError = new Error(`prometheus did not become ready (${ready}):\n${output}`);
      await stop().catch(() => {});
      if (/address already in use/.test(output)) continue;
      throw lastError;
    }
    const setJobs = async (jobs: ScrapeJob[]) => {
      await writeFile(configFile, configYaml(jobs, options.ruleFiles ?? [], options.scrapeInterval ?? '1s'));
      child.kill('SIGHUP');
    };
    return instance(url, () => output, stop, setJobs);
  }
  throw lastError!;
}

async function waitReady(url: string, exited: Promise<number | null>, timeoutMs: number): Promise<true | string> {
  let gone: string | undefined;
  void exited.then((code) => (gone = `exited with ${code}`));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (gone) return gone;
    try {
      const res = await fetch(`${url}/-/ready`);
      if (res.status === 200) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return 'timed out';
}

function instance(url: string, output: () => string, stop: () => Promise<void>, reload: (jobs: ScrapeJob[]) => Promise<void>): RunningPrometheus {
  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${url}/api/v1/${path}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error ?? res.status}`);
    return body.data;
  };
  const query = async (expr: string): Promise<QueryOutcome> => {
    const res = await fetch(`${url}/api/v1/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ query: expr }),
    });
    const body = (await res.json()) as {
      status: string;
      data?: { resultType: string; result: unknown };
      error?: string;
      errorType?: string;
      warnings?: string[];
    };
    if (body.status !== 'success') return { ok: false, error: `${body.errorType ?? res.status}: ${body.error}` };
    const { resultType, result } = body.data!;
    if (resultType === 'vector') return { ok: true, series: result as PromSeries[], warnings: body.warnings };
    if (resultType === 'scalar') return { ok: true, series: [{ metric: {}, value: result as [number, string] }], warnings: body.warnings };
    return { ok: false, error: `unexpected result type ${resultType}` };
  };
  const series = async (expr: string): Promise<PromSeries[]> => {
    const outcome = await query(expr);
    if (!outcome.ok) throw new Error(`${expr}: ${outcome.error}`);
    return outcome.series;
  };
  return {
    url,
    query,
    series,
    api,
    async waitFor(expr, done, timeoutMs = 20_000, what = expr) {
      const deadline = Date.now() + timeoutMs;
      let last: QueryOutcome | undefined;
      for (;;) {
        last = await query(expr);
        if (last.ok && done(last.series)) return last.series;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last answer: ${JSON.stringify(last).slice(0, 2000)}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    },
    async labelValues(label, match) {
      return api<string[]>(`label/${encodeURIComponent(label)}/values?${new URLSearchParams({ 'match[]': match })}`);
    },
    async setJobs(jobs) {
      await reload(jobs);
      const wanted = jobs.flatMap((job) => job.targets.map((target) => `${job.name} ${target}`));
      const deadline = Date.now() + 10_000;
      for (;;) {
        const { activeTargets } = await api<{ activeTargets: Array<{ labels: Record<string, string> }> }>('targets?state=active');
        const active = new Set(activeTargets.map((t) => `${t.labels.job} ${t.labels.instance}`));
        if (wanted.every((w) => active.has(w))) return;
        if (Date.now() > deadline) throw new Error(`reload: targets ${wanted.join(', ')} not active:\n${output()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    output,
    stop,
  };
}

/** A metric's exact value as a number (Prometheus sends strings; "NaN", "+Inf" included). */
export function valueOfSeries(series: PromSeries): number {
  return Number(series.value[1]);
}
