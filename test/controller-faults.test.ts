import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startFakeKube, type FakeKube } from './fake-kube/index.js';
import { startTestController, waitForReady, type TestController } from './helpers/controller.js';
import { engineByName } from './helpers/engines.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { metricValue } from './helpers/metrics.js';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.js';

const scratch = mkdtempSync(join(tmpdir(), 'conveyor-faults-'));
function topicConfig(name: string, maxRetries = 2): string {
  const path = join(scratch, `${name}-${maxRetries}.yaml`);
  writeFileSync(path, `apiVersion: conveyor.dev/v1alpha1\nkind: TopicConfig\nmetadata: {name: ${name}, namespace: default}\nspec: {maxRetries: ${maxRetries}}\n`);
  return path;
}

async function apply(kube: FakeKube, path: string): Promise<void> {
  const run = await kube.kubectl(['apply', '-f', path]);
  expect(run.code, run.stderr).toBe(0);
}

const ref = (name: string) => ({ plural: 'topicconfigs' as const, namespace: 'default', name });
/** The informer's list of TopicConfigs (its watch has the same path, with ?watch=true). */
const TOPIC_CONFIG_LIST = /^\/apis\/conveyor\.dev\/v1alpha1\/topicconfigs$/;
const TOPIC_CONFIG_WATCH = /\/topicconfigs\?watch=/;

/**
 * The faults here are the Kubernetes API's, and the controller meets them the same way whatever database it
 * writes to: one engine (SQLite). The other controller suites run on both engines; the database's own faults
 * are the MySQL suite below.
 */
