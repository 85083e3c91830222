import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startFakeKube, type FakeKube } from './fake-kube/index.js';
import { CONTROLLER_NAMESPACE, startTestController, type TestController } from './helpers/controller.js';
import { describeEachEngine, engineByName, type TestDatabase } from './helpers/engines.js';
import { startChildServer, startTestServer, type ChildServer, type TestServer } from './helpers/server.js';

const CRONJOB = `apiVersion: batch/v1
kind: CronJob
metadata: {name: conveyor-reap-delete, namespace: ${CONTROLLER_NAMESPACE}}
spec:
  schedule: "0 3 * * *"
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: reap
              image: conveyor:test
              args: [reap, delete]
`;

async function applyCronJob(kube: FakeKube): Promise<void> {
  const path = join(mkdtempSync(join(tmpdir(), 'conveyor-cronjob-')), 'cronjob.yaml');
  writeFileSync(path, CRONJOB);
  expect((await kube.kubectl(['apply', '-f', path])).code).toBe(0);
}

const cronJobOf = (kube: FakeKube) => kube.get({ group: 'batch', version: 'v1', plural: 'cronjobs', namespace: CONTROLLER_NAMESPACE, name: 'conveyor-reap-delete' });

describeEachEngine('controller: the delete-reaper CronJob follows the stored schedule', (engine) => {
  let kube: FakeKube;
  let server: TestServer;
  let other: ChildServer;
  let controller: TestController;

  beforeAll(async () => {
    kube = await startFakeKube();
    server = await startTestServer(engine, { overrides: { reapers: { mode: 'external' } } });
    // A second API instance: the PUT may land on any pod.
    other = await startChildServer({ CONVEYOR_DB_URL: server.database.url, CONVEYOR_REAPERS_MODE: 'external' });
    await applyCronJob(kube);
    controller = await startTestController(kube, server.database.url, { controller: { delete_reaper_cronjob: 'conveyor-reap-delete', schedule_sync_interval: '5s' } });
  });
  afterAll(async () => {
    await controller?.close();
    await other?.stop();
    await server?.close();
    await kube?.close();
  });

  const cronJob = () => cronJobOf(kube);

  it('suspends the CronJob while no schedule is stored or configured', async () => {
    await expect.poll(() => cronJob()?.spec?.suspend, { timeout: 10_000 }).toBe(true);
    expect(cronJob().spec.schedule).toBe('0 3 * * *');
    expect(cronJob().spec.concurrencyPolicy).toBe('Forbid');
  });

  it('shows a PUT on any API pod on the CronJob within 10 s, and suspends it for an empty schedule', async () => {
    const put = await other.api.put('/api/admin/delete-reaper/schedule', { schedule: '*/5 * * * *' });
    expect(put.status).toBe(200);
    const putAt = Date.now();
    await expect.poll(() => [cronJob()?.spec?.schedule, cronJob()?.spec?.suspend], { timeout: 10_000, interval: 100 }).toEqual(['*/5 * * * *', false]);
    expect(Date.now() - putAt).toBeLessThan(10_000);

    expect((await server.api.put('/api/admin/delete-reaper/schedule', { schedule: '' })).status).toBe(200);
    await expect.poll(() => cronJob()?.spec?.suspend, { timeout: 10_000, interval: 100 }).toBe(true);
    expect(cronJob().spec.schedule).toBe('*/5 * * * *');
  });

  it('drops the seconds field of a six-field schedule, which a CronJob cannot take', async () => {
    expect((await server.api.put('/api/admin/delete-reaper/schedule', { schedule: '30 0 4 * * *' })).status).toBe(200);
    await expect.poll(() => [cronJob()?.spec?.schedule, cronJob()?.spec?.suspend], { timeout: 10_000, interval: 100 }).toEqual(['0 4 * * *', false]);
  });
});

// Timers and leadership only: the database engine changes nothing here, so this runs on SQLite alone.
(inject('mysqlOnly') === true ? describe.skip : describe)('controller: the CronJob sync when leadership is lost and regained quickly [sqlite]', () => {
  const CRONJOB_PATH = new RegExp(`/namespaces/${CONTROLLER_NAMESPACE}/cronjobs/conveyor-reap-delete$`);
  let kube: FakeKube;
  let database: TestDatabase;
  let controller: TestController;

  beforeAll(async () => {
    kube = await startFakeKube();
    database = await engineByName.sqlite.createDatabase();
    await applyCronJob(kube);
    // schedule_sync_interval 500 ms (the fast test timings)
    controller = await startTestController(kube, database.url, { controller: { delete_reaper_cronjob: 'conveyor-reap-delete' } });
  });
  afterAll(async () => {
    await controller?.close();
    await kube?.close();
    await database?.drop();
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
