import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startFakeKube, type FakeKube } from './fake-kube/index.js';
import { CONTROLLER_NAMESPACE, startTestController, type TestController } from './helpers/controller.js';
import { describeEachEngine, engineByName, type TestDatabase } from './helpers/engines.js';
import { captureLogger } from './helpers/log-capture.js';
import { startChildServer, startTestServer, type ChildServer, type TestServer } from './helpers/server.js';

const NAME = 'conveyor-reap-delete';

/** What the chart renders into the controller's ConfigMap: the CronJob, less what the controller decides. */
const TEMPLATE = `apiVersion: batch/v1
kind: CronJob
metadata:
  labels:
    app.kubernetes.io/name: conveyor
    app.kubernetes.io/component: reap-delete
    app.kubernetes.io/managed-by: conveyor-controller
spec:
  schedule: "0 3 * * *"
  startingDeadlineSeconds: 300
  successfulJobsHistoryLimit: 1
  failedJobsHistoryLimit: 3
  jobTemplate:
    spec:
      backoffLimit: 2
      template:
        spec:
          restartPolicy: Never
          automountServiceAccountToken: false
          containers:
            - name: reap
              image: conveyor:test
              args: [reap, delete]
              env:
                - name: CONVEYOR_DB_URL
                  valueFrom:
                    secretKeyRef: {name: conveyor-database, key: url}
              resources:
                requests: {cpu: 50m, memory: 128Mi}
`;

function writeTemplate(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'conveyor-cronjob-')), 'delete-reaper-cronjob.yaml');
  writeFileSync(path, TEMPLATE);
  return path;
}

const cronJobOf = (kube: FakeKube) => kube.get({ group: 'batch', version: 'v1', plural: 'cronjobs', namespace: CONTROLLER_NAMESPACE, name: NAME });

interface OwnWorkload {
  deployment: k8s.V1Deployment;
  pod: k8s.V1Pod;
}

/**
 * The controller's Deployment, ReplicaSet and Pod as the deployment and replica-set controllers would create
 * them (the fake runs no controllers): each owned by the one before, with the conventional controller references.
 */
async function ownWorkload(kube: FakeKube): Promise<OwnWorkload> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kube.writeKubeconfig());
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const namespace = CONTROLLER_NAMESPACE;
  const labels = { 'app.kubernetes.io/component': 'controller' };
  const podSpec = { containers: [{ name: 'controller', image: 'conveyor:test', args: ['controller'] }] };
  const deployment = await apps.createNamespacedDeployment({
    namespace,
    body: { metadata: { name: 'conveyor-controller', labels }, spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: podSpec } } },
  });
  const ref = (obj: { metadata?: k8s.V1ObjectMeta }, kind: string) => ({
    apiVersion: 'apps/v1',
    kind,
    name: obj.metadata!.name!,
    uid: obj.metadata!.uid!,
    controller: true,
    blockOwnerDeletion: true,
  });
  const replicaSet = await apps.createNamespacedReplicaSet({
    namespace,
    body: {
      metadata: { name: 'conveyor-controller-5d8f7c9b4', labels, ownerReferences: [ref(deployment, 'Deployment')] },
      spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: podSpec } },
    },
  });
  const pod = await core.createNamespacedPod({
    namespace,
    body: { metadata: { name: 'conveyor-controller-5d8f7c9b4-x2kqz', labels, ownerReferences: [ref(replicaSet, 'ReplicaSet')] }, spec: podSpec },
  });
  return { deployment, pod };
}

