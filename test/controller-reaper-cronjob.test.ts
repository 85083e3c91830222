import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeKube, type FakeKube } from './fake-kube/index.js';
import { CONTROLLER_NAMESPACE, startTestController, type TestController } from './helpers/controller.js';
import { describeEachEngine } from './helpers/engines.js';
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
    const path = join(mkdtempSync(join(tmpdir(), 'conveyor-cronjob-')), 'cronjob.yaml');
    writeFileSync(path, CRONJOB);
    expect((await kube.kubectl(['apply', '-f', path])).code).toBe(0);
    controller = await startTestController(kube, server.database.url, { controller: { delete_reaper_cronjob: 'conveyor-reap-delete', schedule_sync_interval: '5s' } });
  });
  afterAll(async () => {
    await controller?.close();
    await other?.stop();
    await server?.close();
    await kube?.close();
  });

  const cronJob = () => kube.get({ group: 'batch', version: 'v1', plural: 'cronjobs', namespace: CONTROLLER_NAMESPACE, name: 'conveyor-reap-delete' });

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
