/**
 * The chart under GitOps (docs/kubernetes-install.md, "GitOps: Argo CD and Flux"): renders without a cluster
 * (helm template, as Argo CD renders) are the same every time, generate no secret, and render nothing the
 * controller changes afterwards (the delete-reaper CronJob is the controller's own); the page's Argo CD and
 * Flux examples render clean with their values.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments, stringify as toYaml } from 'yaml';
import { CHART, EXPLICIT_AUTH, ROOT, helm, helmTemplate, validateObject, type K8sObject } from './helpers/helm.js';

const EXTERNAL = ['--set', 'database.embedded=false', '--set', 'database.url=mysql://conveyor:s3cret@mysql.db.svc:3306/conveyor'];
const EXISTING_AUTH = ['--set', 'auth.existingSecret=conveyor-auth', '--set', 'auth.jwtSecretKey=jwt', '--set', 'auth.adminPasswordKey=password'];
const PAGE = join(ROOT, 'docs', 'kubernetes-install.md');

/** The documented refusal, in the words the page quotes. */
const REFUSAL =
  /auth\.enabled=true needs a JWT secret and an admin password that are the same on every render, and this render cannot look up the Secret \S*conveyor-auth of an earlier one .*Set auth\.existingSecret to a Secret you create \(keys auth\.jwtSecretKey and auth\.adminPasswordKey\), or give both auth\.jwtSecret and auth\.adminPassword/s;

const template = (args: string[], options: { release?: string; namespace?: string; chart?: string } = {}) =>
  helm(['template', options.release ?? 'conveyor', options.chart ?? CHART, '--namespace', options.namespace ?? 'conveyor', ...args]);

const controllerContainer = (objects: K8sObject[]) =>
  objects.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-controller'))!.spec.template.spec.containers.find((c: any) => c.name === 'controller');

/** The CronJob the controller creates, from the ConfigMap key its configuration names. */
function controllerCronJob(objects: K8sObject[]): K8sObject | undefined {
  const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.data?.['conveyor.yaml']);
  const path: string = parseYaml(configMap!.data['conveyor.yaml']).controller.delete_reaper_cronjob_template;
  if (!path) return undefined;
  expect(path.startsWith('/etc/conveyor/')).toBe(true);
  return parseYaml(configMap!.data[path.slice('/etc/conveyor/'.length)]);
}

describe('auth secret: nothing generated where the Secret cannot be looked up', () => {
  it('helm template with auth on and neither auth.existingSecret nor both values fails, saying what to set', async () => {
    for (const args of [[], EXTERNAL, ['--set', 'auth.jwtSecret=only-the-jwt-secret-of-at-least-32-bytes']]) {
      const result = await template(args);
      expect(result.code, args.join(' ')).not.toBe(0);
      expect(result.stderr, args.join(' ')).toMatch(REFUSAL);
    }
    // helm lint and --dry-run=client cannot look up either.
    const lint = await helm(['lint', CHART, '--namespace', 'conveyor']);
    expect(`${lint.stdout}${lint.stderr}`).toMatch(REFUSAL);
    const dryRun = await helm(['install', 'conveyor', CHART, '--dry-run=client', '--namespace', 'conveyor']);
    expect(dryRun.code).not.toBe(0);
    expect(dryRun.stderr).toMatch(REFUSAL);
  });

  it('the page quotes the message as the chart words it', () => {
    const quoted = /```text\n(auth\.enabled=true needs[\s\S]*?)\n```/.exec(readFileSync(PAGE, 'utf8'))?.[1].replace(/\s+/g, ' ');
    expect(quoted).toBeDefined();
    const secrets = readFileSync(join(CHART, 'templates', 'secrets.yaml'), 'utf8');
    for (const part of quoted!.split('(...)').map((p) => p.trim())) expect(secrets.replace('%s', 'conveyor-auth')).toContain(part);
  });

  it('with auth.existingSecret, with both explicit values, or with auth off, two renders are byte for byte the same', async () => {
    for (const args of [[...EXTERNAL, ...EXISTING_AUTH], EXISTING_AUTH, EXPLICIT_AUTH, ['--set', 'auth.enabled=false']]) {
      const first = await template(args);
      expect(first.code, first.stderr).toBe(0);
      const second = await template(args);
      expect(second.stdout, args.join(' ')).toBe(first.stdout);
    }
  });
});