describeEachEngine('controller: it creates and owns the delete-reaper CronJob', (engine) => {
  let kube: FakeKube;
  let server: TestServer;
  let other: ChildServer;
  let controller: TestController;
  let own: OwnWorkload;

  beforeAll(async () => {
    kube = await startFakeKube();
    server = await startTestServer(engine, { overrides: { reapers: { mode: 'external' } } });
    // A second API instance: the PUT may land on any pod.
    other = await startChildServer({ CONVEYOR_DB_URL: server.database.url, CONVEYOR_REAPERS_MODE: 'external' });
    own = await ownWorkload(kube);
    controller = await startTestController(
      kube,
      server.database.url,
      { controller: { delete_reaper_cronjob: NAME, delete_reaper_cronjob_template: writeTemplate(), schedule_sync_interval: '1s' } },
      { pod: { name: own.pod.metadata!.name, namespace: CONTROLLER_NAMESPACE } },
    );
  });
  afterAll(async () => {
    await controller?.close();
    await other?.stop();
    await server?.close();
    await kube?.close();
  });

  const cronJob = () => cronJobOf(kube);

  it('creates the CronJob from the template, owned by its Deployment, suspended while no schedule is stored or configured', async () => {
    await expect.poll(() => cronJob()?.spec?.suspend, { timeout: 10_000 }).toBe(true);
    const created = cronJob();
    expect(created.metadata.ownerReferences).toEqual([
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'conveyor-controller', uid: own.deployment.metadata!.uid, controller: true, blockOwnerDeletion: true },
    ]);
    expect(created.metadata.labels['app.kubernetes.io/managed-by']).toBe('conveyor-controller');
    expect(created.spec.schedule).toBe('0 3 * * *'); // the template's, kept while suspended
    expect(created.spec.concurrencyPolicy).toBe('Forbid');
    expect(created.spec.startingDeadlineSeconds).toBe(300);
    expect(created.spec.jobTemplate.spec.template.spec.containers[0].args).toEqual(['reap', 'delete']);
  });

  it('shows a PUT on any API pod on the CronJob within 10 s, and suspends it for an empty schedule', async () => {
    const put = await other.api.put('/api/admin/delete-reaper/schedule', { schedule: '*/5 * * * *' });
    expect(put.status).toBe(200);
    await expect.poll(() => [cronJob()?.spec?.schedule, cronJob()?.spec?.suspend], { timeout: 10_000, interval: 100 }).toEqual(['*/5 * * * *', false]);

    expect((await server.api.put('/api/admin/delete-reaper/schedule', { schedule: '' })).status).toBe(200);
    await expect.poll(() => cronJob()?.spec?.suspend, { timeout: 10_000, interval: 100 }).toBe(true);
    expect(cronJob().spec.schedule).toBe('*/5 * * * *');
  });

  it('drops the seconds field of a six-field schedule, which a CronJob cannot take', async () => {
    expect((await server.api.put('/api/admin/delete-reaper/schedule', { schedule: '30 0 4 * * *' })).status).toBe(200);
    await expect.poll(() => [cronJob()?.spec?.schedule, cronJob()?.spec?.suspend], { timeout: 10_000, interval: 100 }).toEqual(['0 4 * * *', false]);
  });

  it('creates it again when it is deleted', async () => {
    const before = cronJob().metadata.uid;
    expect((await kube.kubectl(['-n', CONTROLLER_NAMESPACE, 'delete', 'cronjob', NAME])).code).toBe(0);
    await expect.poll(() => cronJob()?.metadata?.uid, { timeout: 10_000, interval: 100 }).not.toBe(undefined);
    const again = cronJob();
    expect(again.metadata.uid).not.toBe(before);
    expect(again.metadata.ownerReferences[0].uid).toBe(own.deployment.metadata!.uid);
    expect([again.spec.schedule, again.spec.suspend]).toEqual(['0 4 * * *', false]);
  });

  it('puts back what someone changed (schedule, suspend, the job\'s image and labels) and leaves a matching CronJob alone', async () => {
    const patch = JSON.stringify([
      { op: 'replace', path: '/spec/schedule', value: '* * * * *' },
      { op: 'replace', path: '/spec/suspend', value: true },
      { op: 'replace', path: '/spec/jobTemplate/spec/template/spec/containers/0/image', value: 'evil:latest' },
      { op: 'replace', path: '/metadata/labels/app.kubernetes.io~1component', value: 'other' },
    ]);
    expect((await kube.kubectl(['-n', CONTROLLER_NAMESPACE, 'patch', 'cronjob', NAME, '--type=json', '-p', patch])).code).toBe(0);
    expect(cronJob().spec.schedule).toBe('* * * * *');
    await expect
      .poll(() => {
        const c = cronJob();
        return [c.spec.schedule, c.spec.suspend, c.spec.jobTemplate.spec.template.spec.containers[0].image, c.metadata.labels['app.kubernetes.io/component']];
      }, { timeout: 10_000, interval: 100 })
      .toEqual(['0 4 * * *', false, 'conveyor:test', 'reap-delete']);

    // Nothing to do: no more writes (its resourceVersion stays) across two more intervals.
    const version = cronJob().metadata.resourceVersion;
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(cronJob().metadata.resourceVersion).toBe(version);
  }, 30_000);

  it('goes with its Deployment: deleting the Deployment collects the ReplicaSet, the Pod and the CronJob', async () => {
    await controller.close();
    expect((await kube.kubectl(['-n', CONTROLLER_NAMESPACE, 'delete', 'deployment', 'conveyor-controller'])).code).toBe(0);
    expect(cronJob()).toBeUndefined();
    expect(kube.list({ group: 'apps', version: 'v1', plural: 'replicasets', namespace: CONTROLLER_NAMESPACE })).toEqual([]);
    expect(kube.list({ group: '', version: 'v1', plural: 'pods', namespace: CONTROLLER_NAMESPACE })).toEqual([]);
  });
});

