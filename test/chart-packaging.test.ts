/**
 * Packaging and the last gaps of the chart (issue 44, part 5): the README `helm show readme` prints, with its
 * values table generated from values.yaml; Chart.yaml's metadata; the controller's PodDisruptionBudget; HPA
 * behavior; the KEDA ScaledObject example.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML, { parseAllDocuments } from 'yaml';
import { CHART_README, CHART_VALUES, chartReadme, valueRows } from '../scripts/chart-readme.js';
import { CHART, EXPLICIT_AUTH, ROOT, helm, helmTemplate, validateObject, type K8sObject } from './helpers/helm.js';
import { PROMTOOL_BIN } from './helpers/prometheus.js';

// The auth values given (helm template cannot look up a generated Secret): test/chart-gitops.test.ts.
const EXTERNAL = [...EXPLICIT_AUTH, '--set', 'database.embedded=false', '--set', 'database.url=mysql://conveyor:s3cret@mysql.db.svc:3306/conveyor'];

describe('chart README', () => {
  it('is what `helm show readme` prints', async () => {
    const { code, stdout } = await helm(['show', 'readme', CHART]);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe(readFileSync(CHART_README, 'utf8').trim());
    expect(stdout).toContain('kind load docker-image');
  });

  it('has a values table that regenerating from values.yaml leaves unchanged', () => {
    const readme = readFileSync(CHART_README, 'utf8');
    expect(chartReadme(readme, readFileSync(CHART_VALUES, 'utf8')), 'run `npm run chart-readme`').toBe(readme);
  });

  it('lists every documented value with its default', () => {
    const rows = valueRows(readFileSync(CHART_VALUES, 'utf8'));
    const byKey = Object.fromEntries(rows.map((r) => [r.key, r]));
    expect(rows.length).toBeGreaterThan(150);
    expect(byKey['image.repository']).toMatchObject({ default: 'conveyor', description: 'Image repository.' });
    expect(byKey['controller.podDisruptionBudget.enabled'].default).toBe(true);
    expect(byKey['api.autoscaling.behavior'].default).toEqual({});
    expect(byKey['metrics.prometheusRule.alerts.ConveyorBacklogGrowing.threshold'].default).toBe(1000);
    // A description continued over several comment lines is one cell.
    expect(byKey['api.terminationGracePeriodSeconds'].description).toMatch(/^How long .+ is refused\.$/);
  });
});

describe('Chart.yaml', () => {
  it('has home, sources and icon', () => {
    const chart = YAML.parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8'));
    expect(chart.home).toMatch(/^https:\/\//);
    expect(chart.sources.length).toBeGreaterThan(0);
    for (const source of chart.sources) expect(source).toMatch(/^https:\/\//);
    expect(chart.icon).toMatch(/^https:\/\/.+\.svg$/);
    // The icon is the repository's own file.
    expect(readFileSync(join(ROOT, 'docs', 'images', chart.icon.split('/').pop()), 'utf8')).toContain('<svg');
  });
});

describe('controller PodDisruptionBudget', () => {
  const pdbs = async (args: string[]) => (await helmTemplate(args)).objects.filter((o) => o.kind === 'PodDisruptionBudget');

  it('keeps one controller pod (leader or standby) through voluntary disruptions when there are several', async () => {
    const objects = (await helmTemplate(EXTERNAL)).objects;
    const pdb = objects.find((o) => o.kind === 'PodDisruptionBudget' && o.metadata.name === 'conveyor-controller')!;
    expect(pdb.spec).toMatchObject({ minAvailable: 1 });
    expect(validateObject(pdb)).toEqual([]);
    const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'conveyor-controller')!;
    expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    const api = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'conveyor')!;
    // It must not also select the API pods (two budgets on one pod make evictions fail).
    expect(Object.entries(pdb.spec.selector.matchLabels).every(([k, v]) => api.spec.template.metadata.labels[k] === v)).toBe(false);
  });

  it('is not rendered for a single replica (it would block every drain), when turned off, or with the embedded database', async () => {
    const names = (objects: K8sObject[]) => objects.map((o) => o.metadata.name);
    expect(names(await pdbs([...EXTERNAL, '--set', 'controller.replicaCount=1']))).not.toContain('conveyor-controller');
    expect(names(await pdbs([...EXTERNAL, '--set', 'controller.podDisruptionBudget.enabled=false']))).not.toContain('conveyor-controller');
    expect(names(await pdbs(EXPLICIT_AUTH))).not.toContain('conveyor-controller');
  });
});

describe('HPA behavior', () => {
  it('passes api.autoscaling.behavior through to the HorizontalPodAutoscaler', async () => {
    const behavior = { scaleDown: { stabilizationWindowSeconds: 600, policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }] }, scaleUp: { selectPolicy: 'Max' } };
    const dir = mkdtempSync(join(tmpdir(), 'conveyor-chart-hpa-'));
    try {
      const values = join(dir, 'values.yaml');
      writeFileSync(values, YAML.stringify({ api: { autoscaling: { enabled: true, behavior } } }));
      const hpa = (await helmTemplate([...EXTERNAL, '-f', values])).objects.find((o) => o.kind === 'HorizontalPodAutoscaler')!;
      expect(hpa.spec.behavior).toEqual(behavior);
      expect(validateObject(hpa)).toEqual([]);
      const plain = (await helmTemplate([...EXTERNAL, '--set', 'api.autoscaling.enabled=true'])).objects.find((o) => o.kind === 'HorizontalPodAutoscaler')!;
      expect(plain.spec.behavior).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await expect(helmTemplate([...EXTERNAL, '--set', 'api.autoscaling.behavior.scaleSideways.x=1'])).rejects.toThrow(/schema/);
  });
});

describe('KEDA example', () => {
  const file = join(ROOT, 'deploy', 'examples', 'keda', 'orders-consumer.yaml');
  const docs = parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS() as K8sObject);
  const deployment = docs.find((d) => d.kind === 'Deployment')!;
  const scaled = docs.find((d) => d.kind === 'ScaledObject')!;

  // KEDA's documented ScaledObject spec (keda.sh/v1alpha1) and the Prometheus scaler's metadata keys.
  const SPEC = ['scaleTargetRef', 'pollingInterval', 'cooldownPeriod', 'initialCooldownPeriod', 'idleReplicaCount', 'minReplicaCount', 'maxReplicaCount', 'fallback', 'advanced', 'triggers'];
  const PROMETHEUS = ['serverAddress', 'query', 'threshold', 'activationThreshold', 'namespace', 'customHeaders', 'ignoreNullValues', 'queryParameters', 'unsafeSsl', 'timeout'];

  it('scales a valid consumer Deployment', () => {
    expect(validateObject(deployment)).toEqual([]);
    expect(scaled).toMatchObject({ apiVersion: 'keda.sh/v1alpha1', kind: 'ScaledObject', metadata: { namespace: deployment.metadata.namespace } });
    expect(scaled.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata.name });
    // KEDA owns the replica count; a replicas field would fight it on every apply.
    expect(deployment.spec.replicas).toBeUndefined();
  });

  it('uses only documented ScaledObject fields, with sane replica bounds', () => {
    expect(Object.keys(scaled.spec).filter((k) => !SPEC.includes(k))).toEqual([]);
    expect(Number.isInteger(scaled.spec.minReplicaCount)).toBe(true);
    expect(Number.isInteger(scaled.spec.maxReplicaCount)).toBe(true);
    expect(scaled.spec.minReplicaCount).toBeLessThanOrEqual(scaled.spec.maxReplicaCount);
    for (const key of ['pollingInterval', 'cooldownPeriod']) expect(Number.isInteger(scaled.spec[key]), key).toBe(true);
  });

  it("triggers KEDA's Prometheus scaler on the topic's pending depth, with a query Prometheus accepts", async () => {
    expect(scaled.spec.triggers).toHaveLength(1);
    const [trigger] = scaled.spec.triggers;
    expect(trigger.type).toBe('prometheus');
    expect(Object.keys(trigger.metadata).filter((k) => !PROMETHEUS.includes(k))).toEqual([]);
    // KEDA reads trigger metadata as strings.
    for (const [key, value] of Object.entries(trigger.metadata)) expect(typeof value, key).toBe('string');
    expect(new URL(trigger.metadata.serverAddress).protocol).toBe('http:');
    expect(trigger.metadata.threshold).toMatch(/^\d+(\.\d+)?$/);
    expect(trigger.metadata.query).toMatch(/^max\(conveyor_queue_depth\{.*status="pending".*\}\)$/);
    expect(trigger.metadata.query).toContain('topic="orders"');
    expect(trigger.metadata.query).toMatch(/namespace="[^"]+", job="[^"]+"/);

    const dir = mkdtempSync(join(tmpdir(), 'conveyor-keda-'));
    try {
      writeFileSync(join(dir, 'query.yaml'), YAML.stringify({ groups: [{ name: 'keda', rules: [{ record: 'keda:orders_pending', expr: trigger.metadata.query }] }] }));
      const output = await new Promise<string>((resolve, reject) =>
        execFile(PROMTOOL_BIN, ['check', 'rules', join(dir, 'query.yaml')], (err, stdout, stderr) => (err ? reject(new Error(`${stdout}${stderr}`)) : resolve(stdout))),
      );
      expect(output).toContain('SUCCESS');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