describe('nothing rendered is changed by the controller', () => {
  let objects: K8sObject[];
  beforeAll(async () => {
    objects = (await helmTemplate([...EXTERNAL, ...EXISTING_AUTH])).objects;
  });

  it('no delete-reaper CronJob is rendered: the ConfigMap carries the one the controller creates, a valid CronJob', () => {
    expect(objects.filter((o) => o.kind === 'CronJob').map((o) => o.metadata.name)).toEqual(['conveyor-reap-expiry', 'conveyor-reap-archive']);
    expect(objects.flatMap(validateObject)).toEqual([]);
    const cronJob = controllerCronJob(objects)!;
    expect(cronJob.metadata.name).toBe('conveyor-reap-delete');
    expect(validateObject(cronJob)).toEqual([]);
    expect(cronJob.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('conveyor-controller');
    expect(cronJob.spec.concurrencyPolicy).toBe('Forbid');
    expect(cronJob.spec.jobTemplate.spec.template.spec.containers[0].args).toEqual(['reap', 'delete']);
    // As the other reapers run: same account, pod security and environment.
    const expiry = objects.find((o) => o.kind === 'CronJob' && o.metadata.name === 'conveyor-reap-expiry')!;
    const pod = (c: K8sObject) => c.spec.jobTemplate.spec.template.spec;
    expect({ ...pod(cronJob), containers: undefined }).toEqual({ ...pod(expiry), containers: undefined });
    expect({ ...pod(cronJob).containers[0], args: undefined }).toEqual({ ...pod(expiry).containers[0], args: undefined });
  });

  it('the controller gets its pod from the downward API (POD_NAME, POD_NAMESPACE) and its config names the CronJob and its template', () => {
    const env = controllerContainer(objects).env;
    expect(env.find((e: any) => e.name === 'POD_NAME')).toEqual({ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } });
    expect(env.find((e: any) => e.name === 'POD_NAMESPACE')).toEqual({ name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } });
    const config = parseYaml(objects.find((o) => o.kind === 'ConfigMap' && o.data?.['conveyor.yaml'])!.data['conveyor.yaml']);
    expect(config.controller).toMatchObject({ delete_reaper_cronjob: 'conveyor-reap-delete', delete_reaper_cronjob_template: '/etc/conveyor/delete-reaper-cronjob.yaml' });
  });

  it('a change of the template rolls the controller pods (it reads the template at start-up), not the API pods', async () => {
    const changed = (await helmTemplate([...EXTERNAL, ...EXISTING_AUTH, '--set', 'reapers.resources.requests.cpu=100m'])).objects;
    const annotations = (list: K8sObject[], name: string) => list.find((o) => o.kind === 'Deployment' && o.metadata.name === name)!.spec.template.metadata.annotations;
    expect(annotations(changed, 'conveyor-controller')['checksum/delete-reaper-cronjob']).toMatch(/^[0-9a-f]{64}$/);
    expect(annotations(changed, 'conveyor-controller')['checksum/delete-reaper-cronjob']).not.toBe(annotations(objects, 'conveyor-controller')['checksum/delete-reaper-cronjob']);
    expect(annotations(changed, 'conveyor')).toEqual(annotations(objects, 'conveyor'));
  });

  it('the chart looks nothing up but the auth Secret (and the database guard\'s workloads): no live CronJob is read any more', () => {
    const templates = ['_helpers.tpl', 'reaper-cronjobs.yaml', 'configmap.yaml'].map((f) => readFileSync(join(CHART, 'templates', f), 'utf8')).join('\n');
    expect(templates).not.toMatch(/lookup "batch\/v1"/);
  });
});

