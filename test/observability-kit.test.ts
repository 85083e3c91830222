import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { observeProcessMetrics } from '../src/metrics/process-metrics.js';
import { parseMetrics } from './helpers/metrics.js';
import { PROMTOOL_BIN } from './helpers/prometheus.js';

/**
 * Static checks of the observability kit: promtool on the alert rules and their unit tests, the structure of
 * the Grafana dashboard, and the names the process metrics are exported under. The dashboard's expressions
 * are run against a real Prometheus in observability-prometheus.test.ts.
 */

const path = (p: string) => fileURLToPath(new URL(`../${p}`, import.meta.url));
const RULES = path('deploy/prometheus/conveyor-rules.yaml');
const RULE_TESTS = path('deploy/prometheus/conveyor-rules.test.yaml');
const DASHBOARD = path('deploy/grafana/conveyor-dashboard.json');

/** Every metric Conveyor exports (service, controller, process); histograms by their base name. */
const KNOWN_METRICS = new Set([
  ...['enqueued', 'dequeued', 'acked', 'requeued', 'redelivered', 'superseded', 'expired', 'deleted', 'replayed', 'handed_over', 'nacked'].map(
    (e) => `conveyor_messages_${e}_total`,
  ),
  'conveyor_enqueue_rejected_total',
  'conveyor_queue_depth',
  'conveyor_oldest_pending_age_seconds',
  'conveyor_delayed_messages',
  'conveyor_group_depth',
  'conveyor_group_oldest_pending_age_seconds',
  'conveyor_http_request_duration_seconds',
  'conveyor_grpc_request_duration_seconds',
  'conveyor_subscribe_streams',
  'conveyor_claims_total',
  'conveyor_long_poll_waits_total',
  'conveyor_long_poll_wakeups_total',
  'conveyor_long_poll_waiting',
  'conveyor_reaper_runs_total',
  'conveyor_reaper_last_run_timestamp_seconds',
  'conveyor_db_conflicts_total',
  'conveyor_db_retries_total',
  'conveyor_controller_reconciles_total',
  'conveyor_controller_reconcile_duration_seconds',
  'conveyor_controller_workqueue_depth',
  'conveyor_controller_leader',
  'conveyor_controller_managed_resources',
  'conveyor_controller_watch_restarts_total',
  'process_cpu_seconds_total',
  'process_resident_memory_bytes',
  'process_start_time_seconds',
  'nodejs_heap_size_used_bytes',
  'nodejs_heap_size_total_bytes',
  'nodejs_eventloop_lag_seconds',
]);
const HISTOGRAMS = ['conveyor_http_request_duration_seconds', 'conveyor_grpc_request_duration_seconds', 'conveyor_controller_reconcile_duration_seconds'];

function unknownMetrics(expr: string): string[] {
  const names = expr.match(/\b(?:conveyor|process|nodejs)_[a-z_]+\b/g) ?? [];
  return names.filter((name) => {
    const base = HISTOGRAMS.find((h) => name === `${h}_bucket` || name === `${h}_count` || name === `${h}_sum`);
    return !KNOWN_METRICS.has(base ?? name);
  });
}

function promtool(...args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(PROMTOOL_BIN, args, { timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` });
    });
  });
}

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const ALERTS = [
  'ConveyorInstanceDown',
  'ConveyorAllInstancesDown',
  'ConveyorHighErrorRate',
  'ConveyorNotReady',
  'ConveyorBacklogGrowing',
  'ConveyorOldestPendingTooOld',
  'ConveyorGroupBacklogGrowing',
  'ConveyorGroupOldestPendingTooOld',
  'ConveyorDeadLettersArriving',
  'ConveyorReaperNotRunning',
  'ConveyorControllerNoLeader',
  'ConveyorControllerReconcileErrors',
];

describe('alert rules', () => {
  const rules: Rule[] = YAML.parse(readFileSync(RULES, 'utf8')).groups.flatMap((g: { rules: Rule[] }) => g.rules);

  it('pass promtool check rules', async () => {
    const { code, output } = await promtool('check', 'rules', RULES);
    expect(output).toMatch(new RegExp(`SUCCESS: ${rules.length} rules found`));
    expect(code, output).toBe(0);
  });

  it('pass their promtool unit tests', async () => {
    const { code, output } = await promtool('test', 'rules', RULE_TESTS);
    expect(code, output).toBe(0);
    expect(output).toContain('SUCCESS');
  });

  it('are the agreed alerts, each with for, severity, summary, description and a runbook', () => {
    expect([...new Set(rules.map((r) => r.alert))].sort()).toEqual([...ALERTS].sort());
    for (const rule of rules) {
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
      expect(['warning', 'critical'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      expect(rule.annotations?.description, rule.alert).toBeTruthy();
      // A runbook an on-call engineer can follow without the docs: what it means, what to check, what to do.
      expect(rule.annotations?.runbook, rule.alert).toMatch(/^Means: [\s\S]+ Check: [\s\S]+ Do: /);
      expect(unknownMetrics(rule.expr), rule.alert).toEqual([]);
    }
    // The reaper alert exists once per reaper mode.
    expect(rules.filter((r) => r.alert === 'ConveyorReaperNotRunning').map((r) => r.labels?.mode)).toEqual(['in-process', 'external']);
  });

  it('have unit tests in which every alert fires with its labels and annotations, and stays quiet', () => {
    const file = YAML.parse(readFileSync(RULE_TESTS, 'utf8'));
    const cases = file.tests.flatMap((t: { alert_rule_test?: object[] }) => t.alert_rule_test ?? []) as Array<{
      alertname: string;
      exp_alerts: Array<{ exp_labels: Record<string, string>; exp_annotations?: Record<string, string> }>;
    }>;
    for (const rule of rules) {
      const mine = cases.filter((c) => c.alertname === rule.alert);
      const fired = mine.flatMap((c) => c.exp_alerts).filter((a) => (rule.labels?.mode ? a.exp_labels.mode === rule.labels.mode : true));
      expect(fired.length, `${rule.alert} ${rule.labels?.mode ?? ''} fires somewhere`).toBeGreaterThan(0);
      for (const alert of fired) {
        expect(alert.exp_labels.severity).toBe(rule.labels?.severity);
        expect(Object.keys(alert.exp_annotations ?? {}).sort(), rule.alert).toEqual(['description', 'runbook', 'summary']);
      }
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${rule.alert} has a case where it stays quiet`,
      ).toBe(true);
    }
  });
});

