import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeKube } from './fake-kube/index.js';
import { startTestController, waitForReady } from './helpers/controller.js';
import { engineByName } from './helpers/engines.js';
import { QueueClient, StreamRecorder, sleep } from './helpers/grpc.js';
import { freePort } from './helpers/free-ports.js';
import { startPrometheus, type RunningPrometheus, type ScrapeJob } from './helpers/prometheus.js';
import { startChildServer, type ChildServer } from './helpers/server.js';

/**
 * The Grafana dashboard and the alert rules against a real Prometheus: Conveyor runs as its own process,
 * Prometheus scrapes its metrics port every second, traffic over HTTP and gRPC makes every metric move, and
 * then every panel's expression is evaluated through /api/v1/query as Grafana would send it. A panel whose
 * expression errors or returns no series fails the test, by name.
 */

const DASHBOARD = fileURLToPath(new URL('../deploy/grafana/conveyor-dashboard.json', import.meta.url));
const RULES = fileURLToPath(new URL('../deploy/prometheus/conveyor-rules.yaml', import.meta.url));

/** What Grafana substitutes with "All" selected and a 1 s scrape interval (rate() needs two samples). */
const VARIABLES: Record<string, string> = { __rate_interval: '15s', namespace: '.*', job: '.+', instance: '.+', topic: '.*' };

/**
 * Panels that read conveyor_controller_* series: evaluated against a running controller (controllerTargets),
 * not against the service. The test below checks that this list is exactly the dashboard's Controller row.
 */
const CONTROLLER_PANELS = [
  'Reconciles by kind and result',
  'Failed reconciles by kind',
  'Reconcile duration by kind',
  'Leader',
  'Work queue depth',
  'Managed resources by kind and readiness',
  'Watch restarts (last hour)',
];

/**
 * The controller, with its fake Kubernetes API server, after reconciles of each kind, a Conflict, an Invalid
 * resource and a dropped watch: every controller series the dashboard reads exists.
 */
async function controllerTargets(): Promise<{ targets: string[]; stop(): Promise<void> }> {
  const kube = await startFakeKube();
  const database = await engineByName.sqlite.createDatabase();
  const controller = await startTestController(kube, database.url);
  for (const path of ['crds/', 'deploy/examples/']) expect((await kube.kubectl(['apply', '-f', path])).code).toBe(0);
  await waitForReady(kube, { plural: 'topicconfigs', namespace: 'team-orders', name: 'orders' });
  await sleep(1100); // creationTimestamp has second resolution: the second resource for "orders" must be younger
  const conflicting = 'apiVersion: conveyor.dev/v1alpha1\nkind: TopicConfig\nmetadata: {name: orders, namespace: default}\nspec: {maxRetries: 1}\n---\napiVersion: conveyor.dev/v1alpha1\nkind: TopicConfig\nmetadata: {name: broken.dlq, namespace: default}\nspec: {}\n';
  expect((await kube.kubectl(['apply', '-f', '-'], { input: conflicting })).code).toBe(0);
  await waitForReady(kube, { plural: 'topicconfigs', namespace: 'default', name: 'orders' }, 'False', 'Conflict');
  await waitForReady(kube, { plural: 'topicconfigs', namespace: 'default', name: 'broken.dlq' }, 'False', 'Invalid');
  kube.dropWatches('destroy');
  return {
    targets: [`127.0.0.1:${controller.port}`],
    stop: async () => {
      await controller.close();
      await kube.close();
      await database.drop();
    },
  };
}

interface Target {
  refId: string;
  expr: string;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: Target[];
  panels?: Panel[];
}

function panelsOf(dashboard: { panels: Panel[] }): Panel[] {
  return dashboard.panels.flatMap((p) => (p.type === 'row' ? (p.panels ?? []) : [p]));
}