// The owner search and timers only: the database engine changes nothing here, so these run on SQLite alone.
(inject('mysqlOnly') === true ? describe.skip : describe)('controller: the delete-reaper CronJob without its own pod, and across leadership changes [sqlite]', () => {
  const CRONJOB_PATH = new RegExp(`/namespaces/${CONTROLLER_NAMESPACE}/cronjobs/${NAME}$`);
  let kube: FakeKube;
  let database: TestDatabase;
  let controller: TestController;
  const logs = captureLogger('info');

  beforeAll(async () => {
    kube = await startFakeKube();
    database = await engineByName.sqlite.createDatabase();
    // schedule_sync_interval 500 ms (the fast test timings); no POD_NAME.
    controller = await startTestController(
      kube,
      database.url,
      { controller: { delete_reaper_cronjob: NAME, delete_reaper_cronjob_template: writeTemplate() } },
      { logger: logs.logger },
    );
  });
  afterAll(async () => {
    await controller?.close();
    await kube?.close();
    await database?.drop();
  });

  it('refuses to start without a template it can use, naming the setting and the file', async () => {
    await expect(startTestController(kube, database.url, { controller: { delete_reaper_cronjob: NAME } })).rejects.toThrow(
      /controller\.delete_reaper_cronjob_template.*required with controller\.delete_reaper_cronjob/,
    );
    const missing = join(tmpdir(), 'conveyor-no-such-template.yaml');
    await expect(startTestController(kube, database.url, { controller: { delete_reaper_cronjob: NAME, delete_reaper_cronjob_template: missing } })).rejects.toThrow(
      `controller.delete_reaper_cronjob_template (${missing}): cannot read a CronJob from it`,
    );
    const notACronJob = join(mkdtempSync(join(tmpdir(), 'conveyor-cronjob-')), 'deployment.yaml');
    writeFileSync(notACronJob, 'kind: Deployment\nspec: {}\n');
    await expect(startTestController(kube, database.url, { controller: { delete_reaper_cronjob: NAME, delete_reaper_cronjob_template: notACronJob } })).rejects.toThrow(
      /kind is "Deployment", not CronJob/,
    );
  });

  it('without POD_NAME it still creates the CronJob, with no owner reference, and says so once', async () => {
    await expect.poll(() => cronJobOf(kube)?.spec?.suspend, { timeout: 10_000 }).toBe(true);
    expect(cronJobOf(kube).metadata.ownerReferences).toBeUndefined();
    const warnings = logs.lines.filter((l) => l.msg?.includes('gets no owner reference'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0].reason).toMatch(/POD_NAME is not set/);
    // No pod, replica set or deployment was asked for.
    expect(kube.requests.filter((r) => /\/(pods|replicasets|deployments)\//.test(r.path))).toEqual([]);
  });

  const reads = () => kube.requests.filter((r) => r.method === 'GET' && CRONJOB_PATH.test(r.path));
  const readsWithin = async (ms: number) => {
    const before = reads().length;
    await new Promise((resolve) => setTimeout(resolve, ms));
    return reads().length - before;
  };
  const leadership = async (leading: boolean) => expect.poll(() => controller.isLeader(), { timeout: 5000, interval: 50 }).toBe(leading);

  it('keeps one sync loop when it leads again while a sync of the last term is still running, and ends it on the next step-down', async () => {
    await expect.poll(() => cronJobOf(kube)?.spec?.suspend, { timeout: 10_000 }).toBe(true);
    const oneLoop = await readsWithin(4000);

    // A sync in flight (the API server accepts its read and does not answer) while leadership goes and comes back.
    const release = kube.hangRequests({ method: 'GET', pathPattern: CRONJOB_PATH });
    const unanswered = () => reads().filter((r) => r.status === 0).length;
    await expect.poll(unanswered).toBe(1);
    const restoreLease = kube.failRequests({ pathPattern: /\/leases\//, status: 500 });
    await leadership(false);
    restoreLease();
    await leadership(true);
    await expect.poll(unanswered).toBe(2); // the new term's first sync
    release();
    await new Promise((resolve) => setTimeout(resolve, 1000)); // the loop settles into its interval again

    // Two loops would read twice as often.
    expect(await readsWithin(4000)).toBeLessThan(oneLoop * 1.5);
    const failLease = kube.failRequests({ pathPattern: /\/leases\//, status: 500 });
    await leadership(false);
    await new Promise((resolve) => setTimeout(resolve, 600)); // a sync already under way finishes
    expect(await readsWithin(2000)).toBe(0);
    failLease();
  }, 45_000);
});