describe('the Argo CD and Flux examples of docs/kubernetes-install.md', () => {
  const section = (() => {
    const page = readFileSync(PAGE, 'utf8');
    const start = page.indexOf('## GitOps: Argo CD and Flux');
    return page.slice(start, page.indexOf('\n## ', start + 1));
  })();
  const manifests = [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].flatMap((m) => parseAllDocuments(m[1]).map((d) => d.toJS()));
  const ofKind = (kind: string) => manifests.filter((m) => m?.kind === kind);

  it('has an Argo CD Application, a Flux HelmRelease and their GitRepository and HelmRepository sources, pointing at this chart', () => {
    const [application] = ofKind('Application');
    expect(application.apiVersion).toBe('argoproj.io/v1alpha1');
    expect(existsSync(join(ROOT, application.spec.source.path, 'Chart.yaml'))).toBe(true);
    const [release] = ofKind('HelmRelease');
    expect(release.apiVersion).toBe('helm.toolkit.fluxcd.io/v2');
    expect(existsSync(join(ROOT, release.spec.chart.spec.chart, 'Chart.yaml'))).toBe(true);
    const [git] = ofKind('GitRepository');
    expect([git.apiVersion, release.spec.chart.spec.sourceRef]).toEqual(['source.toolkit.fluxcd.io/v1', { kind: 'GitRepository', name: git.metadata.name, namespace: git.metadata.namespace }]);
    expect(ofKind('HelmRepository').map((r) => r.apiVersion)).toEqual(['source.toolkit.fluxcd.io/v1']);
  });

  const examples = (): Array<[string, { values: object; release: string; namespace: string }]> => [
    ['Argo CD', (([a]) => ({ values: a.spec.source.helm.valuesObject, release: a.spec.source.helm.releaseName, namespace: a.spec.destination.namespace }))(ofKind('Application'))],
    ['Flux', (([r]) => ({ values: r.spec.values, release: r.spec.releaseName, namespace: r.metadata.namespace }))(ofKind('HelmRelease'))],
  ];

  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'conveyor-gitops-values-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(['Argo CD', 'Flux'])('%s: its values render clean without a cluster, the same twice, with no Secret of their own and no delete CronJob', async (name) => {
    const { values, release, namespace } = Object.fromEntries(examples())[name];
    const file = join(dir, `${name.replace(/\W/g, '')}.yaml`);
    writeFileSync(file, toYaml(values));
    const first = await template(['-f', file], { release, namespace });
    expect(first.code, first.stderr).toBe(0);
    expect((await template(['-f', file], { release, namespace })).stdout).toBe(first.stdout);
    const { objects } = await helmTemplate(['-f', file], { release, namespace });
    expect(objects.flatMap(validateObject)).toEqual([]);
    // Every Secret comes from the cluster (existingSecret); the only one the chart holds is none.
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    expect(objects.some((o) => o.kind === 'CronJob' && o.metadata.name.endsWith('-reap-delete'))).toBe(false);
    expect(validateObject(controllerCronJob(objects)!)).toEqual([]);
  });
});

describe('with a cluster to ask (helm install, helm upgrade, Flux)', () => {
  // A copy of the chart whose check for a reachable cluster answers as a cluster does (the lookup of the Secret
  // itself answers nothing: a first install).
  let chart: string;
  beforeAll(() => {
    chart = mkdtempSync(join(tmpdir(), 'conveyor-chart-cluster-'));
    cpSync(CHART, chart, { recursive: true });
    const helpers = join(chart, 'templates', '_helpers.tpl');
    const text = readFileSync(helpers, 'utf8');
    const probe = '{{- if lookup "v1" "Secret" .namespace "" }}true{{ end -}}';
    expect(text).toContain(probe);
    writeFileSync(helpers, text.replace(probe, 'true'));
  });
  afterAll(() => {
    if (chart) rmSync(chart, { recursive: true, force: true });
  });

  it('a first install generates the JWT secret (64 characters) and the admin password (24), kept by upgrades through the lookup', async () => {
    const secretOf = async () => (await helmTemplate([], { chart })).objects.find((o) => o.kind === 'Secret' && o.metadata.name === 'conveyor-auth')!;
    const secret = await secretOf();
    expect(Buffer.from(secret.data['jwt-secret'], 'base64').toString()).toMatch(/^[A-Za-z0-9]{64}$/);
    expect(Buffer.from(secret.data['admin-password'], 'base64').toString()).toMatch(/^[A-Za-z0-9]{24}$/);
    expect(secret.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
    // Each first install its own; an upgrade reads them back (test/chart.test.ts, "values kept across upgrades").
    expect((await secretOf()).data['jwt-secret']).not.toBe(secret.data['jwt-secret']);
  });
});