function substitute(expr: string): string {
  const out = expr.replace(/\$\{?(\w+)\}?/g, (whole, name: string) => VARIABLES[name] ?? whole);
  if (/\$\{?\w/.test(out)) throw new Error(`unknown dashboard variable left in ${out}`);
  return out;
}

const usesController = (panel: Panel) => (panel.targets ?? []).some((t) => t.expr.includes('conveyor_controller_'));

/** Evaluates every target of `panels`; returns one line per target that errored or returned no series. */
async function failingTargets(prometheus: RunningPrometheus, panels: Panel[]): Promise<string[]> {
  const failures: string[] = [];
  for (const panel of panels) {
    for (const target of panel.targets ?? []) {
      const expr = substitute(target.expr);
      const outcome = await prometheus.query(expr);
      if (!outcome.ok) failures.push(`"${panel.title}" ${target.refId}: error ${outcome.error} in ${expr}`);
      else if (outcome.series.length === 0) failures.push(`"${panel.title}" ${target.refId}: no series for ${expr}`);
    }
  }
  return failures;
}

/** Metric names an expression reads (so an `or … * 0` fallback cannot hide a misspelt name). */
function metricNames(expr: string): string[] {
  const names = expr.match(/\b(?:conveyor_[a-z_]+|process_[a-z_]+|nodejs_[a-z_]+|target_info|up)\b(?=\s*[{[])/g) ?? [];
  return [...new Set(names)];
}

describe('observability kit against real Prometheus', () => {
  let dir: string;
  let server: ChildServer;
  let grpc: QueueClient;
  let prometheus: RunningPrometheus;
  let metricsTarget: string;
  let dashboard: { panels: Panel[]; templating: { list: Array<Record<string, any>> } };
  let steady: { stop(): Promise<void>; errors: string[] } | undefined;
  const streams: StreamRecorder[] = [];

  beforeAll(async () => {
    dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8'));
    dir = await mkdtemp(join(tmpdir(), 'conveyor-observability-'));
    const metricsPort = await freePort();
    server = await startChildServer({
      CONVEYOR_DB_URL: `sqlite:${join(dir, 'conveyor.db')}`,
      CONVEYOR_METRICS_PORT: String(metricsPort),
    });
    const grpcPort = Number(/"grpcPort":(\d+)/.exec(server.output())![1]);
    expect(server.output()).toContain(`"metricsPort":${metricsPort}`);
    metricsTarget = `127.0.0.1:${metricsPort}`;
    grpc = new QueueClient(grpcPort);
    prometheus = await startPrometheus({ jobs: [{ name: 'conveyor', targets: [metricsTarget] }], ruleFiles: [RULES] });

    await driveTraffic(server, grpc, streams);
    steady = steadyTraffic(server, grpc);
  }, 60_000);

  afterAll(async () => {
    await steady?.stop();
    for (const s of streams) s.stream.cancel();
    grpc?.close();
    await prometheus?.stop();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('lists exactly the dashboard panels that read controller metrics in CONTROLLER_PANELS, all in the Controller row', () => {
    const fromDashboard = panelsOf(dashboard).filter(usesController).map((p) => p.title);
    expect(fromDashboard.sort()).toEqual([...CONTROLLER_PANELS].sort());
    const rows = dashboard.panels.filter((p) => p.type === 'row');
    const controllerRow = rows.find((r) => r.title === 'Controller')!;
    const ordered = dashboard.panels;
    const start = ordered.indexOf(controllerRow);
    const next = ordered.findIndex((p, i) => i > start && p.type === 'row');
    const inRow = ordered.slice(start + 1, next === -1 ? undefined : next).concat(controllerRow.panels ?? []);
    expect(inRow.map((p) => p.title).sort()).toEqual([...CONTROLLER_PANELS].sort());
  });

  it('scrapes the service: every service panel expression returns series, no error', async () => {
    await prometheus.waitFor(`count_over_time(up{job="conveyor"}[1m]) >= 2`, (s) => s.length === 1, 20_000, 'two scrapes');
    const service = panelsOf(dashboard).filter((p) => !CONTROLLER_PANELS.includes(p.title));
    expect(service.length).toBeGreaterThan(30);

    // Counters appear at their first increment and the depth gauges come from a snapshot up to 10 s old:
    // poll until every panel has data (or the deadline), then report what still fails.
    const deadline = Date.now() + 30_000;
    let failures = await failingTargets(prometheus, service);
    while (failures.length > 0 && Date.now() < deadline) {
      await sleep(1000);
      failures = await failingTargets(prometheus, service);
    }
    expect(failures, `failing panels:\n${failures.join('\n')}`).toEqual([]);

    // No fallback such as `or sum(...) * 0` may hide a metric that is not there.
    const names = [...new Set(service.flatMap((p) => (p.targets ?? []).flatMap((t) => metricNames(t.expr))))];
    expect(names.length).toBeGreaterThan(25);
    const missing: string[] = [];
    for (const name of names) if ((await prometheus.series(`group({__name__="${name}"})`)).length === 0) missing.push(name);
    expect(missing, 'metrics the dashboard reads that Prometheus never scraped').toEqual([]);
  }, 60_000);

  it('answers the template variables as Grafana would query them', async () => {
    const variables = Object.fromEntries(dashboard.templating.list.map((v) => [v.name, v]));
    const labelValues = async (name: string) => {
      const definition: string = variables[name].query;
      const [, selector, label] = /^label_values\((.*),\s*(\w+)\)$/.exec(definition)!;
      return prometheus.labelValues(label, substitute(selector));
    };
    expect(await labelValues('job')).toContain('conveyor');
    expect(await labelValues('instance')).toContain(metricsTarget);
    const topics = await labelValues('topic');
    expect(topics).toEqual(expect.arrayContaining(['obs-orders', 'obs-grpc', 'obs-dlq']));
    // The variable's regex hides dead-letter topics (their panels add `.dlq` to the selection).
    const regex = /^\/(.*)\/$/.exec(variables.topic.regex)![1];
    const shown = topics.filter((t) => new RegExp(regex).test(t));
    expect(shown).toContain('obs-orders');
    expect(shown).not.toContain('obs-dlq.dlq');
  });

  it('loads the alert rules into Prometheus, evaluates all of them without error, and the dead-letter alert is pending', async () => {
    const rules = async () =>
      (await prometheus.api<{ groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string; lastEvaluation: string }> }> }>('rules')).groups.flatMap(
        (g) => g.rules,
      );
    const deadline = Date.now() + 10_000;
    let all = await rules();
    while (all.some((r) => r.lastEvaluation.startsWith('0001')) && Date.now() < deadline) {
      await sleep(250);
      all = await rules();
    }
    expect(all).toHaveLength(13);
    expect(all.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.health} ${r.lastError}`)).toEqual([]);

    // Real series, real labels: once Prometheus holds the dead-letter count, one more dead letter makes
    // ConveyorDeadLettersArriving pending (for: 1m).
    await prometheus.waitFor('conveyor_messages_nacked_total{topic="obs-dlq", outcome="dlq"} == 2', (s) => s.length === 1, 10_000);
    await server.api.enqueue('obs-dlq', 'poison again');
    const [poison] = (await server.api.dequeue('obs-dlq')).body.messages;
    expect((await server.api.post(`/api/messages/${poison.id}/nack`, { error: 'bad payload' })).status).toBe(204);
    const alerts = async () => (await prometheus.api<{ alerts: Array<{ labels: Record<string, string>; state: string }> }>('alerts')).alerts;
    const until = Date.now() + 10_000;
    let active = await alerts();
    while (!active.some((a) => a.labels.alertname === 'ConveyorDeadLettersArriving') && Date.now() < until) {
      await sleep(250);
      active = await alerts();
    }
    expect(active.filter((a) => a.labels.alertname === 'ConveyorDeadLettersArriving').map((a) => [a.labels.topic, a.state])).toEqual([
      ['obs-dlq', 'pending'],
    ]);
    // A healthy instance raises nothing else.
    expect(active.map((a) => a.labels.alertname).filter((name) => name !== 'ConveyorDeadLettersArriving')).toEqual([]);
    expect(steady?.errors).toEqual([]);
  });

  it('scrapes the controller: every Controller panel expression returns series, no error; stopped, it shows as down', async () => {
    const controller = await controllerTargets();
    let stopped = false;
    try {
      const jobs: ScrapeJob[] = [
        { name: 'conveyor', targets: [metricsTarget] },
        { name: 'conveyor-controller', targets: controller.targets },
      ];
      await prometheus.setJobs(jobs);
      await prometheus.waitFor(
        `count_over_time(up{job="conveyor-controller"}[1m]) >= 2`,
        (s) => s.length === controller.targets.length,
        20_000,
        'two scrapes of the controller',
      );
      const panels = panelsOf(dashboard).filter((p) => CONTROLLER_PANELS.includes(p.title));
      const deadline = Date.now() + 20_000;
      let failures = await failingTargets(prometheus, panels);
      while (failures.length > 0 && Date.now() < deadline) {
        await sleep(1000);
        failures = await failingTargets(prometheus, panels);
      }
      expect(failures, `failing panels:\n${failures.join('\n')}`).toEqual([]);
      // The process panels cover the controller too (it reuses MetricsRegistry).
      expect(await prometheus.series(`process_cpu_seconds_total{job="conveyor-controller"}`)).toHaveLength(controller.targets.length);

      // A job whose every target is down still shows, as down (its target_info went stale with the last scrape).
      await controller.stop();
      stopped = true;
      await prometheus.waitFor(`up{job="conveyor-controller"} == 0`, (s) => s.length === controller.targets.length, 20_000, 'the controller scraped as down');
      const [, down] = panelsOf(dashboard).find((p) => p.title === 'Targets up / down')!.targets!;
      const downByJob = Object.fromEntries((await prometheus.series(substitute(down.expr))).map((s) => [s.metric.job, Number(s.value[1])]));
      expect(downByJob).toEqual({ conveyor: 0, 'conveyor-controller': controller.targets.length });
    } finally {
      if (!stopped) await controller.stop();
    }
  }, 60_000);
});

const SCHEMA = JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'string' }] });

/** One pass over everything the dashboard shows: each counter, gauge and histogram gets a series. */
async function driveTraffic(server: ChildServer, grpc: QueueClient, streams: StreamRecorder[]): Promise<void> {
  const { api } = server;
  const ok = async (res: Promise<{ status: number; text: string }>, status: number) => {
    const r = await res;
    expect(r.status, r.text).toBe(status);
    return r;
  };
  await ok(api.put('/api/topic-configs/obs-dlq', { max_retries: 1 }), 200);
  await ok(api.put('/api/topic-configs/obs-fail', { max_retries: 0 }), 200);
  await ok(api.put('/api/topic-configs/obs-ttl', { message_ttl_seconds: 1 }), 200);
  await ok(api.put('/api/topic-configs/obs-replay', { replayable: true }), 200);
  await ok(api.put('/api/topic-schemas/obs-schema', { schema_json: SCHEMA }), 200);

  // HTTP: enqueue 5, dequeue 3, ack 2, nack 1 (retry): two stay pending for the depth and age panels.
  for (let i = 0; i < 5; i++) await ok(api.enqueue('obs-orders', `o${i}`), 201);
  const taken = (await api.dequeue('obs-orders', { count: 3 })).body.messages;
  for (const m of taken.slice(0, 2)) await ok(api.post(`/api/messages/${m.id}/ack`), 204);
  await ok(api.post(`/api/messages/${taken[2].id}/nack`, { error: 'retry me' }), 204);

  // Consumer groups: one group takes the fan-out message, the other leaves it pending (the group panels).
  for (const group of ['obs-billing', 'obs-audit']) await ok(api.post('/api/topics/obs-fanout/consumer-groups', { consumer_group: group }), 201);
  await ok(api.enqueue('obs-fanout', 'f'), 201);
  expect((await api.dequeue('obs-fanout', { consumer_group: 'obs-billing' })).body.messages).toHaveLength(1);

  // gRPC: enqueue, batch dequeue, ack, nack; unary Dequeue of an empty topic answers NOT_FOUND.
  for (let i = 0; i < 3; i++) await grpc.call('Enqueue', { topic: 'obs-grpc', payload: Buffer.from(`g${i}`) });
  const batch = (await grpc.call('BatchDequeue', { topic: 'obs-grpc', count: 3, visibility_timeout_seconds: 30 })).messages;
  expect(batch).toHaveLength(3);
  await grpc.call('Ack', { id: batch[0].id });
  await grpc.call('Nack', { id: batch[1].id, error: 'grpc retry' });
  await expect(grpc.call('Dequeue', { topic: 'obs-empty' })).rejects.toMatchObject({ code: 5 });

  // Dead letters: max_retries 1 dead-letters on the first nack; requeue one, dead-letter it again.
  await ok(api.enqueue('obs-dlq', 'poison'), 201);
  const [poison] = (await api.dequeue('obs-dlq')).body.messages;
  await ok(api.post(`/api/messages/${poison.id}/nack`, { error: 'bad payload' }), 204);
  await ok(api.post(`/api/messages/${poison.id}/requeue`), 204);
  const [again] = (await api.dequeue('obs-dlq')).body.messages;
  await ok(api.post(`/api/messages/${again.id}/nack`, { error: 'still bad' }), 204);
  // A failed nack: max_retries 0, no dead-lettering.
  await ok(api.enqueue('obs-fail', 'x'), 201);
  const [failing] = (await api.dequeue('obs-fail')).body.messages;
  await ok(api.post(`/api/messages/${failing.id}/nack`, { error: 'give up' }), 204);

  // Subscribe: one stream stays open (streams gauge), one is cancelled (ended streams by code); an enqueue
  // to the waiting stream is handed over without a claim.
  const open = new StreamRecorder(grpc.subscribe({ topic: 'obs-stream', visibility_timeout_seconds: 60 }));
  streams.push(open);
  const cancelled = new StreamRecorder(grpc.subscribe({ topic: 'obs-stream-2', visibility_timeout_seconds: 60 }));
  await sleep(300);
  cancelled.stream.cancel();
  await ok(api.enqueue('obs-stream', 'pushed'), 201);
  await open.until(() => open.received.length === 1, 5000, 'a pushed message');
  await grpc.call('Ack', { id: open.received[0].id });

  // Long polling: a wait that an enqueue ends, one that runs out (the long-poll panel).
  const woken = api.dequeue('obs-poll', { wait_seconds: 5 });
  await sleep(300);
  await ok(api.enqueue('obs-poll', 'wake'), 201);
  expect((await woken).body.messages).toHaveLength(1);
  await ok(api.dequeue('obs-poll', { wait_seconds: 1 }), 200);

  // A message delayed for longer than the test runs (the delayed-messages panel).
  await ok(api.enqueue('obs-later', 'later', { delay_seconds: 3600 }), 201);

  // Superseded: a nacked keyed message returns while a newer one holds its key.
  await ok(api.enqueue('obs-super', 'old', { key: 'k' }), 201);
  const [old] = (await api.dequeue('obs-super')).body.messages;
  await ok(api.enqueue('obs-super', 'new', { key: 'k' }), 201);
  await ok(api.post(`/api/messages/${old.id}/nack`), 204);

  // Purge and delete by key.
  await ok(api.enqueue('obs-purge', 'a'), 201);
  await ok(api.enqueue('obs-purge', 'b', { key: 'doomed' }), 201);
  await ok(api.delete('/api/topics/obs-purge/messages/by-key/doomed'), 200);
  await ok(api.post('/api/topics/obs-purge/purge'), 200);

  // Replay from the archive log.
  await ok(api.enqueue('obs-replay', 'r'), 201);
  const [replayable] = (await api.dequeue('obs-replay')).body.messages;
  await ok(api.post(`/api/messages/${replayable.id}/ack`), 204);
  await ok(api.post('/api/topics/obs-replay/replay'), 200);

  // Rejected by the schema, an unknown route, readiness probes.
  await ok(api.enqueue('obs-schema', JSON.stringify({ nope: 1 })), 422);
  await ok(api.get('/no-such-route'), 404);
  await ok(api.get('/readyz'), 200);

  // A 1 s TTL and a 1 s visibility timeout run out together: expiry and delete reapers, a redelivery.
  await ok(api.enqueue('obs-ttl', 'short-lived'), 201);
  await ok(api.enqueue('obs-redeliver', 'x'), 201);
  expect((await api.dequeue('obs-redeliver', { visibility_timeout_seconds: 1 })).body.messages).toHaveLength(1);
  await sleep(1200);
  expect((await api.dequeue('obs-redeliver')).body.messages).toHaveLength(1);
  const expired = await ok(api.post('/api/admin/expiry-reaper/run'), 200);
  expect(JSON.parse(expired.text).expired).toBeGreaterThanOrEqual(1);
  const deleted = await ok(api.post('/api/admin/delete-reaper/run'), 200);
  expect(JSON.parse(deleted.text).deleted).toBeGreaterThanOrEqual(1);
}

/**
 * Keeps every rate() above zero while Prometheus is queried: a little HTTP and gRPC traffic and a readiness
 * probe (as the kubelet would send) every 250 ms.
 */
function steadyTraffic(server: ChildServer, grpc: QueueClient): { stop(): Promise<void>; errors: string[] } {
  const errors: string[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        await server.api.enqueue('obs-steady', 'steady');
        const [m] = (await server.api.dequeue('obs-steady')).body.messages;
        if (m) await server.api.post(`/api/messages/${m.id}/ack`);
        await grpc.call('Enqueue', { topic: 'obs-steady-grpc', payload: Buffer.from('steady') });
        const { messages } = await grpc.call('BatchDequeue', { topic: 'obs-steady-grpc', count: 1 });
        if (messages[0]) await grpc.call('Ack', { id: messages[0].id });
        await server.api.get('/readyz');
      } catch (err) {
        errors.push(String(err));
      }
      await sleep(250);
    }
  })();
  return {
    errors,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}
