/**
 * Monitoring per release (issue 44, part 3): each release's Services carry a metrics job of their own, its
 * PrometheusRule selects and aggregates by the release's namespace and job, thresholds and on/off per alert come
 * from the values, and the rules of two releases side by side pass promtool unit tests in which one release's
 * alerts fire while the other's stay quiet. The single-release copy deploy/prometheus/conveyor-rules.yaml must
 * agree with the template.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { CHART, EXPLICIT_AUTH, ROOT, helmTemplate, validateObject, type K8sObject } from './helpers/helm.js';
import { PROMTOOL_BIN } from './helpers/prometheus.js';

const MONITORING = ['--set', 'metrics.serviceMonitor.enabled=true', '--set', 'metrics.prometheusRule.enabled=true', '--set', 'metrics.dashboard.enabled=true'];
// The auth values given (helm template cannot look up a generated Secret): test/chart-gitops.test.ts.
const EXTERNAL = [...EXPLICIT_AUTH, '--set', 'database.embedded=false', '--set', 'database.url=mysql://conveyor:s3cret@mysql.db.svc:3306/conveyor'];

interface Rule {
  alert: string;
  expr: string;
  for: string;
  labels: Record<string, string>;
  annotations?: Record<string, string>;
}
interface Group {
  name: string;
  rules: Rule[];
}

const ofKind = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);
const groupsOf = (objects: K8sObject[]): Group[] => ofKind(objects, 'PrometheusRule')[0].spec.groups;
const rulesOf = (objects: K8sObject[]): Rule[] => groupsOf(objects).flatMap((g) => g.rules);
const jobsOf = (objects: K8sObject[]) => ofKind(objects, 'Service').map((s) => s.metadata.labels?.['conveyor.dev/metrics-job']).filter(Boolean).sort();

function promtool(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(PROMTOOL_BIN, args, { timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` });
    });
  });
}

describe('monitoring of two releases side by side', () => {
  const A = { release: 'orders', namespace: 'team-a' };
  const B = { release: 'payments', namespace: 'team-b' };
  let a: K8sObject[];
  let b: K8sObject[];
  let dir: string;

  beforeAll(async () => {
    a = (await helmTemplate([...EXTERNAL, ...MONITORING], A)).objects;
    // The second release tunes one alert and turns another off.
    b = (
      await helmTemplate(
        [...EXTERNAL, ...MONITORING, '--set', 'metrics.prometheusRule.alerts.ConveyorOldestPendingTooOld.threshold=3600', '--set', 'metrics.prometheusRule.alerts.ConveyorDeadLettersArriving.enabled=false'],
        B,
      )
    ).objects;
    dir = mkdtempSync(join(tmpdir(), 'conveyor-chart-monitoring-'));
  }, 60_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('each release scrapes its Services under a job of its own, which its ServiceMonitors take', () => {
    expect(jobsOf(a)).toEqual(['orders-conveyor', 'orders-conveyor-controller']);
    expect(jobsOf(b)).toEqual(['payments-conveyor', 'payments-conveyor-controller']);
    for (const objects of [a, b]) {
      const monitors = ofKind(objects, 'ServiceMonitor');
      expect(monitors).toHaveLength(2);
      for (const sm of monitors) {
        const selected = ofKind(objects, 'Service').filter((s) => Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => s.metadata.labels?.[k] === v));
        expect(selected, sm.metadata.name).toHaveLength(1);
        expect(jobsOf(objects)).toContain(selected[0].metadata.labels![sm.spec.jobLabel]);
      }
      for (const object of [...monitors, ...ofKind(objects, 'PrometheusRule')]) expect(validateObject(object), object.metadata.name).toEqual([]);
    }
  });

  it('names the release namespace in every selector and keeps namespace and job in every aggregation', () => {
    for (const [objects, { namespace }] of [
      [a, A],
      [b, B],
    ] as const) {
      const jobs = jobsOf(objects);
      for (const rule of rulesOf(objects)) {
        const where = `${rule.alert}: ${rule.expr}`;
        const selectors = rule.expr.match(/[a-z_]+\{[^}]*\}/g) ?? [];
        expect(selectors.length, where).toBeGreaterThan(0);
        for (const selector of selectors) {
          expect(selector, where).toContain(`{namespace="${namespace}", `);
          const job = /\bjob=~?"([^"]+)"/.exec(selector)?.[1];
          // kube-state-metrics reports the CronJobs under its own job: there the release is its CronJob names.
          if (job) expect(job.split('|').every((j) => jobs.includes(j)), where).toBe(true);
          else expect(selector, where).toMatch(/cronjob=~"[^"]*-reap-expiry\|[^"]*-reap-delete\|[^"]*-reap-archive"/);
        }
        for (const [, labels] of rule.expr.matchAll(/\bby \(([^)]*)\)/g)) expect(labels, where).toMatch(/^namespace, job\b/);
        for (const [, labels] of rule.expr.matchAll(/\bon \(([^)]*)\)/g)) if (labels !== '') expect(labels, where).toMatch(/^namespace\b/);
      }
    }
  });

  it('takes thresholds and on/off per alert from the values', () => {
    const expr = (objects: K8sObject[], alert: string) => rulesOf(objects).find((r) => r.alert === alert)?.expr;
    expect(expr(a, 'ConveyorOldestPendingTooOld')).toMatch(/\) > 900$/);
    expect(expr(b, 'ConveyorOldestPendingTooOld')).toMatch(/\) > 3600$/);
    expect(rulesOf(b).find((r) => r.alert === 'ConveyorOldestPendingTooOld')!.annotations!.description).toContain('more than 1 hour without');
    expect(expr(a, 'ConveyorDeadLettersArriving')).toBeDefined();
    expect(expr(b, 'ConveyorDeadLettersArriving')).toBeUndefined();
    expect(rulesOf(b)).toHaveLength(rulesOf(a).length - 1);
  });

  it('leaves out a group whose alerts are all off', async () => {
    const off = ['ConveyorControllerNoLeader', 'ConveyorControllerReconcileErrors'].flatMap((alert) => ['--set', `metrics.prometheusRule.alerts.${alert}.enabled=false`]);
    const objects = (await helmTemplate([...EXTERNAL, ...MONITORING, ...off])).objects;
    expect(groupsOf(objects).map((g) => g.name)).toEqual(['conveyor.service']);
  });

  it('refuses an unknown alert, a threshold out of range, and a threshold on an alert that has none', async () => {
    for (const bad of [
      'metrics.prometheusRule.alerts.ConveyorSomethingElse.enabled=true',
      'metrics.prometheusRule.alerts.ConveyorHighErrorRate.threshold=5',
      'metrics.prometheusRule.alerts.ConveyorBacklogGrowing.threshold=lots',
      'metrics.prometheusRule.alerts.ConveyorInstanceDown.threshold=1',
    ]) {
      await expect(helmTemplate([...MONITORING, '--set', bad]), bad).rejects.toThrow(/values don't meet the specifications of the schema|schema/);
    }
  });

  it('renders the same dashboard for both: its namespace and job variables pick the release', () => {
    const dashboard = (objects: K8sObject[]) => ofKind(objects, 'ConfigMap').find((c) => c.data?.['conveyor-dashboard.json'])!.data['conveyor-dashboard.json'];
    expect(dashboard(a)).toBe(dashboard(b));
    expect(dashboard(a)).toBe(readFileSync(join(ROOT, 'deploy', 'grafana', 'conveyor-dashboard.json'), 'utf8'));
  });

  it("pass promtool unit tests on both releases' rules at once: one release's alerts fire while the other's stay quiet", async () => {
    const [apiA, controllerA] = jobsOf(a);
    const [apiB, controllerB] = jobsOf(b);
    // One rule file, as a Prometheus that loads both PrometheusRules evaluates them. Annotations are left out:
    // the single-release unit tests check them, this test is about which series reach which alert.
    const groups = [
      [A, a],
      [B, b],
    ].flatMap(([{ namespace }, objects]: any) =>
      groupsOf(objects).map((g) => ({ name: `${namespace}/${g.name}`, rules: g.rules.map(({ annotations: _, ...rule }) => rule) })),
    );
    writeFileSync(join(dir, 'rules.yaml'), YAML.stringify({ groups }));
    const up = (namespace: string, job: string, instance: string, values: string) => ({ series: `up{namespace="${namespace}", job="${job}", instance="${instance}"}`, values });
    const tests = {
      rule_files: ['rules.yaml'],
      evaluation_interval: '1m',
      tests: [
        {
          name: "all instances down fires for the release whose API is down, not for the one that is up, nor for another namespace's job of the same name",
          interval: '1m',
          input_series: [
            up('team-a', apiA, '10.0.1.1:9090', '1 1 0 0 0 0 0 0'),
            up('team-a', controllerA, '10.0.1.2:8081', '1x7'),
            up('team-b', apiB, '10.0.2.1:9090', '1x7'),
            up('team-b', controllerB, '10.0.2.2:8081', '1x7'),
            up('team-c', apiA, '10.0.3.1:9090', '1x7'),
          ],
          alert_rule_test: [
            { eval_time: '3m', alertname: 'ConveyorAllInstancesDown', exp_alerts: [] },
            { eval_time: '6m', alertname: 'ConveyorAllInstancesDown', exp_alerts: [{ exp_labels: { severity: 'critical', namespace: 'team-a', job: apiA } }] },
            {
              eval_time: '6m',
              alertname: 'ConveyorInstanceDown',
              exp_alerts: [{ exp_labels: { severity: 'warning', namespace: 'team-a', job: apiA, instance: '10.0.1.1:9090' } }],
            },
          ],
        },
        {
          name: "the error ratio is each release's own: a busy healthy release does not dilute the other's errors",
          interval: '1m',
          input_series: [
            { series: `conveyor_http_request_duration_seconds_count{namespace="team-a", job="${apiA}", instance="a:9090", method="POST", route="/api/messages", status="201"}`, values: '0+90x20' },
            { series: `conveyor_http_request_duration_seconds_count{namespace="team-a", job="${apiA}", instance="a:9090", method="POST", route="/api/messages", status="503"}`, values: '0+10x20' },
            { series: `conveyor_http_request_duration_seconds_count{namespace="team-b", job="${apiB}", instance="b:9090", method="POST", route="/api/messages", status="201"}`, values: '0+1000x20' },
          ],
          alert_rule_test: [
            {
              eval_time: '10m',
              alertname: 'ConveyorHighErrorRate',
              exp_alerts: [{ exp_labels: { severity: 'critical', namespace: 'team-a', job: apiA, transport: 'http' } }],
            },
          ],
        },
        {
          name: 'each release applies its own threshold to the same topic name',
          interval: '1m',
          input_series: [
            { series: `conveyor_oldest_pending_age_seconds{namespace="team-a", job="${apiA}", instance="a:9090", topic="orders"}`, values: '1200x10' },
            { series: `conveyor_oldest_pending_age_seconds{namespace="team-b", job="${apiB}", instance="b:9090", topic="orders"}`, values: '1200x10' },
          ],
          alert_rule_test: [
            {
              eval_time: '10m',
              alertname: 'ConveyorOldestPendingTooOld',
              exp_alerts: [{ exp_labels: { severity: 'warning', namespace: 'team-a', job: apiA, topic: 'orders' } }],
            },
          ],
        },
        {
          name: "a controller without a leader is noticed although the other release's controller leads",
          interval: '1m',
          input_series: [
            up('team-a', controllerA, '10.0.1.2:8081', '1x10'),
            up('team-b', controllerB, '10.0.2.2:8081', '1x10'),
            { series: `conveyor_controller_leader{namespace="team-a", job="${controllerA}", instance="10.0.1.2:8081"}`, values: '0x10' },
            { series: `conveyor_controller_leader{namespace="team-b", job="${controllerB}", instance="10.0.2.2:8081"}`, values: '1x10' },
          ],
          alert_rule_test: [
            { eval_time: '2m', alertname: 'ConveyorControllerNoLeader', exp_alerts: [] },
            { eval_time: '5m', alertname: 'ConveyorControllerNoLeader', exp_alerts: [{ exp_labels: { severity: 'warning', namespace: 'team-a', job: controllerA } }] },
          ],
        },
        {
          name: "dead letters alert only where the alert is on, labelled with the release",
          interval: '1m',
          input_series: [
            { series: `conveyor_messages_nacked_total{namespace="team-a", job="${apiA}", instance="a:9090", topic="orders", outcome="dlq"}`, values: '0 1 2 3 4 5' },
            { series: `conveyor_messages_nacked_total{namespace="team-b", job="${apiB}", instance="b:9090", topic="orders", outcome="dlq"}`, values: '0 1 2 3 4 5' },
          ],
          alert_rule_test: [
            { eval_time: '4m', alertname: 'ConveyorDeadLettersArriving', exp_alerts: [{ exp_labels: { severity: 'warning', namespace: 'team-a', job: apiA, topic: 'orders' } }] },
          ],
        },
      ],
    };
    writeFileSync(join(dir, 'rules.test.yaml'), YAML.stringify(tests));
    const check = await promtool(['check', 'rules', join(dir, 'rules.yaml')]);
    expect(check.code, check.output).toBe(0);
    const { code, output } = await promtool(['test', 'rules', join(dir, 'rules.test.yaml')]);
    expect(code, output).toBe(0);
    expect(output).toContain('SUCCESS');
  });
});

describe('the single-release rules file', () => {
  it('is what the chart renders for a release named conveyor, without the namespace matchers', async () => {
    const namespace = 'drift-check';
    const objects = (await helmTemplate([...EXPLICIT_AUTH, '--set', 'metrics.prometheusRule.enabled=true'], { release: 'conveyor', namespace })).objects;
    const groups = groupsOf(objects);
    // absent() keeps no labels of its selector, so the chart names the namespace as a label of the alert.
    const allDown = groups.flatMap((g) => g.rules).find((r) => r.alert === 'ConveyorAllInstancesDown')!;
    expect(allDown.labels.namespace).toBe(namespace);
    delete allDown.labels.namespace;
    const rendered = JSON.stringify(groups)
      .replaceAll(`namespace=\\"${namespace}\\", `, '')
      // The plain file cannot know the CronJob names of a release: it matches any <name>-reap-<reaper>.
      .replaceAll('cronjob=~\\"conveyor-reap-expiry|conveyor-reap-delete|conveyor-reap-archive\\"', 'cronjob=~\\".+-reap-(expiry|delete|archive)\\"');
    expect(JSON.parse(rendered)).toEqual(YAML.parse(readFileSync(join(ROOT, 'deploy', 'prometheus', 'conveyor-rules.yaml'), 'utf8')).groups);
  });

  it('documents every alert of the values in the chart', () => {
    const values = YAML.parse(readFileSync(join(CHART, 'values.yaml'), 'utf8'));
    const plain = YAML.parse(readFileSync(join(ROOT, 'deploy', 'prometheus', 'conveyor-rules.yaml'), 'utf8')).groups.flatMap((g: Group) => g.rules.map((r) => r.alert));
    expect(Object.keys(values.metrics.prometheusRule.alerts).sort()).toEqual([...new Set<string>(plain)].sort());
  });
});
