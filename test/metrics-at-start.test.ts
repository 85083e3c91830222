import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeKube, type FakeKube } from './fake-kube/index.js';
import { startTestController, type TestController } from './helpers/controller.js';
import { engineByName } from './helpers/engines.js';
import { parseMetrics } from './helpers/metrics.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * No dashboard panel or alert reads "No data" on a healthy service that has not yet seen the event it counts:
 * every conveyor_* metric named by the dashboards and the alert rules (the repository's and the chart's) is in
 * the first scrape of a fresh service and a fresh controller, at 0. The exceptions are gauges with no value
 * before their first event, listed here with why; docs/observability.md lists the same.
 */

const path = (p: string) => fileURLToPath(new URL(`../${p}`, import.meta.url));
const SOURCES = [
  'deploy/grafana/conveyor-dashboard.json',
  'charts/conveyor/files/conveyor-dashboard.json',
  'deploy/prometheus/conveyor-rules.yaml',
  'charts/conveyor/templates/prometheusrule.yaml',
];

/** Gauges that hold a time or an age: they have nothing to say before the event they measure. */
const WAIT_FOR_FIRST_EVENT: Record<string, string> = {
  conveyor_reaper_last_run_timestamp_seconds: 'the time of a reaper run: none before the first run',
  conveyor_oldest_pending_age_seconds: 'the age of a pending message of a topic: none before one is pending',
  conveyor_group_oldest_pending_age_seconds: 'the same for a consumer group',
};

/** Histograms appear under their base name plus a suffix. */
const baseName = (name: string) => name.replace(/_(bucket|count|sum)$/, '');

function namesRead(): string[] {
  const names = new Set<string>();
  for (const source of SOURCES) for (const name of readFileSync(path(source), 'utf8').match(/\bconveyor_[a-z0-9_]+\b/g) ?? []) names.add(name);
  return [...names].sort();
}

/** What one scrape holds: every sample's name, histograms also under their base name. */
function scraped(text: string): Set<string> {
  const names = new Set<string>();
  for (const s of parseMetrics(text)) {
    names.add(s.name);
    names.add(baseName(s.name));
  }
  return names;
}

describe('metrics the dashboards and alerts read exist from start-up', () => {
  let kube: FakeKube;
  let server: TestServer;
  let controller: TestController;
  beforeAll(async () => {
    kube = await startFakeKube();
    server = await startTestServer(engineByName.sqlite);
    controller = await startTestController(kube, server.database.url);
  });
  afterAll(async () => {
    await controller?.close();
    await server?.close();
    await kube?.close();
  });

  it('reads the names from every dashboard and rule file', () => {
    const names = namesRead();
    expect(names).toContain('conveyor_controller_watch_restarts_total');
    expect(names).toContain('conveyor_messages_enqueued_total');
    expect(names.length).toBeGreaterThan(20);
  });

  it('finds each of them in the first scrape of a fresh service or controller, except the documented timestamps', async () => {
    const [service, ctl] = await Promise.all([server.api.get('/metrics'), controller.api.get('/metrics')]);
    expect(service.status).toBe(200);
    expect(ctl.status).toBe(200);
    const present = new Set([...scraped(service.text), ...scraped(ctl.text)]);
    const missing = namesRead().filter((name) => !present.has(name) && !present.has(baseName(name)) && !(name in WAIT_FOR_FIRST_EVENT));
    expect(missing, 'read by a dashboard or an alert, absent from a fresh scrape').toEqual([]);
  });

  it('reports the counters of a fresh service at 0', async () => {
    const samples = parseMetrics((await server.api.get('/metrics')).text);
    const counters = samples.filter((s) => s.name.startsWith('conveyor_') && s.name.endsWith('_total') && namesRead().includes(s.name));
    expect(counters.length).toBeGreaterThan(5);
    // /metrics itself is not counted by any of these; nothing else ran.
    for (const s of counters) expect(s.value, `${s.name} ${JSON.stringify(s.labels)}`).toBe(0);
  });
});
