/**
 * The Helm chart charts/conveyor: lint, render with several value sets, validate every object, and check what
 * matters — probes, security contexts, RBAC, secret references, hooks, CronJobs, labels and selectors, the
 * values schema, generated secrets kept across upgrades, copies of CRDs and monitoring files — and that the
 * configuration each pod gets (the rendered conveyor.yaml plus the pod's CONVEYOR_* variables) is accepted by
 * the service's own loader (src/config/load.ts).
 */
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig, validateConfig } from '../src/config/load.js';
import { configSchema, type Config } from '../src/config/schema.js';
import { CHART, EXPLICIT_AUTH, ROOT, helm, helmTemplate, parseManifests, validateObject, type K8sObject } from './helpers/helm.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { TestPki } from './helpers/certs.js';
import { engineByName } from './helpers/engines.js';

const NAMESPACE = 'conveyor';
const PRODUCTION_VALUES = join(CHART, 'ci', 'production-values.yaml');
const chartValues = parseYaml(readFileSync(join(CHART, 'values.yaml'), 'utf8'));
const productionValues = parseYaml(readFileSync(PRODUCTION_VALUES, 'utf8'));

/**
 * The value sets every generic check runs on. `values` is what the test knows of them (for existingSecret names).
 * Sets with auth on and no auth.existingSecret give the auth values (EXPLICIT_AUTH): `helm template` refuses to
 * generate them (test/chart-gitops.test.ts).
 */
const VALUE_SETS: Record<string, { args: string[]; values: any }> = {
  default: { args: [...EXPLICIT_AUTH], values: {} },
  embedded: {
    args: [...EXPLICIT_AUTH, '--set', 'database.embedded=true', '--set', 'database.persistence.size=2Gi', '--set', 'networkPolicy.enabled=true', '--set', 'metrics.serviceMonitor.enabled=true'],
    values: { database: { embedded: true } },
  },
  'embedded, auth off': {
    args: ['--set', 'database.embedded=true', '--set', 'auth.enabled=false', '--set', 'controller.enabled=false', '--set', 'metrics.port=0'],
    values: { auth: { enabled: false } },
  },
  'external, chart-made secrets': {
    args: [
      ...EXPLICIT_AUTH,
      '--set', 'database.embedded=false',
      '--set', 'database.url=mysql://conveyor:s3cret@mysql.db.svc:3306/conveyor',
      '--set', 'redis.url=redis://redis.db.svc:6379',
      '--set', 'api.replicaCount=2',
      '--set', 'controller.watchNamespaces={team-a}',
    ],
    values: { controller: { watchNamespaces: ['team-a'] } },
  },
  production: { args: ['-f', PRODUCTION_VALUES], values: productionValues },
  'tls via cert-manager, mutual': {
    args: [
      ...EXPLICIT_AUTH,
      '--set', 'tls.enabled=true', '--set', 'tls.clientCA=true',
      '--set', 'tls.certManager.issuerRef.name=internal-ca', '--set', 'tls.certManager.issuerRef.kind=ClusterIssuer',
      '--set', 'tls.certManager.extraDnsNames={conveyor.example.com}', '--set', 'tls.certManager.duration=2160h',
      '--set', 'metrics.serviceMonitor.enabled=true', '--set', 'networkPolicy.enabled=true',
    ],
    values: { tls: { enabled: true, clientCA: true } },
  },
  'tls via existingSecret': {
    args: [
      ...EXPLICIT_AUTH,
      '--set', 'database.embedded=false', '--set', 'database.url=mysql://conveyor:s3cret@mysql.db.svc:3306/conveyor',
      '--set', 'tls.enabled=true', '--set', 'tls.existingSecret=conveyor-serving-cert',
    ],
    values: { tls: { enabled: true, existingSecret: 'conveyor-serving-cert' } },
  },
  // Credentials for programs (docs/auth.md): ServiceAccount tokens, and access keys under a key from an existing Secret.
  'workload identity and access keys': {
    args: [
      ...EXPLICIT_AUTH,
      '--set', 'database.embedded=false', '--set', 'database.url=mysql://conveyor:s3cret@mysql.db.svc:3306/conveyor',
      '--set', 'auth.kubernetes.enabled=true', '--set', 'auth.kubernetes.jwksUrl=https://kubernetes.default.svc/openid/v1/jwks',
      '--set', 'auth.credentialsKey.existingSecret=conveyor-credentials', '--set', 'auth.credentialsKey.previousKey=previous-credentials-key',
    ],
    values: {
      database: { embedded: false },
      auth: { kubernetes: { enabled: true }, credentialsKey: { existingSecret: 'conveyor-credentials', previousKey: 'previous-credentials-key' } },
    },
  },
  // An IPv6-only cluster: the listen addresses are the user's (the API and the controller sidecar).
  'IPv6 listen addresses': {
    args: [...EXPLICIT_AUTH, '--set', 'config.server.host=::', '--set', 'config.controller.host=::'],
    values: { config: { server: { host: '::' }, controller: { host: '::' } } },
  },
};

const rendered: Record<string, K8sObject[]> = {};

beforeAll(async () => {
  await Promise.all(
    Object.entries(VALUE_SETS).map(async ([name, set]) => {
      rendered[name] = (await helmTemplate(set.args)).objects;
    }),
  );
}, 120_000);

// ---------------------------------------------------------------------------------------------------------------
// Small accessors

const all = (set: string) => rendered[set];
const ofKind = (set: string, kind: string) => all(set).filter((o) => o.kind === kind);
const named = (set: string, kind: string, name: string) => {
  const found = all(set).find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`${set}: no ${kind}/${name}`);
  return found;
};

interface Workload {
  obj: K8sObject;
  podSpec: any;
  podLabels: Record<string, string>;
}

/**
 * The delete-reaper CronJob the controller creates, as the chart hands it over (the ConfigMap key its
 * controller.delete_reaper_cronjob_template names), or undefined when the controller creates none.
 */
function controllerCronJob(objects: K8sObject[]): K8sObject | undefined {
  const text = objects.find((o) => o.kind === 'ConfigMap' && o.data?.['delete-reaper-cronjob.yaml'])?.data['delete-reaper-cronjob.yaml'];
  return text ? parseYaml(text) : undefined;
}

/** Every pod template the chart renders (Deployments, StatefulSets, CronJobs, Jobs, Pods), and the controller's CronJob. */
function workloads(set: string): Workload[] {
  const cronJob = controllerCronJob(all(set));
  return [...all(set), ...(cronJob ? [cronJob] : [])].flatMap((obj): Workload[] => {
    if (obj.kind === 'Deployment' || obj.kind === 'StatefulSet' || obj.kind === 'Job')
      return [{ obj, podSpec: obj.spec.template.spec, podLabels: obj.spec.template.metadata?.labels ?? {} }];
    if (obj.kind === 'CronJob') return [{ obj, podSpec: obj.spec.jobTemplate.spec.template.spec, podLabels: obj.spec.jobTemplate.spec.template.metadata?.labels ?? {} }];
    if (obj.kind === 'Pod') return [{ obj, podSpec: obj.spec, podLabels: obj.metadata.labels ?? {} }];
    return [];
  });
}

const isConveyorContainer = (c: any) => !c.command && Array.isArray(c.args) && ['serve', 'controller', 'migrate', 'reap'].includes(c.args[0]);

function conveyorContainers(set: string) {
  return workloads(set).flatMap((w) => [...(w.podSpec.initContainers ?? []), ...w.podSpec.containers].filter(isConveyorContainer).map((container: any) => ({ ...w, container })));
}

const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);

/** Which Secret names the values point at that the chart does not create. */
function existingSecrets(values: any): Map<string, Set<string>> {
  const map = new Map<string, Set<string>>();
  const add = (name: string | undefined, ...keys: string[]) => {
    if (!name) return;
    map.set(name, new Set([...(map.get(name) ?? []), ...keys]));
  };
  add(values.database?.existingSecret, values.database?.existingSecretKey ?? 'url');
  add(values.redis?.existingSecret, values.redis?.existingSecretKey ?? 'url');
  add(values.auth?.existingSecret, values.auth?.jwtSecretKey ?? 'jwt-secret', values.auth?.adminPasswordKey ?? 'admin-password');
  const credentials = values.auth?.credentialsKey;
  add(credentials?.existingSecret, credentials?.key ?? 'credentials-key', ...(credentials?.previousKey ? [credentials.previousKey] : []));
  return map;
}

/** Stand-ins for the contents of existing Secrets, per variable they feed. */
const DUMMY: Record<string, string> = {
  CONVEYOR_DB_URL: 'mysql://conveyor:dummy@mysql.db.svc:3306/conveyor',
  CONVEYOR_REDIS_URL: 'redis://redis.db.svc:6379',
  CONVEYOR_AUTH_JWT_SECRET: 'a-dummy-jwt-secret-of-at-least-32-bytes-long',
  CONVEYOR_AUTH_PASSWORD: 'dummy-admin-password',
  ADMIN_PASSWORD: 'dummy-admin-password',
  CONVEYOR_AUTH_CREDENTIALS_KEY: Buffer.alloc(32, 1).toString('base64'),
  CONVEYOR_AUTH_PREVIOUS_CREDENTIALS_KEY: Buffer.alloc(32, 2).toString('base64'),
};

/** A container's environment as the kubelet would build it, with Secrets resolved. */
function resolveEnv(set: string, container: any, namespace = NAMESPACE): Record<string, string> {
  const env: Record<string, string> = {};
  const existing = existingSecrets(VALUE_SETS[set].values);
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = String(e.value);
    else if (e.valueFrom?.secretKeyRef) {
      const { name, key } = e.valueFrom.secretKeyRef;
      const secret = all(set).find((o) => o.kind === 'Secret' && o.metadata.name === name);
      if (secret) {
        expect(secret.data?.[key], `Secret ${name} has no key ${key}`).toBeDefined();
        env[e.name] = Buffer.from(secret.data[key], 'base64').toString('utf8');
      } else {
        expect(existing.get(name)?.has(key), `${e.name} reads ${name}/${key}, neither rendered nor an existingSecret key from the values`).toBe(true);
        expect(DUMMY[e.name], `no stand-in value for ${e.name}`).toBeDefined();
        env[e.name] = DUMMY[e.name];
      }
    } else if (e.valueFrom?.fieldRef) {
      const path = e.valueFrom.fieldRef.fieldPath;
      expect(['metadata.namespace', 'metadata.name']).toContain(path);
      env[e.name] = path === 'metadata.namespace' ? namespace : 'conveyor-controller-5d8f7c9b4-x2kqz';
    } else throw new Error(`unsupported env source in ${container.name}: ${JSON.stringify(e)}`);
  }
  return env;
}