interface Panel {
  id: number;
  type: string;
  title: string;
  description?: string;
  datasource?: { type: string; uid: string };
  gridPos?: { h: number; w: number; x: number; y: number };
  targets?: Array<{ expr: string; refId: string; datasource?: { uid: string } }>;
  panels?: Panel[];
}

describe('Grafana dashboard', () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8'));
  const all: Panel[] = dashboard.panels.flatMap((p: Panel) => [p, ...(p.panels ?? [])]);
  const panels = all.filter((p) => p.type !== 'row');
  const rows = all.filter((p) => p.type === 'row').map((p) => p.title);
  const exprs = panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  const variables = Object.fromEntries(dashboard.templating.list.map((v: { name: string }) => [v.name, v]));

  it('takes its data source, namespaces, jobs, instances and topics from variables', () => {
    expect(variables.datasource).toMatchObject({ type: 'datasource', query: 'prometheus' });
    for (const name of ['namespace', 'job', 'instance', 'topic']) {
      expect(variables[name], name).toMatchObject({
        type: 'query',
        datasource: { type: 'prometheus', uid: '${datasource}' },
        multi: true,
        includeAll: true,
      });
      expect(variables[name].query, name).toBe(variables[name].definition);
      expect(variables[name].query, name).toMatch(new RegExp(`^label_values\\(.+, ${name}\\)$`));
      expect(variables[name].allValue, name).toMatch(/^\.[*+]$/);
    }
    // "All" namespaces must match series without the label (a plain scrape config adds none).
    expect(variables.namespace.allValue).toBe('.*');
    // Each variable narrows the ones after it: a release's namespace, then its jobs, then their instances.
    expect(variables.job.query).toContain('namespace=~"$namespace"');
    expect(variables.instance.query).toContain('namespace=~"$namespace", job=~"$job"');
    expect(variables.topic.query).toContain('namespace=~"$namespace", job=~"$job", instance=~"$instance"');
    expect(dashboard.templating.list.map((v: { name: string }) => v.name)).toEqual(['datasource', 'namespace', 'job', 'instance', 'topic']);
  });

  it('reads every panel through ${datasource}, with unique ids, a position, a description and at least one query', () => {
    expect(new Set(all.map((p) => p.id)).size).toBe(all.length);
    for (const panel of panels) {
      expect(panel.datasource, panel.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(panel.gridPos, panel.title).toBeDefined();
      expect(panel.description, panel.title).toBeTruthy();
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets!) expect(target.datasource?.uid, `${panel.title} ${target.refId}`).toBe('${datasource}');
    }
  });

  it('filters every query by $namespace, $job and $instance, rates over $__rate_interval or a fixed hour, and reads only metrics that exist', () => {
    let windows = 0;
    for (const panel of panels) {
      for (const { expr, refId } of panel.targets!) {
        const where = `${panel.title} ${refId}: ${expr}`;
        // Two releases' series only stay apart when every selector names the release.
        expect(expr, where).toContain('namespace=~"$namespace", job=~"$job", instance=~"$instance"');
        for (const info of expr.match(/target_info\{[^}]*\}/g) ?? []) expect(info, where).toContain('namespace=~"$namespace", job=~"$job"');
        // Rates over Grafana's interval or an hour; the one day is how long a job's targets count after they went down.
        for (const [whole, window] of expr.matchAll(/(?:target_info\{[^}]*)?\}\[([^\]]+)\]/g)) {
          expect(whole.startsWith('target_info') ? ['1d'] : ['$__rate_interval', '1h'], where).toContain(window);
          windows++;
        }
        expect(unknownMetrics(expr), where).toEqual([]);
      }
    }
    expect(windows).toBeGreaterThan(40);
  });

  it('has the rows and panels the issue asks for', () => {
    expect(rows).toEqual(['Overview', 'Throughput', 'Depth and age', 'Dead letters', 'HTTP', 'gRPC', 'Reapers', 'Controller', 'Process', 'Database']);
    const has = (pattern: RegExp) => expect(exprs.some((e) => pattern.test(e)), String(pattern)).toBe(true);
    for (const event of ['enqueued', 'dequeued', 'acked', 'nacked']) has(new RegExp(`sum by \\(topic.*rate\\(conveyor_messages_${event}_total`));
    has(/sum by \(status\) \(max by \(topic, status\) \(conveyor_queue_depth/);
    has(/conveyor_oldest_pending_age_seconds/);
    has(/conveyor_messages_nacked_total\{outcome="dlq"/);
    has(/topic=~"\(\$topic\)\[\.\]dlq"/);
    for (const histogram of ['conveyor_http_request_duration_seconds', 'conveyor_grpc_request_duration_seconds']) {
      for (const q of ['0.5', '0.95', '0.99']) has(new RegExp(`histogram_quantile\\(${q}, sum by \\(le\\) \\(rate\\(${histogram}_bucket`));
    }
    has(/status=~"5\.\."/);
    has(/code=~"INTERNAL\|UNAVAILABLE/);
    has(/conveyor_subscribe_streams/);
    has(/conveyor_reaper_runs_total/);
    has(/conveyor_reaper_last_run_timestamp_seconds/);
    has(/conveyor_messages_expired_total/);
    has(/conveyor_controller_reconciles_total/);
    has(/result!="success"/);
    has(/conveyor_controller_leader/);
    has(/sum by \(kind\) \(rate\(conveyor_db_conflicts_total/);
    has(/sum by \(outcome\) \(rate\(conveyor_db_retries_total/);
    for (const metric of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds']) has(new RegExp(metric));
  });
});

describe('process metrics', () => {
  it('are exported under prom-client names and types, and stop when told', async () => {
    const exporter = new PrometheusExporter({ preventServerStart: true });
    const provider = new MeterProvider({ readers: [exporter] });
    const stop = observeProcessMetrics(provider.getMeter('conveyor'));
    const scrape = async () => new PrometheusSerializer('', false).serialize((await exporter.collect()).resourceMetrics);

    const text = await scrape();
    const types = Object.fromEntries([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => [name, type]));
    expect(types).toMatchObject({
      process_cpu_seconds_total: 'counter',
      process_resident_memory_bytes: 'gauge',
      process_start_time_seconds: 'gauge',
      nodejs_heap_size_used_bytes: 'gauge',
      nodejs_heap_size_total_bytes: 'gauge',
      nodejs_eventloop_lag_seconds: 'gauge',
    });
    expect(text).not.toMatch(/_total_total|_bytes_bytes|_seconds_seconds/);
    const value = (name: string) => parseMetrics(text).find((s) => s.name === name)!.value;
    expect(value('process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(value('process_resident_memory_bytes')).toBeGreaterThan(value('nodejs_heap_size_used_bytes'));
    expect(value('nodejs_heap_size_total_bytes')).toBeGreaterThanOrEqual(value('nodejs_heap_size_used_bytes'));
    // The process's start in seconds since the epoch (not ms, not 0). The wall clock of a long-lived test worker
    // can be stepped after it started (a VM resumed), so the two ways of reading that start may differ by seconds.
    expect(Math.abs(value('process_start_time_seconds') - (Date.now() / 1000 - process.uptime()))).toBeLessThan(120);
    expect(value('nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);

    // Stopping removes the sampler and the callback (the SDK then repeats the last values).
    stop();
    const cpuAfter = () => scrape().then((t) => parseMetrics(t).find((s) => s.name === 'process_cpu_seconds_total')!.value);
    const frozen = await cpuAfter();
    for (let spin = Date.now(); Date.now() - spin < 50; );
    expect(await cpuAfter()).toBe(frozen);
    await provider.shutdown();
  });

  it('report the event-loop lag of a window that a scrape does not reset, so a frequent reader (the admin UI) cannot hide it from Prometheus', async () => {
    const exporter = new PrometheusExporter({ preventServerStart: true });
    const provider = new MeterProvider({ readers: [exporter] });
    const stop = observeProcessMetrics(provider.getMeter('conveyor'));
    const lag = async () => parseMetrics(new PrometheusSerializer('', false).serialize((await exporter.collect()).resourceMetrics)).find((s) => s.name === 'nodejs_eventloop_lag_seconds')!.value;
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      for (let blocked = Date.now(); Date.now() - blocked < 300; );
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await lag()).toBeGreaterThan(0.2);
      // A second reader right after the first sees the same stall.
      expect(await lag()).toBeGreaterThan(0.2);
    } finally {
      stop();
      await provider.shutdown();
    }
  });
});