describe('controller: Kubernetes API faults', () => {
  const engine = engineByName.sqlite;
  let kube: FakeKube;
  let server: TestServer;
  let controller: TestController;

  beforeAll(async () => {
    kube = await startFakeKube({ bookmarkIntervalMs: 500 });
    server = await startTestServer(engine);
    await apply(kube, 'crds/');
    controller = await startTestController(kube, server.database.url, { controller: { watch_timeout: '3s' } });
    await apply(kube, topicConfig('fault-base'));
    await waitForReady(kube, ref('fault-base'));
  });
  afterAll(async () => {
    await controller?.close();
    await server?.close();
    await kube?.close();
  });

  it('restarts watches that were dropped, cleanly or abruptly', async () => {
    kube.dropWatches('destroy');
    await apply(kube, topicConfig('after-destroy'));
    await waitForReady(kube, ref('after-destroy'));
    kube.dropWatches('close');
    await apply(kube, topicConfig('after-close'));
    await waitForReady(kube, ref('after-close'));
    expect(await metricValue(controller.api, 'conveyor_controller_watch_restarts_total', { kind: 'TopicConfig' })).toBeGreaterThanOrEqual(1);
  });

  it('re-lists after 410 Gone when its resourceVersion was compacted away', async () => {
    kube.compact();
    kube.dropWatches('close');
    await apply(kube, topicConfig('after-compaction'));
    await waitForReady(kube, ref('after-compaction'));
  });

  it('backs off a watch whose stream keeps failing (an ERROR event other than 410) instead of reopening it at once, and recovers', async () => {
    const before = kube.requests.length;
    const remove = kube.failWatchStreams({ pathPattern: TOPIC_CONFIG_WATCH, status: 500, message: 'etcdserver: request timed out' });
    kube.dropWatches('close');
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const watches = kube.requests.slice(before).filter((r) => TOPIC_CONFIG_WATCH.test(`${r.path}?${r.query}`)).length;
    // At once, then after 1 s and 3 s (doubling): a handful, not a loop as fast as the API server answers.
    expect(watches).toBeGreaterThanOrEqual(2);
    expect(watches).toBeLessThanOrEqual(4);
    remove();
    await apply(kube, topicConfig('after-stream-errors'));
    await waitForReady(kube, ref('after-stream-errors'), 'True', undefined, 15_000);
  });

  it('restarts a watch that went silent (no event, no bookmark)', async () => {
    const release = kube.hangRequests({ pathPattern: /watch=(true|1)/ });
    kube.dropWatches('destroy');
    await new Promise((resolve) => setTimeout(resolve, 500));
    release();
    await apply(kube, topicConfig('after-silence'));
    await waitForReady(kube, ref('after-silence'));
  });

  // watch_timeout is 3 s in this suite; the retry after it waits 1 s.
  it('abandons a watch request that gets no answer within the watch timeout, and watches again', async () => {
    const release = kube.hangRequests({ method: 'GET', pathPattern: TOPIC_CONFIG_WATCH, count: 1 });
    kube.dropWatches('destroy');
    await apply(kube, topicConfig('after-hung-watch'));
    await waitForReady(kube, ref('after-hung-watch'), 'True', undefined, 15_000);
    release();
  });

  it('abandons a list that gets no answer within the watch timeout (after a 410), and lists again', async () => {
    // The watch is answered 410, so the informer lists afresh; the API server accepts that list and never answers it.
    const removeGone = kube.failRequests({ method: 'GET', pathPattern: TOPIC_CONFIG_WATCH, status: 410, count: 1 });
    const release = kube.hangRequests({ method: 'GET', pathPattern: TOPIC_CONFIG_LIST, count: 1 });
    kube.dropWatches('close');
    await apply(kube, topicConfig('after-hung-list'));
    await waitForReady(kube, ref('after-hung-list'), 'True', undefined, 15_000);
    release();
    removeGone();
  });

  it('reports unready while its lists get no answer, and converges once they do', async () => {
    const removeGone = kube.failRequests({ method: 'GET', pathPattern: TOPIC_CONFIG_WATCH, status: 410, count: 1 });
    const release = kube.hangRequests({ method: 'GET', pathPattern: TOPIC_CONFIG_LIST });
    kube.dropWatches('close');
    await expect.poll(async () => (await controller.api.get('/readyz')).body.error, { timeout: 10_000, interval: 250 }).toBe('Kubernetes API unreachable');
    await apply(kube, topicConfig('after-unanswered-lists'));
    release();
    removeGone();
    await waitForReady(kube, ref('after-unanswered-lists'), 'True', undefined, 20_000);
    await expect.poll(async () => (await controller.api.get('/readyz')).status, { timeout: 10_000, interval: 250 }).toBe(200);
  });

  it('survives the API server being away for 30 s and converges afterwards, without a restart', async () => {
    await kube.goAway();
    await expect.poll(async () => (await controller.api.get('/readyz')).status, { timeout: 15_000 }).toBe(503);
    expect((await controller.api.get('/readyz')).body.error).toBe('Kubernetes API unreachable');
    expect((await controller.api.get('/healthz')).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 30_000));
    await kube.comeBack();
    await apply(kube, topicConfig('after-outage'));
    await waitForReady(kube, ref('after-outage'), 'True', undefined, 45_000);
    // Each informer retries on its own capped backoff (30 s at most).
    await expect.poll(async () => (await controller.api.get('/readyz')).status, { timeout: 45_000, interval: 250 }).toBe(200);
  }, 150_000);

  it('stops reconciling at once when it cannot renew its lease, and resumes when it leads again', async () => {
    expect(controller.isLeader()).toBe(true);
    const restore = kube.failRequests({ pathPattern: /\/leases\//, status: 500 });
    // renew deadline 2 s in these tests
    await expect.poll(() => controller.isLeader(), { timeout: 5000, interval: 50 }).toBe(false);
    expect(await metricValue(controller.api, 'conveyor_controller_leader', {})).toBe(0);
    await apply(kube, topicConfig('while-not-leading'));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(kube.get({ group: 'conveyor.dev', version: 'v1alpha1', plural: 'topicconfigs', namespace: 'default', name: 'while-not-leading' })?.status).toBeUndefined();
    restore();
    await waitForReady(kube, ref('while-not-leading'));
    expect(controller.isLeader()).toBe(true);
  });

  it('stops counting managed resources when it stops leading, and counts them again when it leads', async () => {
    const managed = (kind: string, ready: string) => metricValue(controller.api, 'conveyor_controller_managed_resources', { kind, ready });
    expect(await managed('TopicConfig', 'true')).toBeGreaterThan(0);
    const restore = kube.failRequests({ pathPattern: /\/leases\//, status: 500 });
    await expect.poll(() => controller.isLeader(), { timeout: 5000, interval: 50 }).toBe(false);
    for (const kind of ['TopicConfig', 'TopicSchema', 'ConsumerGroup']) for (const ready of ['true', 'false']) expect(await managed(kind, ready), `${kind} ready=${ready}`).toBe(0);
    restore();
    await expect.poll(() => managed('TopicConfig', 'true'), { timeout: 10_000 }).toBeGreaterThan(0);
  });

  it('steps down by its renew deadline when lease requests get no answer at all, and leads again once they do', async () => {
    expect(controller.isLeader()).toBe(true);
    // An API server (or a load balancer in front of it) that accepts the requests and never answers them.
    const release = kube.hangRequests({ pathPattern: /\/leases\// });
    const hungAt = Date.now();
    await expect.poll(() => controller.isLeader(), { timeout: 5000, interval: 50 }).toBe(false);
    // renew deadline 2 s, retry period 250 ms in these tests: the last renew was at most one retry period ago.
    expect(Date.now() - hungAt).toBeLessThan(2600);
    await apply(kube, topicConfig('while-unanswered'));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(kube.get({ group: 'conveyor.dev', version: 'v1alpha1', plural: 'topicconfigs', namespace: 'default', name: 'while-unanswered' })?.status).toBeUndefined();
    release();
    await waitForReady(kube, ref('while-unanswered'));
    expect(controller.isLeader()).toBe(true);
  });

  it('retries failed status writes with backoff', async () => {
    const remove = kube.failRequests({ method: 'PATCH', pathPattern: /\/status$/, status: 500, count: 3 });
    await apply(kube, topicConfig('status-flaky'));
    await waitForReady(kube, ref('status-flaky'));
    remove();
  });
});

// A SQLite file cannot go away under an open connection; a MySQL server can, through a TCP proxy.
const mysqlUrl = inject('mysqlUrl');
(mysqlUrl ? describe : describe.skip)('controller: database down for 10 s [mysql]', () => {
  let kube: FakeKube;
  let server: TestServer;
  let controller: TestController;
  let proxy: TcpProxy;

  beforeAll(async () => {
    kube = await startFakeKube();
    const database = await engineByName.mysql.createDatabase();
    server = await startTestServer(engineByName.mysql, { database });
    const real = new URL(database.url);
    proxy = await startTcpProxy(real.hostname, Number(real.port || 3306));
    const viaProxy = new URL(database.url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    await apply(kube, 'crds/');
    controller = await startTestController(kube, viaProxy.toString());
    await apply(kube, topicConfig('db-before'));
    await waitForReady(kube, ref('db-before'));
  });
  afterAll(async () => {
    await controller?.close();
    await server?.close();
    await server?.database.drop();
    await kube?.close();
  });

  it('reports DatabaseError while the database is away, then recovers by itself', async () => {
    await proxy.cut();
    await apply(kube, topicConfig('db-during'));
    await waitForReady(kube, ref('db-during'), 'False', 'DatabaseError');
    expect((await controller.api.get('/readyz')).body.error).toBe('database unavailable');
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    await proxy.restore();
    await waitForReady(kube, ref('db-during'), 'True', undefined, 30_000);
    await expect.poll(async () => (await server.api.get('/api/topic-configs/db-during')).body.max_retries, { timeout: 5000 }).toBe(2);
    await expect.poll(async () => (await controller.api.get('/readyz')).status, { timeout: 10_000 }).toBe(200);
  }, 60_000);
});