/** The configuration a conveyor container ends up with: its conveyor.yaml (from the mounted ConfigMap) plus its env. */
function containerConfig(set: string, w: Workload & { container: any }): { config: Config; env: Record<string, string> } {
  const env = resolveEnv(set, w.container);
  const dir = mkdtempSync(join(tmpdir(), 'conveyor-chart-config-'));
  try {
    let configPath = join(dir, 'empty.yaml');
    writeFileSync(configPath, '');
    if (env.CONVEYOR_CONFIG) {
      const mount = (w.container.volumeMounts ?? []).find((m: any) => env.CONVEYOR_CONFIG.startsWith(`${m.mountPath}/`));
      expect(mount, `${w.container.name}: CONVEYOR_CONFIG ${env.CONVEYOR_CONFIG} is on no mounted volume`).toBeDefined();
      const volume = w.podSpec.volumes.find((v: any) => v.name === mount.name);
      expect(volume?.configMap, `${w.container.name}: volume ${mount.name} is not a ConfigMap`).toBeDefined();
      const configMap = named(set, 'ConfigMap', volume.configMap.name);
      const file = posix.relative(mount.mountPath, env.CONVEYOR_CONFIG);
      expect(configMap.data?.[file], `ConfigMap ${configMap.metadata.name} has no ${file}`).toBeDefined();
      configPath = join(dir, 'conveyor.yaml');
      writeFileSync(configPath, configMap.data[file]);
    }
    // loadConfig: the service's own file + CONVEYOR_* overlay, then validateConfig (throws ConfigError on anything the service refuses).
    return { config: loadConfig({ configPath, env }), env };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------------

describe('chart metadata and copies', () => {
  it('Chart.yaml: apiVersion v2, appVersion = package.json version, kubeVersion >= 1.25', () => {
    const chart = parseYaml(readFileSync(join(CHART, 'Chart.yaml'), 'utf8'));
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    expect(chart.apiVersion).toBe('v2');
    expect(chart.name).toBe('conveyor');
    expect(chart.appVersion).toBe(pkg.version);
    expect(chart.kubeVersion).toBe('>=1.25.0-0');
  });

  it('charts/conveyor/crds/ holds byte-identical copies of crds/', () => {
    const source = readdirSync(join(ROOT, 'crds')).sort();
    expect(source.length).toBeGreaterThan(0);
    expect(readdirSync(join(CHART, 'crds')).sort()).toEqual(source);
    for (const file of source) {
      expect(readFileSync(join(CHART, 'crds', file)).equals(readFileSync(join(ROOT, 'crds', file))), `charts/conveyor/crds/${file} differs from crds/${file}`).toBe(true);
    }
  });

  it('the CRDs are valid CustomResourceDefinitions', () => {
    for (const file of readdirSync(join(CHART, 'crds'))) {
      for (const crd of parseManifests(readFileSync(join(CHART, 'crds', file), 'utf8'))) expect(validateObject(crd), file).toEqual([]);
    }
  });

  it('files/ holds a byte-identical copy of the Grafana dashboard', () => {
    const pairs = [['files/conveyor-dashboard.json', 'deploy/grafana/conveyor-dashboard.json']];
    for (const [copy, source] of pairs) {
      expect(readFileSync(join(CHART, copy)).equals(readFileSync(join(ROOT, source))), `charts/conveyor/${copy} differs from ${source}: copy it again`).toBe(true);
    }
  });

  it('the chart runs as the image\'s user (Dockerfile USER)', () => {
    const user = /^USER\s+(\d+):(\d+)\s*$/m.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
    expect(user).not.toBeNull();
    expect(chartValues.podSecurityContext.runAsUser).toBe(Number(user![1]));
    expect(chartValues.podSecurityContext.runAsGroup).toBe(Number(user![2]));
    expect(chartValues.containerSecurityContext.runAsUser).toBe(Number(user![1]));
  });
});

describe('helm lint --strict', () => {
  it.each(Object.keys(VALUE_SETS))('%s values', async (name) => {
    const result = await helm(['lint', '--strict', CHART, '--namespace', NAMESPACE, ...VALUE_SETS[name].args]);
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(result.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    // helm lint does not stop at `fail`: it logs it. No template may fail under lint either.
    expect(result.stderr).not.toMatch(/funcMap fail/);
  });
});

describe.each(Object.keys(VALUE_SETS))('rendered with %s values', (set) => {
  it('every object is valid for its kind (kubernetes-models, no unknown fields; ajv for monitoring.coreos.com)', () => {
    expect(all(set).length).toBeGreaterThan(5);
    const problems = all(set).flatMap(validateObject);
    expect(problems).toEqual([]);
    // Names are unique per kind and namespace.
    const keys = all(set).map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`);
    expect(keys.length).toBe(new Set(keys).size);
    for (const o of all(set)) {
      expect(o.metadata.labels?.['app.kubernetes.io/name'], `${o.kind}/${o.metadata.name}`).toBe('conveyor');
      expect(o.metadata.labels?.['app.kubernetes.io/instance']).toBe('conveyor');
      expect(o.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('Helm');
      expect(o.metadata.labels?.['helm.sh/chart']).toMatch(/^conveyor-\d/);
      if (!['ClusterRole', 'ClusterRoleBinding'].includes(o.kind)) expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toBeDefined();
    }
  });

  it('every pod is locked down: non-root numeric user, read-only root, no privilege escalation, ALL capabilities dropped, RuntimeDefault seccomp, /tmp emptyDir', () => {
    const ws = workloads(set);
    expect(ws.length).toBeGreaterThan(0);
    for (const w of ws) {
      const where = `${w.obj.kind}/${w.obj.metadata.name}`;
      expect(w.podSpec.securityContext, where).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } });
      for (const c of [...(w.podSpec.initContainers ?? []), ...w.podSpec.containers]) {
        expect(c.securityContext, `${where} ${c.name}`).toMatchObject({
          runAsNonRoot: true,
          runAsUser: 10001,
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          privileged: false,
          capabilities: { drop: ['ALL'] },
          seccompProfile: { type: 'RuntimeDefault' },
        });
        const tmp = (c.volumeMounts ?? []).find((m: any) => m.mountPath === '/tmp');
        expect(tmp, `${where} ${c.name} has no /tmp`).toBeDefined();
        expect(w.podSpec.volumes.find((v: any) => v.name === tmp.name)?.emptyDir, `${where} /tmp is not an emptyDir`).toBeDefined();
        expect(c.resources?.requests?.memory, `${where} ${c.name} memory request`).toBeDefined();
        expect(c.resources?.limits?.memory, `${where} ${c.name} memory limit`).toBeDefined();
        expect(c.image).toMatch(/conveyor/);
      }
      // Only the controller talks to the Kubernetes API: only its container holds a token, also when it is the
      // API pod's sidecar (the pod runs as its account, but the token is mounted into its container alone). The
      // exception: with auth.kubernetes.enabled the API reads the service-account issuer's keys with a token of
      // its own account (never the controller's: not as a sidecar).
      const issuerToken = VALUE_SETS[set].values.auth?.kubernetes?.enabled === true && VALUE_SETS[set].values.database?.embedded === false;
      const tokenVolumes = new Set((w.podSpec.volumes ?? []).filter((v: any) => v.projected?.sources?.some((s: any) => s.serviceAccountToken)).map((v: any) => v.name));
      for (const c of w.podSpec.containers) {
        const mounted = (c.volumeMounts ?? []).find((m: any) => tokenVolumes.has(m.name));
        const hasToken = w.podSpec.automountServiceAccountToken === true || mounted?.mountPath === '/var/run/secrets/kubernetes.io/serviceaccount';
        expect(hasToken, `${where} ${c.name} holds a Kubernetes token`).toBe(c.args?.[0] === 'controller' || (issuerToken && c.args?.[0] === 'serve'));
        if (hasToken && c.args?.[0] === 'serve') expect(w.podSpec.serviceAccountName, where).not.toMatch(/controller/);
      }
    }
  });

  it('conveyor containers keep the image ENTRYPOINT (tini, --max-semi-space-size=64) and pass only the command as args', () => {
    for (const { obj, container } of conveyorContainers(set)) {
      expect(container.command, `${obj.kind}/${obj.metadata.name} ${container.name}`).toBeUndefined();
    }
    // The only other container is the helm test pod, running node on an inline script.
    const others = workloads(set).flatMap((w) => w.podSpec.containers.filter((c: any) => !isConveyorContainer(c)).map((c: any) => `${w.obj.kind}/${c.name}`));
    expect(others).toEqual(ofKind(set, 'Pod').length ? ['Pod/roundtrip'] : []);
  });

  it('the configuration each conveyor process gets is one the service accepts, and fits the pod around it', () => {
    const byRole = new Map<string, Config[]>();
    for (const w of conveyorContainers(set)) {
      const where = `${w.obj.kind}/${w.obj.metadata.name} ${w.container.name}`;
      let result: { config: Config; env: Record<string, string> };
      try {
        result = containerConfig(set, w);
      } catch (err) {
        throw new Error(`${where}: ${(err as Error).message}`);
      }
      const { config } = result;
      const role = w.container.args[0] as string;
      byRole.set(role, [...(byRole.get(role) ?? []), config]);
      const ports = Object.fromEntries((w.container.ports ?? []).map((p: any) => [p.name, p.containerPort]));
      if (config.db.url.startsWith('sqlite:')) {
        // The file lives on the data volume (the root filesystem is read-only).
        expect(config.db.url, where).toBe('sqlite:/data/conveyor.db');
        expect(w.container.volumeMounts.some((m: any) => m.mountPath === '/data' && m.name === 'data'), `${where} mounts no /data`).toBe(true);
      } else expect(config.db.url, where).toMatch(/^mysql:\/\//);
      if (role === 'serve') {
        expect(config.server.http_port).toBe(ports.http);
        expect(config.server.grpc_port).toBe(ports.grpc);
        // config.server.host as the values give it (the chart's default: 0.0.0.0, the service's).
        expect(config.server.host, where).toBe(VALUE_SETS[set].values.config?.server?.host ?? '0.0.0.0');
        expect(config.metrics.port).toBe(ports.metrics ?? 0);
        expect(Boolean(config.server.tls_cert_file), where).toBe(Boolean(VALUE_SETS[set].values.tls?.enabled));
        for (const file of [config.server.tls_cert_file, config.server.tls_key_file, config.server.tls_client_ca_file].filter(Boolean)) {
          // On a read-only Secret volume mounted whole (a subPath mount would never see a renewal).
          const mount = (w.container.volumeMounts ?? []).find((m: any) => file.startsWith(`${m.mountPath}/`));
          expect(mount, `${where}: ${file} is on no mounted volume`).toMatchObject({ readOnly: true });
          expect(mount.subPath, where).toBeUndefined();
          expect(w.podSpec.volumes.find((v: any) => v.name === mount.name)?.secret?.secretName, `${where}: ${file} is not on a Secret volume`).toBeDefined();
        }
        if (config.auth.enabled) {
          expect(Buffer.byteLength(config.auth.jwt_secret)).toBeGreaterThanOrEqual(32);
          expect(config.auth.username).not.toBe('');
          expect(config.auth.password).not.toBe('');
        }
        const cronJobs = ofKind(set, 'CronJob');
        expect(config.reapers.mode).toBe(cronJobs.length > 0 ? 'external' : 'in-process');
        // SIGTERM handling: Kubernetes counts the grace period from the start of the preStop sleep, so it must
        // outlast the sleep plus the service's own shutdown timeout.
        const preStopSleep = Number(w.container.lifecycle?.preStop?.exec?.command?.[1] ?? 0);
        expect(w.podSpec.terminationGracePeriodSeconds, where).toBeGreaterThan(preStopSleep + config.server.shutdown_timeout);
      }
      if (role === 'controller') {
        expect(config.controller.port).toBe(ports.controller);
        expect(config.controller.namespace).toBe(NAMESPACE);
        expect(config.controller.host, where).toBe(VALUE_SETS[set].values.config?.controller?.host ?? '0.0.0.0');
        // The delete CronJob is the controller's to create (from the template in the ConfigMap), never rendered.
        const deleteJob = controllerCronJob(all(set));
        expect(config.controller.delete_reaper_cronjob).toBe(deleteJob?.metadata.name ?? '');
        expect(ofKind(set, 'CronJob').filter((c) => c.metadata.name.endsWith('-reap-delete'))).toEqual([]);
        if (deleteJob) {
          // The template is a file of the ConfigMap the controller mounts.
          const file = config.controller.delete_reaper_cronjob_template;
          const mount = w.container.volumeMounts.find((m: any) => file.startsWith(`${m.mountPath}/`));
          const volume = w.podSpec.volumes.find((v: any) => v.name === mount?.name);
          expect(named(set, 'ConfigMap', volume?.configMap?.name).data[posix.relative(mount.mountPath, file)], where).toBeDefined();
          expect(deleteJob.metadata.namespace).toBe(config.controller.namespace);
          expect(deleteJob.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('conveyor-controller');
          expect(validateObject(deleteJob)).toEqual([]);
          // The schedule the controller falls back to (nothing stored yet) is the one the chart starts the CronJob with.
          expect(config.queue.delete_reaper_schedule).toBe(deleteJob.spec.schedule);
          // Its own pod, from the downward API: the way to its Deployment, the CronJob's owner.
          const fieldRefs = Object.fromEntries(w.container.env.filter((e: any) => e.valueFrom?.fieldRef).map((e: any) => [e.name, e.valueFrom.fieldRef.fieldPath]));
          expect(fieldRefs).toMatchObject({ POD_NAME: 'metadata.name', POD_NAMESPACE: 'metadata.namespace' });
        } else expect(config.controller.delete_reaper_cronjob_template).toBe('');
        const watched = config.controller.namespaces.split(',').filter(Boolean);
        expect(watched).toEqual(VALUE_SETS[set].values.controller?.watchNamespaces ?? []);
        // Scoped to the release: it reconciles only resources labelled conveyor.dev/instance=<release>.
        expect(config.controller.instance).toBe('conveyor');
      }
      if (role === 'reap') expect(['expiry', 'delete', 'archive']).toContain(w.container.args[1]);
    }
    // Every process of a release talks to the same database.
    const urls = new Set([...byRole.values()].flat().map((c) => c.db.url));
    expect(urls.size).toBe(1);
    expect(byRole.has('serve')).toBe(true);
  });

  it('every secretKeyRef names a Secret that is rendered (with that key) or an existingSecret from the values (with its key)', () => {
    const existing = existingSecrets(VALUE_SETS[set].values);
    const refs = workloads(set).flatMap((w) =>
      [...(w.podSpec.initContainers ?? []), ...w.podSpec.containers].flatMap((c: any) => (c.env ?? []).filter((e: any) => e.valueFrom?.secretKeyRef).map((e: any) => ({ w, e }))),
    );
    for (const { w, e } of refs) {
      const { name, key } = e.valueFrom.secretKeyRef;
      const secret = all(set).find((o) => o.kind === 'Secret' && o.metadata.name === name);
      const where = `${w.obj.kind}/${w.obj.metadata.name} ${e.name}`;
      if (secret) {
        expect(Object.keys(secret.data ?? {}), where).toContain(key);
        // A pre-install hook reads only Secrets that exist before it runs: hooks of a lower weight, or existing
        // Secrets. (The `helm test` hook runs after the release and may read its Secrets.)
        const hook = w.obj.metadata.annotations?.['helm.sh/hook'];
        if (hook && hook !== 'test') {
          expect(secret.metadata.annotations?.['helm.sh/hook'], `${where}: hook reads the non-hook Secret ${name}`).toBe(hook);
          expect(Number(secret.metadata.annotations!['helm.sh/hook-weight'])).toBeLessThan(Number(w.obj.metadata.annotations!['helm.sh/hook-weight'] ?? 0));
        }
      } else {
        expect(existing.get(name)?.has(key), `${where}: ${name}/${key} is neither rendered nor an existingSecret from the values`).toBe(true);
      }
    }
    // An existingSecret means the chart renders no Secret of that name.
    for (const name of existing.keys()) expect(all(set).some((o) => o.kind === 'Secret' && o.metadata.name === name)).toBe(false);
  });

  it('probes: API /healthz (startup, liveness) and /readyz (readiness); controller /healthz and /readyz on its port', () => {
    for (const { obj, container } of conveyorContainers(set)) {
      const where = `${obj.kind}/${obj.metadata.name} ${container.name}`;
      const portNames = (container.ports ?? []).map((p: any) => p.name);
      if (container.args[0] === 'serve') {
        // TLS: HTTPS on the API port; mutual TLS: the plaintext metrics port (the kubelet has no client certificate).
        const tls = VALUE_SETS[set].values.tls;
        const target = !tls?.enabled ? { port: 'http' } : tls.clientCA ? { port: 'metrics' } : { port: 'http', scheme: 'HTTPS' };
        expect(container.livenessProbe?.httpGet, where).toEqual({ path: '/healthz', ...target });
        expect(container.readinessProbe?.httpGet, where).toEqual({ path: '/readyz', ...target });
        expect(container.startupProbe?.httpGet, where).toEqual({ path: '/healthz', ...target });
        expect(portNames, where).toContain(target.port);
        // The start-up probe allows migrations at start-up a while before liveness takes over.
        expect(container.startupProbe.periodSeconds * container.startupProbe.failureThreshold).toBeGreaterThanOrEqual(120);
        expect(portNames).toEqual(expect.arrayContaining(['http', 'grpc']));
      }
      if (container.args[0] === 'controller') {
        expect(container.livenessProbe?.httpGet, where).toEqual({ path: '/healthz', port: 'controller' });
        const sidecar = obj.kind === 'StatefulSet';
        if (sidecar) expect(container.readinessProbe, `${where}: a sidecar's readiness would take the API out of its Service`).toBeUndefined();
        else expect(container.readinessProbe?.httpGet, where).toEqual({ path: '/readyz', port: 'controller' });
        expect(portNames).toContain('controller');
      }
      if (['migrate', 'reap'].includes(container.args[0])) {
        expect(container.livenessProbe).toBeUndefined();
        expect(container.ports).toBeUndefined();
      }
    }
  });

  it('Services, PDB, HPA, NetworkPolicies and ServiceMonitors select the right pods and ports', () => {
    const pods = workloads(set);
    for (const svc of ofKind(set, 'Service')) {
      const selected = pods.filter((w) => matches(svc.spec.selector, w.podLabels));
      expect(selected.length, `Service ${svc.metadata.name} selects nothing`).toBeGreaterThan(0);
      for (const w of selected) {
        // A Service selects long-running pods only, never Jobs or the test pod.
        expect(['Deployment', 'StatefulSet'], `Service ${svc.metadata.name} selects ${w.obj.kind}/${w.obj.metadata.name}`).toContain(w.obj.kind);
        const ports = w.podSpec.containers.flatMap((c: any) => c.ports ?? []).map((p: any) => p.name);
        for (const p of svc.spec.ports) expect(ports, `Service ${svc.metadata.name} port ${p.name}`).toContain(p.targetPort);
      }
    }
    for (const workload of all(set).filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet')) {
      expect(matches(workload.spec.selector.matchLabels, workload.spec.template.metadata.labels), `${workload.kind}/${workload.metadata.name}`).toBe(true);
      // No other workload's pods fall under its selector.
      const others = pods.filter((w) => w.obj !== workload && matches(workload.spec.selector.matchLabels, w.podLabels));
      expect(others.map((w) => w.obj.metadata.name)).toEqual([]);
    }
    const api = all(set).find((o) => (o.kind === 'Deployment' || o.kind === 'StatefulSet') && o.metadata.labels?.['app.kubernetes.io/component'] === 'server')!;
    expect(api).toBeDefined();
    // The API's budget and, with several controller replicas, the controller's: each covers its own workload.
    const controller = all(set).find((o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === 'controller');
    for (const pdb of ofKind(set, 'PodDisruptionBudget')) {
      const own = pdb.metadata.labels?.['app.kubernetes.io/component'] === 'controller' ? controller : api;
      expect(pdb.spec.selector.matchLabels, pdb.metadata.name).toEqual(own?.spec.selector.matchLabels);
    }
    for (const hpa of ofKind(set, 'HorizontalPodAutoscaler')) {
      expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: api.kind, name: api.metadata.name });
      expect(api.kind).toBe('Deployment');
      expect(api.spec.replicas, 'replicas is left to the HPA').toBeUndefined();
    }
    for (const np of ofKind(set, 'NetworkPolicy')) {
      const selected = pods.filter((w) => matches(np.spec.podSelector.matchLabels, w.podLabels));
      expect(selected.length, `NetworkPolicy ${np.metadata.name}`).toBeGreaterThan(0);
      const ports = new Set(selected.flatMap((w) => w.podSpec.containers.flatMap((c: any) => c.ports ?? []).map((p: any) => p.name)));
      for (const rule of np.spec.ingress) for (const p of rule.ports) expect(ports, `NetworkPolicy ${np.metadata.name} port ${p.port}`).toContain(p.port);
    }
    for (const sm of ofKind(set, 'ServiceMonitor')) {
      const services = ofKind(set, 'Service').filter((s) => matches(sm.spec.selector.matchLabels, s.metadata.labels ?? {}));
      expect(services.length, `ServiceMonitor ${sm.metadata.name}`).toBe(1);
      for (const ep of sm.spec.endpoints) expect(services[0].spec.ports.map((p: any) => p.name)).toContain(ep.port);
      // The job label the alert rules expect comes from the Service.
      expect(services[0].metadata.labels?.[sm.spec.jobLabel]).toMatch(/^conveyor(-controller)?$/);
      expect(sm.spec.namespaceSelector.matchNames).toEqual([NAMESPACE]);
    }
  });

  it('the controller\'s RBAC is exactly what it needs', () => {
    const controllerOn = conveyorContainers(set).some((w) => w.container.args[0] === 'controller');
    // The ClusterRoles aggregated to the built-in roles are the users', not the controller's (test/chart-instances.test.ts).
    const aggregated = (o: K8sObject) => Object.keys(o.metadata.labels ?? {}).some((l) => l.startsWith('rbac.authorization.k8s.io/aggregate-to-'));
    const rbac = all(set).filter((o) => o.apiVersion === 'rbac.authorization.k8s.io/v1' && !aggregated(o));
    if (!controllerOn) {
      expect(rbac).toEqual([]);
      return;
    }
    const controller = conveyorContainers(set).find((w) => w.container.args[0] === 'controller')!;
    const sa = controller.podSpec.serviceAccountName;
    expect(all(set).some((o) => o.kind === 'ServiceAccount' && o.metadata.name === sa)).toBe(true);
    const { config } = containerConfig(set, controller);
    const watchRules = [
      { apiGroups: ['conveyor.dev'], resources: ['topicconfigs', 'topicschemas', 'consumergroups', 'conveyoraccesses'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
      { apiGroups: ['conveyor.dev'], resources: ['topicconfigs/status', 'topicschemas/status', 'consumergroups/status', 'conveyoraccesses/status'], verbs: ['get', 'update', 'patch'] },
      { apiGroups: ['conveyor.dev'], resources: ['topicconfigs/finalizers', 'topicschemas/finalizers', 'consumergroups/finalizers', 'conveyoraccesses/finalizers'], verbs: ['update'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    ];
    const ownRules: object[] = [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [`${config.controller.lease_name}-${config.controller.instance}`], verbs: ['get', 'update'] },
    ];
    if (config.controller.delete_reaper_cronjob) {
      const deployment = controller.obj.metadata.name;
      expect(controller.obj.kind).toBe('Deployment');
      ownRules.push(
        // It creates the CronJob, then reads and puts back only that one.
        { apiGroups: ['batch'], resources: ['cronjobs'], verbs: ['create'] },
        { apiGroups: ['batch'], resources: ['cronjobs'], resourceNames: [config.controller.delete_reaper_cronjob], verbs: ['get', 'update'] },
        // Its owner: pod -> ReplicaSet -> its Deployment; blockOwnerDeletion needs the Deployment's finalizers.
        { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
        { apiGroups: ['apps'], resources: ['replicasets'], verbs: ['get'] },
        { apiGroups: ['apps'], resources: ['deployments'], resourceNames: [deployment], verbs: ['get'] },
        { apiGroups: ['apps'], resources: ['deployments/finalizers'], resourceNames: [deployment], verbs: ['update'] },
      );
    }
    const bindingsOf = (kind: 'Role' | 'ClusterRole', role: K8sObject) =>
      rbac.filter((b) => b.kind === (kind === 'Role' ? 'RoleBinding' : 'ClusterRoleBinding') && b.roleRef.kind === kind && b.roleRef.name === role.metadata.name && b.metadata.namespace === role.metadata.namespace);
    const boundToController = (role: K8sObject, kind: 'Role' | 'ClusterRole') => {
      const bindings = bindingsOf(kind, role);
      expect(bindings, `${kind} ${role.metadata.name}`).toHaveLength(1);
      expect(bindings[0].roleRef.apiGroup).toBe('rbac.authorization.k8s.io');
      expect(bindings[0].subjects).toEqual([{ kind: 'ServiceAccount', name: sa, namespace: NAMESPACE }]);
    };
    const watched = config.controller.namespaces.split(',').filter(Boolean);
    const clusterRoles = rbac.filter((o) => o.kind === 'ClusterRole');
    const roles = rbac.filter((o) => o.kind === 'Role');
    if (watched.length === 0) {
      expect(clusterRoles).toHaveLength(1);
      expect(clusterRoles[0].rules).toEqual(watchRules);
      boundToController(clusterRoles[0], 'ClusterRole');
    } else {
      expect(clusterRoles).toEqual([]);
      expect(rbac.filter((o) => o.kind === 'ClusterRoleBinding')).toEqual([]);
      for (const ns of watched) {
        const role = roles.filter((r) => r.metadata.namespace === ns && JSON.stringify(r.rules) === JSON.stringify(watchRules));
        expect(role, `watch Role in ${ns}`).toHaveLength(1);
        boundToController(role[0], 'Role');
      }
    }
    const own = roles.filter((r) => r.metadata.namespace === config.controller.namespace && JSON.stringify(r.rules) !== JSON.stringify(watchRules));
    expect(own).toHaveLength(1);
    expect(own[0].rules).toEqual(ownRules);
    boundToController(own[0], 'Role');
    // Nothing else: one Role per watched namespace plus the own-namespace Role, and their bindings.
    expect(roles.length).toBe(watched.length + 1);
    expect(rbac.length).toBe(2 * (roles.length + clusterRoles.length));
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('default install (embedded database)', () => {
  it('is one StatefulSet pod: API + controller sidecar + migrate init container on a PVC; in-process reapers, no hook Job, no CronJobs', () => {
    for (const set of ['default', 'embedded']) {
      const sts = ofKind(set, 'StatefulSet');
      expect(sts).toHaveLength(1);
      expect(ofKind(set, 'Deployment')).toEqual([]);
      expect(ofKind(set, 'CronJob')).toEqual([]);
      expect(ofKind(set, 'Job')).toEqual([]);
      expect(ofKind(set, 'HorizontalPodAutoscaler')).toEqual([]);
      const s = sts[0];
      expect(s.spec.replicas).toBe(1);
      expect(s.spec.template.spec.containers.map((c: any) => c.args[0])).toEqual(['serve', 'controller']);
      expect(s.spec.template.spec.initContainers.map((c: any) => c.args)).toEqual([['migrate']]);
      expect(s.spec.volumeClaimTemplates).toHaveLength(1);
      expect(s.spec.volumeClaimTemplates[0].metadata.name).toBe('data');
      expect(s.spec.volumeClaimTemplates[0].spec.accessModes).toEqual(['ReadWriteOnce']);
      // fsGroup makes the volume writable for user 10001.
      expect(s.spec.template.spec.securityContext.fsGroup).toBe(10001);
      expect(named(set, 'Service', s.spec.serviceName).spec.clusterIP).toBe('None');
    }
    expect(ofKind('embedded', 'StatefulSet')[0].spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe('2Gi');
  });

  it('auth is on by default; explicit values go into the auth Secret, which outlives helm uninstall', () => {
    const secret = named('default', 'Secret', 'conveyor-auth');
    expect(Buffer.from(secret.data['jwt-secret'], 'base64').toString()).toBe(EXPLICIT_AUTH[1].split('=')[1]);
    expect(Buffer.from(secret.data['admin-password'], 'base64').toString()).toBe(EXPLICIT_AUTH[3].split('=')[1]);
    expect(secret.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
    // Generated values (a render that can look up): test/chart-gitops.test.ts.
  });

  it('helm install --dry-run prints NOTES that tell how to reach the API and the metrics, where the admin UI is, how to read the password, and that embedded mode does not scale out', async () => {
    const result = await helm(['install', 'conveyor', CHART, '--dry-run=client', '--namespace', NAMESPACE, ...EXPLICIT_AUTH]);
    expect(result.code, result.stderr).toBe(0);
    const notes = result.stdout.slice(result.stdout.indexOf('NOTES:'));
    expect(notes).toMatch(/WARNING: embedded database/);
    expect(notes).toMatch(/does not scale out/);
    expect(notes).toMatch(/kubectl -n conveyor port-forward svc\/conveyor 8080:8080 50051:50051/);
    expect(notes).toMatch(/admin web UI is served by the same HTTP port: with the port-forward running, open http:\/\/localhost:8080\//);
    expect(notes).toContain("kubectl -n conveyor get secret conveyor-auth -o jsonpath='{.data.admin-password}' | base64 -d");
    expect(notes).toMatch(/\/metrics/);
    expect(notes).toMatch(/helm test conveyor -n conveyor/);
    const prod = await helm(['install', 'conveyor', CHART, '--dry-run=client', '--namespace', NAMESPACE, '-f', PRODUCTION_VALUES]);
    expect(prod.code, prod.stderr).toBe(0);
    const prodNotes = prod.stdout.slice(prod.stdout.indexOf('NOTES:'));
    expect(prodNotes).not.toMatch(/embedded database/);
    expect(prodNotes).toContain('https://conveyor.example.com/');
    expect(prodNotes).toContain("kubectl -n conveyor get secret conveyor-auth -o jsonpath='{.data.password}' | base64 -d");
  });
});

describe('production install (external MySQL, existing secrets)', () => {
  const set = 'production';

  it('API: a Deployment with RollingUpdate maxUnavailable 0, spread over zones and nodes, an HPA and a PDB', () => {
    const api = named(set, 'Deployment', 'conveyor');
    expect(api.spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    expect(api.spec.template.spec.topologySpreadConstraints.map((t: any) => [t.topologyKey, t.labelSelector.matchLabels])).toEqual([
      ['topology.kubernetes.io/zone', api.spec.selector.matchLabels],
      ['kubernetes.io/hostname', api.spec.selector.matchLabels],
    ]);
    expect(api.spec.template.spec.containers.map((c: any) => c.args)).toEqual([['serve']]);
    const hpa = named(set, 'HorizontalPodAutoscaler', 'conveyor');
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect([hpa.spec.minReplicas, hpa.spec.maxReplicas]).toEqual([3, 12]);
    expect(hpa.spec.metrics).toEqual([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 65 } } }]);
    expect(named(set, 'PodDisruptionBudget', 'conveyor').spec).toMatchObject({ minAvailable: 2 });
    expect(named(set, 'PodDisruptionBudget', 'conveyor').spec.maxUnavailable).toBeUndefined();
  });

  it('Service ports http 8080, grpc 50051 (appProtocol grpc), metrics 9090; Ingress to http', () => {
    const svc = named(set, 'Service', 'conveyor');
    expect(svc.spec.ports.map((p: any) => [p.name, p.port, p.targetPort, p.appProtocol])).toEqual([
      ['http', 8080, 'http', 'http'],
      ['grpc', 50051, 'grpc', 'grpc'],
      ['metrics', 9090, 'metrics', 'http'],
    ]);
    const ingress = named(set, 'Ingress', 'conveyor');
    expect(ingress.spec.ingressClassName).toBe('nginx');
    expect(ingress.spec.rules).toEqual([
      { host: 'conveyor.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'conveyor', port: { name: 'http' } } } }] } },
    ]);
    expect(ingress.spec.tls).toEqual([{ secretName: 'conveyor-tls', hosts: ['conveyor.example.com'] }]);
  });

  it('controller: 2 replicas with its own ServiceAccount and a metrics Service', () => {
    const controller = named(set, 'Deployment', 'conveyor-controller');
    expect(controller.spec.replicas).toBe(2);
    expect(controller.spec.template.spec.serviceAccountName).toBe('conveyor-controller');
    expect(named(set, 'Service', 'conveyor-controller').spec.ports).toEqual([{ name: 'metrics', port: 8081, targetPort: 'controller', protocol: 'TCP', appProtocol: 'http' }]);
    // The API pods have an account of their own, without the controller's rights.
    expect(named(set, 'Deployment', 'conveyor').spec.template.spec.serviceAccountName).toBe('conveyor');
  });

  it('reaper CronJobs run `reap <kind>` on the configured schedules with concurrencyPolicy Forbid (the delete one is the controller\'s)', () => {
    const cronJobs = [...ofKind(set, 'CronJob'), controllerCronJob(all(set))!];
    expect(cronJobs.map((c) => [c.metadata.name, c.spec.schedule, c.spec.concurrencyPolicy, c.spec.suspend, c.spec.timeZone])).toEqual([
      ['conveyor-reap-expiry', '* * * * *', 'Forbid', false, 'Etc/UTC'],
      ['conveyor-reap-archive', '15 * * * *', 'Forbid', false, 'Etc/UTC'],
      ['conveyor-reap-delete', '30 2 * * *', 'Forbid', false, 'Etc/UTC'],
    ]);
    for (const c of cronJobs) {
      const pod = c.spec.jobTemplate.spec.template.spec;
      expect(pod.restartPolicy).toBe('Never');
      expect(pod.containers.map((x: any) => x.args)).toEqual([['reap', c.metadata.name.replace('conveyor-reap-', '')]]);
    }
  });

  it('the migration hook Job runs `migrate` before install and upgrade, reading the existing database Secret', () => {
    const job = named(set, 'Job', 'conveyor-migrate');
    expect(job.metadata.annotations).toMatchObject({
      'helm.sh/hook': 'pre-install,pre-upgrade',
      'helm.sh/hook-weight': '0',
      'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
    });
    const container = job.spec.template.spec.containers[0];
    expect(container.args).toEqual(['migrate']);
    expect(container.env.find((e: any) => e.name === 'CONVEYOR_DB_URL').valueFrom.secretKeyRef).toEqual({ name: 'conveyor-db', key: 'url' });
    // It mounts nothing the release creates (hooks run before it): no ConfigMap, no ServiceAccount of the chart.
    expect(job.spec.template.spec.volumes.every((v: any) => !v.configMap)).toBe(true);
    expect(job.spec.template.spec.serviceAccountName).toBeUndefined();
    // No chart-made database Secret at all: the existing one is used everywhere.
    expect(all(set).filter((o) => o.kind === 'Secret')).toEqual([]);
  });

  it('monitoring: ServiceMonitors (job labels conveyor / conveyor-controller), the PrometheusRule with the alerts of the rules file, the dashboard ConfigMap', () => {
    expect(ofKind(set, 'ServiceMonitor').map((s) => [s.metadata.name, s.metadata.labels!.release, s.spec.endpoints[0].port])).toEqual([
      ['conveyor', 'kube-prometheus-stack', 'metrics'],
      ['conveyor-controller', 'kube-prometheus-stack', 'metrics'],
    ]);
    const rule = named(set, 'PrometheusRule', 'conveyor');
    // The rules themselves, per release: test/chart-monitoring.test.ts.
    const alerts = (groups: Array<{ rules: Array<{ alert: string }> }>) => groups.flatMap((g) => g.rules.map((r) => r.alert));
    expect(alerts(rule.spec.groups)).toEqual(alerts(parseYaml(readFileSync(join(ROOT, 'deploy', 'prometheus', 'conveyor-rules.yaml'), 'utf8')).groups));
    const dashboard = named(set, 'ConfigMap', 'conveyor-dashboard');
    expect(dashboard.metadata.labels!.grafana_dashboard).toBe('1');
    expect(dashboard.metadata.annotations!.grafana_folder).toBe('Conveyor');
    expect(dashboard.data['conveyor-dashboard.json']).toBe(readFileSync(join(ROOT, 'deploy', 'grafana', 'conveyor-dashboard.json'), 'utf8'));
  });

  it('NetworkPolicy: API ports only from client pods and the listed namespaces, metrics from monitoring', () => {
    const np = named(set, 'NetworkPolicy', 'conveyor');
    expect(np.spec.policyTypes).toEqual(['Ingress']);
    expect(np.spec.ingress[0].from).toEqual([
      { podSelector: { matchLabels: { 'conveyor-client': 'true' } } },
      ...productionValues.networkPolicy.extraIngress,
    ]);
    expect(np.spec.ingress[1]).toEqual({ ports: [{ port: 'metrics', protocol: 'TCP' }], from: productionValues.networkPolicy.metricsFrom });
    // The helm test pod is a client.
    expect(named(set, 'Pod', 'conveyor-test').metadata.labels!['conveyor-client']).toBe('true');
    expect(named(set, 'NetworkPolicy', 'conveyor-controller').spec.ingress).toEqual([{ ports: [{ port: 'controller', protocol: 'TCP' }], from: productionValues.networkPolicy.metricsFrom }]);
  });
});

describe('API pods: disruption budget and shutdown', () => {
  const apiPod = (objects: K8sObject[]) => objects.find((o) => (o.kind === 'Deployment' || o.kind === 'StatefulSet') && o.metadata.labels?.['app.kubernetes.io/component'] === 'server')!.spec.template.spec;
  const failing = async (args: string[]) => {
    const result = await helm(['template', 'conveyor', CHART, ...EXPLICIT_AUTH, ...args]);
    expect(result.code, result.stdout).not.toBe(0);
    return result.stderr;
  };

  it('pods roll when a secret value changes, and their annotation does not give the value away to a bare hash', async () => {
    const url = 'mysql://u:p@h:3306/db';
    const annotation = async (args: string[]) => {
      const { objects } = await helmTemplate([...EXPLICIT_AUTH, '--set', 'database.embedded=false', ...args]);
      const api = objects.find((o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === 'server')!;
      return api.spec.template.metadata.annotations['checksum/secret-values'];
    };
    const first = await annotation(['--set', `database.url=${url}`]);
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    expect(await annotation(['--set', `database.url=${url}`])).toBe(first);
    expect(await annotation(['--set', 'database.url=mysql://u:q@h:3306/db'])).not.toBe(first);
    expect(await annotation(['--set', `database.url=${url}`, '--set', 'auth.adminPassword=another-admin-password'])).not.toBe(first);
    const explicit = (key: string) => EXPLICIT_AUTH.find((a) => a.startsWith(`${key}=`))!.split('=')[1];
    const bare = createHash('sha256').update(JSON.stringify([url, '', true, explicit('auth.jwtSecret'), explicit('auth.adminPassword'), '', '', ''])).digest('hex');
    expect(first).not.toBe(bare);
  });

  it('the migration hook Job and the helm test pod take their own node selector, tolerations and affinity (tainted or dedicated nodes)', async () => {
    const toleration = { key: 'dedicated', operator: 'Equal', value: 'queue', effect: 'NoSchedule' };
    const affinity = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }] } } };
    const args = [...EXPLICIT_AUTH, '--set', 'database.embedded=false', '--set', 'database.url=mysql://conveyor:s3cret@mysql.db.svc:3306/conveyor'];
    for (const section of ['migrations', 'tests']) {
      args.push(
        '--set', `${section}.nodeSelector.pool=queue`,
        '--set-json', `${section}.tolerations=${JSON.stringify([toleration])}`,
        '--set-json', `${section}.affinity=${JSON.stringify(affinity)}`,
      );
    }
    const { objects } = await helmTemplate(args);
    const job = objects.find((o) => o.kind === 'Job')!.spec.template.spec;
    const test = objects.find((o) => o.kind === 'Pod')!.spec;
    for (const [what, spec] of [['Job', job], ['test pod', test]] as const) {
      expect({ nodeSelector: spec.nodeSelector, tolerations: spec.tolerations, affinity: spec.affinity }, what).toEqual({ nodeSelector: { pool: 'queue' }, tolerations: [toleration], affinity });
    }
    // Unset: none of them, in the default sets.
    for (const o of all('external, chart-made secrets').filter((o) => o.kind === 'Job' || o.kind === 'Pod')) {
      const spec = o.kind === 'Job' ? o.spec.template.spec : o.spec;
      expect([spec.nodeSelector, spec.tolerations, spec.affinity], o.kind).toEqual([undefined, undefined, undefined]);
    }
  });

  it('PodDisruptionBudget: maxUnavailable 0 stays 0 (not the default 1); a percentage passes; unset is maxUnavailable 1', async () => {
    const pdb = async (args: string[]) => (await helmTemplate([...EXPLICIT_AUTH, ...args])).objects.find((o) => o.kind === 'PodDisruptionBudget')!.spec;
    const zero = await pdb(['--set', 'api.podDisruptionBudget.maxUnavailable=0']);
    expect(zero.maxUnavailable).toBe(0);
    expect(zero.minAvailable).toBeUndefined();
    expect((await pdb(['--set', 'api.podDisruptionBudget.maxUnavailable=25%'])).maxUnavailable).toBe('25%');
    expect((await pdb(['--set', 'api.podDisruptionBudget.minAvailable=0'])).minAvailable).toBe(0);
    expect(named('default', 'PodDisruptionBudget', 'conveyor').spec).toMatchObject({ maxUnavailable: 1 });
  });

  it('the API container sleeps in a preStop exec hook (a binary of the Debian-based image) before SIGTERM, both workloads', () => {
    // The node image is Debian (coreutils' sleep is there); an Alpine or distroless base would need another hook.
    expect(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).toMatch(/^ARG NODE_IMAGE=node:\d+-(bookworm|trixie)(-slim)?$/m);
    for (const set of ['default', 'production']) {
      const pod = apiPod(all(set));
      const container = pod.containers.find((c: any) => c.args?.[0] === 'serve');
      expect(container.lifecycle, set).toEqual({ preStop: { exec: { command: ['sleep', '5'] } } });
      // Only the API: the controller sidecar has no connections to drain.
      for (const other of pod.containers.filter((c: any) => c !== container)) expect(other.lifecycle, `${set} ${other.name}`).toBeUndefined();
      // The sleep, the default shutdown_timeout (25 s) and 5 s to close the pool: 35.
      expect(pod.terminationGracePeriodSeconds, set).toBe(35);
    }
  });

  it('terminationGracePeriodSeconds follows api.preStopSleepSeconds and config.server.shutdown_timeout; a too small explicit value is refused', async () => {
    const grace = async (args: string[]) => {
      const pod = apiPod((await helmTemplate([...EXPLICIT_AUTH, ...args])).objects);
      return [pod.terminationGracePeriodSeconds, pod.containers[0].lifecycle?.preStop?.exec?.command];
    };
    expect(await grace(['--set', 'api.preStopSleepSeconds=10', '--set', 'config.server.shutdown_timeout=1.5m'])).toEqual([105, ['sleep', '10']]);
    expect(await grace(['--set', 'api.preStopSleepSeconds=0', '--set', 'config.server.shutdown_timeout=500ms'])).toEqual([6, undefined]);
    expect(await grace(['--set', 'config.server.shutdown_timeout=40'])).toEqual([50, ['sleep', '5']]);
    expect(await grace(['--set', 'api.terminationGracePeriodSeconds=31'])).toEqual([31, ['sleep', '5']]);
    expect(await failing(['--set', 'api.terminationGracePeriodSeconds=30'])).toMatch(
      /api\.terminationGracePeriodSeconds \(30\) must exceed api\.preStopSleepSeconds \(5\) \+ config\.server\.shutdown_timeout \(25s = 25 s\)/,
    );
    expect(await failing(['--set', 'api.preStopSleepSeconds=-1'])).toMatch(/\/api\/preStopSleepSeconds/);
  });
});

describe('docs/kubernetes-install.md', () => {
  it('the minimal external install uses the Secrets the page has the reader create first: the chart renders none of the same name and reads them under their keys', async () => {
    const page = readFileSync(join(ROOT, 'docs', 'kubernetes-install.md'), 'utf8');
    const section = page.slice(page.indexOf('## Install with MySQL / MariaDB'));
    // The section's first two code blocks, continuation lines joined: the Secrets, then the install.
    const [secretsBlock, installBlock] = [...section.matchAll(/```sh[^\n]*\n([\s\S]*?)```/g)].map((m) => m[1].replace(/\\\n\s*/g, ' '));
    const created = new Map<string, string[]>();
    for (const line of secretsBlock.split('\n')) {
      const secret = /kubectl -n conveyor create secret generic (\S+)/.exec(line);
      if (secret) created.set(secret[1], [...line.matchAll(/--from-literal=([\w.-]+)=/g)].map((m) => m[1]));
    }
    expect(created.get('conveyor-auth')).toEqual(['jwt', 'password']);
    const command = /helm install conveyor charts\/conveyor --namespace conveyor (.*)/.exec(installBlock)?.[1];
    expect(command, installBlock).toBeDefined();
    const { objects } = await helmTemplate(command!.trim().split(/\s+/));
    // A Secret of the chart under one of these names would make `helm install` fail (it exists, not owned by the release).
    expect(objects.filter((o) => o.kind === 'Secret' && created.has(o.metadata.name)).map((o) => o.metadata.name)).toEqual([]);
    const refs = objects.flatMap((o) => {
      const pod = o.kind === 'CronJob' ? o.spec.jobTemplate.spec.template.spec : o.kind === 'Pod' ? o.spec : o.spec?.template?.spec;
      return [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])].flatMap((c: any) => (c.env ?? []).filter((e: any) => e.valueFrom?.secretKeyRef).map((e: any) => ({ env: e.name, ...e.valueFrom.secretKeyRef })));
    });
    for (const ref of refs) {
      if (created.has(ref.name)) expect(created.get(ref.name), `${ref.env} reads ${ref.name}/${ref.key}`).toContain(ref.key);
      else expect(objects.some((o) => o.kind === 'Secret' && o.metadata.name === ref.name), `${ref.env} reads ${ref.name}, neither created by the page nor rendered`).toBe(true);
    }
    // The API reads the JWT secret and the admin password from the reader's Secret.
    expect(refs.filter((r) => r.env.startsWith('CONVEYOR_AUTH_')).map((r) => [r.env, r.name, r.key])).toEqual(
      expect.arrayContaining([['CONVEYOR_AUTH_JWT_SECRET', 'conveyor-auth', 'jwt'], ['CONVEYOR_AUTH_PASSWORD', 'conveyor-auth', 'password']]),
    );
  });
});

describe('long release names', () => {
  // Helm allows release names of up to 53 characters: the full name <release>-conveyor is then 62.
  const release = 'a-very-long-release-name-for-testing-name-limits-xyzw';
  const sets: Record<string, string[]> = {
    production: ['-f', PRODUCTION_VALUES],
    embedded: [...EXPLICIT_AUTH, '--set', 'networkPolicy.enabled=true', '--set', 'networkPolicy.allowExternal=false'],
  };
  const renders: Record<string, K8sObject[]> = {};
  beforeAll(async () => {
    expect(release).toHaveLength(53);
    for (const [name, args] of Object.entries(sets)) renders[name] = (await helmTemplate(args, { release })).objects;
  }, 60_000);

  const withControllerCronJob = (objects: K8sObject[]) => [...objects, ...[controllerCronJob(objects)].filter((o): o is K8sObject => !!o)];
  const podTemplates = (objects: K8sObject[]) =>
    withControllerCronJob(objects).flatMap((o) => {
      if (o.kind === 'CronJob') return [o.spec.jobTemplate.spec.template];
      if (o.kind === 'Pod') return [o];
      return o.spec?.template?.spec ? [o.spec.template] : [];
    });
  const configOf = (objects: K8sObject[]) => parseYaml(objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-config'))!.data['conveyor.yaml']);

  it.each(Object.keys(sets))('%s: every name and label fits its limit; CronJob and StatefulSet names are at most 52 characters', (set) => {
    const objects = withControllerCronJob(renders[set]);
    expect(objects.flatMap(validateObject)).toEqual([]);
    const labelled: Array<[string, Record<string, string> | undefined]> = [
      ...objects.map((o): [string, Record<string, string> | undefined] => [`${o.kind}/${o.metadata.name}`, o.metadata.labels]),
      ...podTemplates(objects).map((t): [string, Record<string, string> | undefined] => [`pod template ${t.metadata?.name ?? ''}`, t.metadata?.labels]),
    ];
    for (const o of objects) expect(o.metadata.name, o.kind).toMatch(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
    for (const [where, labels] of labelled) {
      for (const [key, value] of Object.entries(labels ?? {})) {
        expect(key.split('/').pop()!.length, `${where}: label key ${key}`).toBeLessThanOrEqual(63);
        expect(value.length, `${where}: label ${key} value`).toBeLessThanOrEqual(63);
      }
    }
    const limited = objects.filter((o) => o.kind === 'CronJob' || o.kind === 'StatefulSet');
    expect(limited.length).toBeGreaterThan(0);
    for (const o of limited) expect(o.metadata.name.length, `${o.kind}/${o.metadata.name}`).toBeLessThanOrEqual(52);
    // Shortened, they still tell the reapers apart by name.
    const cronJobs = objects.filter((o) => o.kind === 'CronJob').map((o) => o.metadata.name);
    if (cronJobs.length) expect(cronJobs.map((n) => n.replace(/^.*-(reap-\w+)$/, '$1'))).toEqual(['reap-expiry', 'reap-archive', 'reap-delete']);
  });

  it('Redis keys and channels are the release\'s own unless config.redis.key_prefix says otherwise', async () => {
    for (const set of Object.keys(sets)) expect(configOf(renders[set]).redis.key_prefix).toBe(`conveyor:conveyor.${release}:`);
    const other = await helmTemplate([...EXPLICIT_AUTH, '--set', 'config.redis.key_prefix=shared:'], { release: 'other', namespace: 'team-b' });
    expect(configOf(other.objects).redis.key_prefix).toBe('shared:');
    const own = await helmTemplate(EXPLICIT_AUTH, { release: 'other', namespace: 'team-b' });
    expect(configOf(own.objects).redis.key_prefix).toBe('conveyor:team-b.other:');
  }, 60_000);

  it('the controller setting and RBAC name the delete CronJob as its template does; Services and NetworkPolicies select the pods', () => {
    const objects = renders.production;
    const deleteJob = controllerCronJob(objects)!;
    expect(deleteJob.metadata.name).toMatch(/-reap-delete$/);
    expect(configOf(objects).controller.delete_reaper_cronjob).toBe(deleteJob.metadata.name);
    const cronRules = objects.filter((o) => o.kind === 'Role').flatMap((r) => r.rules).filter((r: any) => r.resources.includes('cronjobs'));
    expect(cronRules.map((r: any) => [r.verbs, r.resourceNames])).toEqual([[['create'], undefined], [['get', 'update'], [deleteJob.metadata.name]]]);
    for (const set of Object.keys(sets)) {
      const pods = podTemplates(renders[set]).map((t) => t.metadata.labels ?? {});
      for (const svc of renders[set].filter((o) => o.kind === 'Service')) {
        expect(pods.some((labels) => matches(svc.spec.selector, labels)), `${set}: Service ${svc.metadata.name}`).toBe(true);
      }
      // The helm test pod is the client the API NetworkPolicy admits.
      const testPod = renders[set].find((o) => o.kind === 'Pod')!;
      const api = renders[set].find((o) => o.kind === 'NetworkPolicy' && o.metadata.labels?.['app.kubernetes.io/component'] === 'server')!;
      const clientSelector = api.spec.ingress[0].from[0].podSelector.matchLabels;
      expect(matches(clientSelector, testPod.metadata.labels!), `${set}: ${JSON.stringify(clientSelector)}`).toBe(true);
    }
  });

  it('shortened names are stable and keep two long releases that begin alike apart; short names are unchanged', async () => {
    const names = (objects: K8sObject[]) => withControllerCronJob(objects).filter((o) => o.kind === 'CronJob' || o.kind === 'StatefulSet').map((o) => o.metadata.name);
    const again = (await helmTemplate(sets.production, { release })).objects;
    expect(names(again)).toEqual(names(renders.production));
    const sibling = (await helmTemplate(sets.production, { release: `${release.slice(0, -1)}q` })).objects;
    for (const name of names(sibling)) expect(names(renders.production)).not.toContain(name);
    expect(ofKind('default', 'StatefulSet').map((o) => o.metadata.name)).toEqual(['conveyor']);
    expect(names(all('production'))).toEqual(['conveyor-reap-expiry', 'conveyor-reap-archive', 'conveyor-reap-delete']);
  });
});

describe('external database with chart-made secrets', () => {
  const set = 'external, chart-made secrets';

  it('the hook Job reads a hook Secret created before it (lower weight), the pods read the release Secret; both hold the URL', () => {
    const job = named(set, 'Job', 'conveyor-migrate');
    const ref = job.spec.template.spec.containers[0].env.find((e: any) => e.name === 'CONVEYOR_DB_URL').valueFrom.secretKeyRef;
    const hookSecret = named(set, 'Secret', ref.name);
    expect(hookSecret.metadata.annotations).toMatchObject({ 'helm.sh/hook': 'pre-install,pre-upgrade', 'helm.sh/hook-weight': '-10', 'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded' });
    const apiRef = named(set, 'Deployment', 'conveyor').spec.template.spec.containers[0].env.find((e: any) => e.name === 'CONVEYOR_DB_URL').valueFrom.secretKeyRef;
    const releaseSecret = named(set, 'Secret', apiRef.name);
    expect(releaseSecret.metadata.annotations?.['helm.sh/hook']).toBeUndefined();
    expect(releaseSecret.metadata.name).not.toBe(hookSecret.metadata.name);
    const url = 'mysql://conveyor:s3cret@mysql.db.svc:3306/conveyor';
    expect(Buffer.from(hookSecret.data.url, 'base64').toString()).toBe(url);
    expect(Buffer.from(releaseSecret.data[apiRef.key], 'base64').toString()).toBe(url);
    // The URL (a password) never lands in the ConfigMap.
    expect(named(set, 'ConfigMap', 'conveyor-config').data['conveyor.yaml']).not.toContain('s3cret');
    expect(Buffer.from(named(set, 'Secret', 'conveyor-redis').data.url, 'base64').toString()).toBe('redis://redis.db.svc:6379');
  });

  it('the API pods run no reaper (CronJobs do) and get Redis; the controller creates the delete CronJob', () => {
    const api = conveyorContainers(set).find((w) => w.container.args[0] === 'serve')!;
    const { config } = containerConfig(set, api);
    expect(config.reapers.mode).toBe('external');
    expect(config.redis.url).toBe('redis://redis.db.svc:6379');
    expect(ofKind(set, 'CronJob').map((c) => c.metadata.name)).toEqual(['conveyor-reap-expiry', 'conveyor-reap-archive']);
    expect(controllerCronJob(all(set))?.metadata.name).toBe('conveyor-reap-delete');
    expect(named(set, 'Deployment', 'conveyor').spec.replicas).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('TLS (tls.*)', () => {
  const certManager = 'tls via cert-manager, mutual';
  const existing = 'tls via existingSecret';
  const api = (set: string) => conveyorContainers(set).find((w) => w.container.args[0] === 'serve')!;
  const envOf = (container: any) => Object.fromEntries((container.env ?? []).filter((e: any) => e.value !== undefined).map((e: any) => [e.name, e.value]));

  it('cert-manager: a Certificate from the issuer for the Service names (and the headless Service), stored in <fullname>-tls', () => {
    const certificate = named(certManager, 'Certificate', 'conveyor');
    expect(certificate.apiVersion).toBe('cert-manager.io/v1');
    expect(validateObject(certificate)).toEqual([]);
    expect(certificate.spec.issuerRef).toEqual({ name: 'internal-ca', kind: 'ClusterIssuer', group: 'cert-manager.io' });
    expect(certificate.spec.secretName).toBe('conveyor-tls');
    expect(certificate.spec.dnsNames).toEqual([
      'conveyor', 'conveyor.conveyor', 'conveyor.conveyor.svc', 'conveyor.conveyor.svc.cluster.local',
      'conveyor-headless', 'conveyor-headless.conveyor', 'conveyor-headless.conveyor.svc', 'conveyor-headless.conveyor.svc.cluster.local',
      'conveyor.example.com',
    ]);
    // Every name a client in the cluster uses for the Services is covered.
    for (const svc of ofKind(certManager, 'Service').filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'server')) {
      expect(certificate.spec.dnsNames).toContain(`${svc.metadata.name}.${NAMESPACE}.svc`);
    }
    expect(certificate.spec.usages).toEqual(expect.arrayContaining(['server auth', 'client auth']));
    expect(certificate.spec.duration).toBe('2160h');
    expect(certificate.spec.privateKey).toMatchObject({ algorithm: 'ECDSA', rotationPolicy: 'Always' });
    // No Certificate when the Secret exists already, none without TLS.
    expect(ofKind(existing, 'Certificate')).toEqual([]);
    expect(ofKind('default', 'Certificate')).toEqual([]);
    expect(all(existing).some((o) => o.kind === 'Secret' && o.metadata.name === 'conveyor-serving-cert')).toBe(false);
  });

  it('the API container mounts the Secret read-only and gets CONVEYOR_SERVER_TLS_*; no other container does', () => {
    for (const [set, secretName] of [[certManager, 'conveyor-tls'], [existing, 'conveyor-serving-cert']]) {
      const w = api(set);
      expect(w.podSpec.volumes.find((v: any) => v.name === 'tls')).toEqual({ name: 'tls', secret: { secretName, defaultMode: 0o440 } });
      expect(w.container.volumeMounts.find((m: any) => m.name === 'tls')).toEqual({ name: 'tls', mountPath: '/etc/conveyor-tls', readOnly: true });
      const env = envOf(w.container);
      expect(env.CONVEYOR_SERVER_TLS_CERT_FILE).toBe('/etc/conveyor-tls/tls.crt');
      expect(env.CONVEYOR_SERVER_TLS_KEY_FILE).toBe('/etc/conveyor-tls/tls.key');
      expect(env.CONVEYOR_SERVER_TLS_CLIENT_CA_FILE).toBe(set === certManager ? '/etc/conveyor-tls/ca.crt' : undefined);
      const { config } = containerConfig(set, w);
      expect([config.server.tls_cert_file, config.server.tls_key_file]).toEqual(['/etc/conveyor-tls/tls.crt', '/etc/conveyor-tls/tls.key']);
      for (const other of conveyorContainers(set).filter((c) => c.container.args[0] !== 'serve')) {
        expect(Object.keys(envOf(other.container)).filter((k) => k.startsWith('CONVEYOR_SERVER_TLS')), other.container.name).toEqual([]);
        expect((other.container.volumeMounts ?? []).some((m: any) => m.name === 'tls'), other.container.name).toBe(false);
      }
    }
    expect(api('default').podSpec.volumes.some((v: any) => v.name === 'tls')).toBe(false);
    expect(Object.keys(envOf(api('default').container)).filter((k) => k.startsWith('CONVEYOR_SERVER_TLS'))).toEqual([]);
  });

  it('probes: HTTPS on the API port with TLS; the plaintext metrics port with mutual TLS', () => {
    const tlsOnly = api(existing).container;
    for (const probe of [tlsOnly.startupProbe, tlsOnly.livenessProbe, tlsOnly.readinessProbe]) expect(probe.httpGet).toMatchObject({ port: 'http', scheme: 'HTTPS' });
    const mutual = api(certManager).container;
    for (const probe of [mutual.startupProbe, mutual.livenessProbe, mutual.readinessProbe]) {
      expect(probe.httpGet.port).toBe('metrics');
      expect(probe.httpGet.scheme).toBeUndefined();
    }
    expect(api('default').container.readinessProbe.httpGet.scheme).toBeUndefined();
  });

  it('Service appProtocol https; the ServiceMonitor scrapes the plaintext metrics port; the helm test pod speaks HTTPS with the CA (and the certificate under mutual TLS)', () => {
    expect(named(existing, 'Service', 'conveyor').spec.ports.map((p: any) => [p.name, p.appProtocol])).toEqual([['http', 'https'], ['grpc', 'grpc'], ['metrics', 'http']]);
    const monitor = named(certManager, 'ServiceMonitor', 'conveyor');
    expect(monitor.spec.endpoints.map((e: any) => [e.port, e.scheme])).toEqual([['metrics', undefined]]);
    const pod = named(certManager, 'Pod', 'conveyor-test');
    const env = envOf(pod.spec.containers[0]);
    expect(env).toMatchObject({ CONVEYOR_URL: 'https://conveyor.conveyor.svc:8080', TLS_CA_FILE: '/etc/conveyor-tls/ca.crt', TLS_CERT_FILE: '/etc/conveyor-tls/tls.crt', TLS_KEY_FILE: '/etc/conveyor-tls/tls.key' });
    expect(pod.spec.volumes.find((v: any) => v.name === 'tls').secret).toEqual({ secretName: 'conveyor-tls', defaultMode: 0o440 });
    // Without mutual TLS the pod gets the CA only, never the release's key.
    const plainPod = named(existing, 'Pod', 'conveyor-test');
    expect(envOf(plainPod.spec.containers[0]).TLS_CERT_FILE).toBeUndefined();
    expect(plainPod.spec.volumes.find((v: any) => v.name === 'tls').secret).toEqual({ secretName: 'conveyor-serving-cert', defaultMode: 0o440, items: [{ key: 'ca.crt', path: 'ca.crt' }], optional: true });
  });

  it('refuses TLS without a certificate source, with two, and mutual TLS without the metrics port', async () => {
    const failing = async (args: string[]) => {
      const result = await helm(['template', 'conveyor', CHART, ...EXPLICIT_AUTH, ...args]);
      expect(result.code, result.stdout).not.toBe(0);
      return result.stderr;
    };
    expect(await failing(['--set', 'tls.enabled=true'])).toMatch(/tls\.enabled needs a certificate: tls\.certManager\.issuerRef\.name .* or tls\.existingSecret/);
    expect(await failing(['--set', 'tls.enabled=true', '--set', 'tls.existingSecret=x', '--set', 'tls.certManager.issuerRef.name=y'])).toMatch(/not both/);
    expect(await failing(['--set', 'tls.enabled=true', '--set', 'tls.existingSecret=x', '--set', 'tls.clientCA=true', '--set', 'metrics.port=0'])).toMatch(/tls\.clientCA .* needs metrics\.port > 0/);
    expect(await failing(['--set', 'tls.clientCA=true'])).toMatch(/tls\.clientCA needs tls\.enabled=true/);
    expect(await failing(['--set', 'tls.certManager.privateKey.algorithm=DSA'])).toMatch(/\/tls\/certManager\/privateKey\/algorithm/);
    expect(await failing(['--set', 'config.server.tls_cert_file=/x'])).toMatch(/additional properties 'tls_cert_file' not allowed/);
  });
});

describe('values.schema.json and impossible combinations', () => {
  const failing = async (args: string[]) => {
    const result = await helm(['template', 'conveyor', CHART, ...EXPLICIT_AUTH, ...args]);
    expect(result.code, result.stdout).not.toBe(0);
    return result.stderr;
  };

  it('rejects a wrong type with a readable message', async () => {
    const err = await failing(['--set', 'api.replicaCount=three']);
    expect(err).toMatch(/values don't meet the specifications of the schema/);
    expect(err).toMatch(/at '\/api\/replicaCount': got string, want integer/);
    expect(await failing(['--set', 'auth.enabled=maybe'])).toMatch(/at '\/auth\/enabled': got string, want boolean/);
    expect(await failing(['--set', 'reapers.delete.schedule=daily'])).toMatch(/\/reapers\/delete\/schedule/);
    expect(await failing(['--set', 'database.persistence.size=lots'])).toMatch(/\/database\/persistence\/size/);
  });

  it('rejects an unknown top-level key, and conveyor.yaml keys the chart owns', async () => {
    expect(await failing(['--set', 'replicas=3'])).toMatch(/additional properties 'replicas' not allowed/);
    expect(await failing(['--set', 'config.db.url=mysql://x@y/z'])).toMatch(/at '\/config\/db': additional properties 'url' not allowed/);
    expect(await failing(['--set', 'config.auth.enabled=false'])).toMatch(/additional properties 'auth' not allowed/);
    expect(await failing(['--set', 'config.queue.visiblity_timeout=5s'])).toMatch(/additional properties 'visiblity_timeout' not allowed/);
  });

  it('refuses what cannot work, naming the fix', async () => {
    expect(await failing(['--set', 'api.replicaCount=2'])).toMatch(/database\.embedded=true runs ONE pod .*api\.replicaCount must be 1/);
    expect(await failing(['--set', 'api.autoscaling.enabled=true'])).toMatch(/api\.autoscaling\.enabled must be false/);
    expect(await failing(['--set', 'database.embedded=false'])).toMatch(/needs the external database: set database\.url .* or database\.existingSecret/);
    expect(await failing(['--set', 'database.url=mysql://a:b@c/d'])).toMatch(/set database\.embedded=false to use it/);
    expect(await failing(['--set', 'auth.jwtSecret=short'])).toMatch(/auth\.jwtSecret must be at least 32 bytes/);
    expect(await failing(['--set', 'metrics.port=0', '--set', 'metrics.serviceMonitor.enabled=true'])).toMatch(/metrics\.port must be > 0/);
    expect(await failing(['--set', 'metrics.port=8081'])).toMatch(/must differ/);
    expect(await failing(['--set', 'api.podDisruptionBudget.minAvailable=1', '--set', 'api.podDisruptionBudget.maxUnavailable=1'])).toMatch(/not both/);
    expect(await failing(['--set', 'database.embedded=false', '--set', 'database.url=postgres://x@y/z'])).toMatch(/\/database\/url/);
  });

  it('the config section allows exactly the service\'s keys that the chart does not own, with the service\'s defaults', () => {
    const OWNED = [
      'server.http_port', 'server.grpc_port', 'db.url', 'queue.delete_reaper_schedule', 'reapers.mode',
      'auth.enabled', 'auth.jwt_secret', 'auth.username', 'auth.password', 'redis.url', 'metrics.port',
      'controller.namespaces', 'controller.namespace', 'controller.lease_name', 'controller.delete_reaper_cronjob', 'controller.port',
      // The delete CronJob the controller creates: its template, a file of the chart's ConfigMap.
      'controller.delete_reaper_cronjob_template',
      // controller.instance (the release name), controller.topicOwnership and controller.adoptExisting.
      'controller.instance', 'controller.topic_ownership', 'controller.adopt_existing',
      'server.tls_cert_file', 'server.tls_key_file', 'server.tls_client_ca_file',
      // The chart hands every secret over from its Secrets itself (secretKeyRef), so their *_file twins are its own too.
      'auth.jwt_secret_file', 'auth.password_file', 'db.url_file', 'redis.url_file',
      // Credentials for programs: auth.kubernetes.* and auth.credentialsKey.* (a Secret's keys, as the other secrets).
      'auth.kubernetes_enabled', 'auth.kubernetes_issuer', 'auth.kubernetes_audience', 'auth.kubernetes_jwks_url',
      'auth.credentials_key', 'auth.credentials_key_file', 'auth.previous_credentials_key', 'auth.previous_credentials_key_file',
      // Tracing's export headers (an API key): telemetry.tracesHeaders.* (a Secret's key).
      'telemetry.traces_headers', 'telemetry.traces_headers_file',
    ];
    const serviceKeys = Object.entries(configSchema.shape).flatMap(([section, schema]) =>
      Object.keys((schema as unknown as { def: { innerType: { shape: object } } }).def.innerType.shape).map((key) => `${section}.${key}`),
    );
    const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8'));
    const chartKeys = Object.entries(schema.properties.config.properties as Record<string, any>).flatMap(([section, s]) => Object.keys(s.properties).map((key) => `${section}.${key}`));
    expect(OWNED.filter((k) => !serviceKeys.includes(k)), 'owned keys the service does not have').toEqual([]);
    expect(chartKeys.sort()).toEqual(serviceKeys.filter((k) => !OWNED.includes(k)).sort());
    // values.yaml spells out the service's defaults; they must stay the service's defaults.
    const defaults = validateConfig({});
    const fromValues = validateConfig(chartValues.config);
    for (const [section, keys] of Object.entries(chartValues.config as Record<string, object>)) {
      for (const key of Object.keys(keys)) {
        expect((fromValues as any)[section][key], `values.yaml config.${section}.${key}`).toEqual((defaults as any)[section][key]);
      }
    }
  });
});

describe('values kept across upgrades (lookup)', () => {
  // helm template and --dry-run=client have no cluster, so `lookup` answers nothing there. The chart isolates its
  // lookups in one define each; this copy of the chart replaces the Secret's lookup with a fixed object, exactly
  // what lookup returns on an upgrade, and renders the real templates around it.
  let fakeChart: string;
  const liveJwt = 'kept-jwt-secret-from-the-first-install-0123456789';
  const livePassword = 'kept-admin-password';

  beforeAll(() => {
    fakeChart = mkdtempSync(join(tmpdir(), 'conveyor-chart-lookup-'));
    cpSync(CHART, fakeChart, { recursive: true });
    const helpers = join(fakeChart, 'templates', '_helpers.tpl');
    const text = readFileSync(helpers, 'utf8');
    const secretLookup = '{{- $secret := lookup "v1" "Secret" .namespace .name -}}';
    expect(text).toContain(secretLookup);
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    writeFileSync(helpers, text.replace(secretLookup, `{{- $secret := dict "data" (dict "jwt-secret" "${b64(liveJwt)}" "admin-password" "${b64(livePassword)}") -}}`));
  });
  afterAll(() => {
    if (fakeChart) rmSync(fakeChart, { recursive: true, force: true });
  });

  it('the generated JWT secret and admin password are reused when the Secret exists', async () => {
    const { objects } = await helmTemplate([], { chart: fakeChart });
    const secret = objects.find((o) => o.kind === 'Secret' && o.metadata.name === 'conveyor-auth')!;
    expect(Buffer.from(secret.data['jwt-secret'], 'base64').toString()).toBe(liveJwt);
    expect(Buffer.from(secret.data['admin-password'], 'base64').toString()).toBe(livePassword);
  });

  it('values given explicitly win over the live Secret', async () => {
    const jwt = 'an-explicit-jwt-secret-of-at-least-32-bytes';
    const { objects } = await helmTemplate(['--set', `auth.jwtSecret=${jwt}`], { chart: fakeChart });
    const secret = objects.find((o) => o.kind === 'Secret' && o.metadata.name === 'conveyor-auth')!;
    expect(Buffer.from(secret.data['jwt-secret'], 'base64').toString()).toBe(jwt);
    expect(Buffer.from(secret.data['admin-password'], 'base64').toString()).toBe(livePassword);
  });

  it('without the controller nothing changes the delete CronJob\'s schedule, so the chart renders it as the others, on the values\' schedule', async () => {
    const { objects } = await helmTemplate(['-f', PRODUCTION_VALUES, '--set', 'controller.enabled=false', '--set', 'reapers.delete.schedule=45 4 * * *']);
    const cron = objects.find((o) => o.kind === 'CronJob' && o.metadata.name === 'conveyor-reap-delete')!;
    expect([cron.spec.schedule, cron.spec.suspend, cron.metadata.labels?.['app.kubernetes.io/managed-by']]).toEqual(['45 4 * * *', false, 'Helm']);
    expect(objects.some((o) => o.kind === 'Deployment' && o.metadata.name === 'conveyor-controller')).toBe(false);
    expect(controllerCronJob(objects)).toBeUndefined();
  });
});

describe('an upgrade that would flip database.embedded (lookup)', () => {
  // As above: copies of the chart whose lookup of the release's live API workload answers what a cluster
  // running the embedded (StatefulSet) or the external (Deployment) configuration would.
  const charts: Record<'StatefulSet' | 'Deployment', string> = { StatefulSet: '', Deployment: '' };
  const external = [...EXPLICIT_AUTH, '--set', 'database.embedded=false', '--set', 'database.url=mysql://conveyor:pw@mysql:3306/conveyor'];

  beforeAll(() => {
    for (const kind of ['StatefulSet', 'Deployment'] as const) {
      const dir = mkdtempSync(join(tmpdir(), `conveyor-chart-live-${kind.toLowerCase()}-`));
      cpSync(CHART, dir, { recursive: true });
      const helpers = join(dir, 'templates', '_helpers.tpl');
      const text = readFileSync(helpers, 'utf8');
      const field = kind === 'StatefulSet' ? 'statefulSet' : 'deployment';
      const lookup = `{{- $${field} := lookup "apps/v1" "${kind}" .namespace .${field} -}}`;
      expect(text).toContain(lookup);
      // As lookup answers: the object only for the name and namespace asked about (release "conveyor" in "conveyor").
      const live = `ternary (dict "kind" "${kind}" "metadata" (dict "name" "conveyor")) (dict) (and (eq .namespace "conveyor") (eq .${field} "conveyor"))`;
      writeFileSync(helpers, text.replace(lookup, `{{- $${field} := ${live} -}}`));
      charts[kind] = dir;
    }
  });
  afterAll(() => {
    for (const dir of Object.values(charts)) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const failing = async (chart: string, args: string[]) => {
    const result = await helm(['template', 'conveyor', chart, '--namespace', 'conveyor', ...args]);
    expect(result.code, result.stdout).not.toBe(0);
    return result.stderr;
  };

  it('an embedded release is not switched to an external database (its data would stay behind) unless database.allowSwitch=true', async () => {
    expect(await failing(charts.StatefulSet, external)).toMatch(
      /database\.embedded=false, but release conveyor keeps its messages, users and topic configurations in the embedded SQLite database \(StatefulSet conveyor\).*"Changing the database".*database\.allowSwitch=true/,
    );
    const allowed = await helmTemplate([...external, '--set', 'database.allowSwitch=true'], { chart: charts.StatefulSet });
    expect(allowed.objects.some((o) => o.kind === 'Deployment' && o.metadata.name === 'conveyor')).toBe(true);
    // The same configuration upgrades as before: nothing is refused.
    const kept = await helmTemplate(EXPLICIT_AUTH, { chart: charts.StatefulSet });
    expect(kept.objects.some((o) => o.kind === 'StatefulSet' && o.metadata.name === 'conveyor')).toBe(true);
    // Another release, or the same name in another namespace, is a first install: its own choice.
    for (const where of [{ release: 'other' }, { namespace: 'elsewhere' }]) {
      const fresh = await helmTemplate(external, { chart: charts.StatefulSet, ...where });
      expect(fresh.objects.some((o) => o.kind === 'Deployment')).toBe(true);
    }
  });

  it('a release on an external database is not switched to a new, empty SQLite volume unless database.allowSwitch=true', async () => {
    expect(await failing(charts.Deployment, EXPLICIT_AUTH)).toMatch(/database\.embedded=true, but release conveyor runs on an external database \(Deployment conveyor\).*empty SQLite volume/);
    const allowed = await helmTemplate([...EXPLICIT_AUTH, '--set', 'database.allowSwitch=true'], { chart: charts.Deployment });
    expect(allowed.objects.some((o) => o.kind === 'StatefulSet' && o.metadata.name === 'conveyor')).toBe(true);
    const kept = await helmTemplate(external, { chart: charts.Deployment });
    expect(kept.objects.some((o) => o.kind === 'Deployment' && o.metadata.name === 'conveyor')).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('the helm test pod', () => {
  let server: TestServer | undefined;
  afterAll(async () => {
    await server?.close();
  });

  /** Runs the pod's inline script with node, as the container would, against a real server on this machine. */
  async function runTestPod(set: string, url: string, secrets: Record<string, string>, files: Record<string, string> = {}) {
    const pod = named(set, 'Pod', 'conveyor-test');
    expect(pod.metadata.annotations).toMatchObject({ 'helm.sh/hook': 'test', 'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded' });
    const container = pod.spec.containers[0];
    expect(container.image).toBe(named(set, ofKind(set, 'StatefulSet').length ? 'StatefulSet' : 'Deployment', 'conveyor').spec.template.spec.containers[0].image);
    expect(container.command.slice(0, 2)).toEqual(['node', '--input-type=module']);
    const env: Record<string, string> = {};
    for (const e of container.env) {
      if (e.value !== undefined) env[e.name] = e.value;
      else {
        // The password comes from the Secret the API pods read it from.
        const apiEnv = conveyorContainers(set).find((w) => w.container.args[0] === 'serve')!.container.env.find((x: any) => x.name === 'CONVEYOR_AUTH_PASSWORD');
        expect(e.valueFrom.secretKeyRef).toEqual(apiEnv.valueFrom.secretKeyRef);
        env[e.name] = secrets[e.name];
      }
    }
    expect(env.CONVEYOR_URL).toBe(`${VALUE_SETS[set].values.tls?.enabled ? 'https' : 'http'}://conveyor.${NAMESPACE}.svc:8080`);
    // Files the pod reads from its mounts (TLS_*_FILE), replaced by local ones.
    for (const name of Object.keys(files)) {
      const mount = container.volumeMounts.find((m: any) => env[name]?.startsWith(`${m.mountPath}/`));
      expect(mount, `${name}=${env[name]} is on no mounted volume`).toBeDefined();
    }
    const { execFile } = await import('node:child_process');
    return new Promise<{ code: number; out: string }>((resolvePromise) => {
      execFile(process.execPath, [...container.command.slice(1), ...container.args], { env: { PATH: process.env.PATH, ...env, ...files, CONVEYOR_URL: url }, timeout: 30_000 }, (err, stdout, stderr) =>
        resolvePromise({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
      );
    });
  }

  it('passes against a server with auth on (login as the bootstrap admin, round trip) and fails with a wrong password', async () => {
    server = await startTestServer(engineByName.sqlite, {
      overrides: { auth: { enabled: true, jwt_secret: 'helm-test-secret-of-at-least-32-bytes!!', username: 'admin', password: 'helm-test-admin-pw' } },
    });
    const ok = await runTestPod('default', server.url, { ADMIN_PASSWORD: 'helm-test-admin-pw' });
    expect(ok.out).toMatch(/ok {3}GET .*\/readyz -> 200/);
    expect(ok.out).toMatch(/ok {3}login as admin -> 200/);
    expect(ok.out).toMatch(/ok {3}ack -> 204/);
    expect(ok.code, ok.out).toBe(0);
    const bad = await runTestPod('default', server.url, { ADMIN_PASSWORD: 'wrong' });
    expect(bad.code).not.toBe(0);
    expect(bad.out).toMatch(/FAIL login as admin -> 401/);
    await server.close();
    server = undefined;
  }, 60_000);

  it('with mutual TLS: passes over HTTPS presenting the release certificate, and fails without it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conveyor-chart-tls-'));
    try {
      const pki = new TestPki(dir);
      // The release's certificate serves and, under mutual TLS, is the test pod's client certificate (server and client auth).
      const release = pki.issue('conveyor.conveyor.svc', 'server');
      const client = pki.issue('client', 'client');
      server = await startTestServer(engineByName.sqlite, {
        overrides: {
          server: { tls_cert_file: release.certPath, tls_key_file: release.keyPath, tls_client_ca_file: pki.ca.certPath },
          auth: { enabled: true, jwt_secret: 'helm-test-secret-of-at-least-32-bytes!!', username: 'admin', password: 'helm-test-admin-pw' },
        },
      });
      // The server demands a client certificate: the round trip passing shows the pod presented one, over HTTPS
      // with the server's certificate checked against the CA file.
      const ok = await runTestPod('tls via cert-manager, mutual', `https://127.0.0.1:${server.server.httpPort}`, { ADMIN_PASSWORD: 'helm-test-admin-pw' }, {
        TLS_CA_FILE: pki.ca.certPath, TLS_CERT_FILE: client.certPath, TLS_KEY_FILE: client.keyPath,
      });
      expect(ok.out).toMatch(/ok {3}GET https:.*\/readyz -> 200/);
      expect(ok.out).toMatch(/ok {3}the acked message is gone/);
      expect(ok.code, ok.out).toBe(0);
    } finally {
      await server?.close();
      server = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it('passes against a server with auth off', async () => {
    server = await startTestServer(engineByName.sqlite);
    const ok = await runTestPod('embedded, auth off', server.url, {});
    expect(ok.code, ok.out).toBe(0);
    expect(ok.out).not.toMatch(/login/);
    expect(ok.out).toMatch(/ok {3}the acked message is gone/);
  }, 60_000);

  /** A Service over several pods: each request goes to the next server in turn; the statuses it relayed. */
  async function roundRobin(targets: string[]) {
    const statuses: number[] = [];
    let next = 0;
    const proxy = createServer((req, res) => {
      const upstream = httpRequest(new URL(req.url!, targets[next++ % targets.length]), { method: req.method, headers: req.headers }, (answer) => {
        statuses.push(answer.statusCode!);
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolvePromise) => proxy.listen(0, '127.0.0.1', resolvePromise));
    return {
      url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      statuses,
      close: () => new Promise<void>((resolvePromise) => {
        proxy.closeAllConnections();
        proxy.close(() => resolvePromise());
      }),
    };
  }

  it('with the production values (require_topic_registration on, several API pods): registers its topic, retries while a pod has not seen it, removes the configuration after', async () => {
    const set = 'production';
    const apiConfig = containerConfig(set, conveyorContainers(set).find((w) => w.container.args[0] === 'serve')!).config;
    expect(apiConfig.queue.require_topic_registration).toBe(true);
    const auth = { enabled: true, jwt_secret: 'helm-test-secret-of-at-least-32-bytes!!', username: 'admin', password: 'helm-test-admin-pw' };
    const a = await startTestServer(engineByName.sqlite, { overrides: { auth, queue: { require_topic_registration: true } } });
    // The second pod on the same database reloads topic configurations only hourly: every registration-checked
    // call it gets answers 422 until the pod retries onto the first one.
    const b = await startTestServer(engineByName.sqlite, { database: a.database, overrides: { auth, queue: { require_topic_registration: true, config_refresh_interval: '1h' } } });
    const service = await roundRobin([a.url, b.url]);
    try {
      const run = await runTestPod(set, service.url, { ADMIN_PASSWORD: 'helm-test-admin-pw' });
      expect(run.code, run.out).toBe(0);
      expect(run.out).toMatch(/ok {3}register helm-test-\d+ -> 200/);
      expect(run.out).toMatch(/ok {3}the acked message is gone/);
      expect(run.out).toMatch(/ok {3}remove the configuration of helm-test-\d+ -> 204/);
      expect(service.statuses, 'the pod that had not seen the topic answered 422').toContain(422);
      expect(await a.db('topic_configs').select('topic'), 'no topic configuration left behind').toEqual([]);
    } finally {
      await service.close();
      await b.close();
      await a.close();
    }
  }, 90_000);
});
