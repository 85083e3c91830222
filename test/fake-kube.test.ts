// Proves test/fake-kube (the fake Kubernetes API server) with the real clients: kubectl and
// @kubernetes/client-node. Nothing here calls the fake's internals except the documented test API.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { applyPatch, crdValidator, mergePatch, startFakeKube, type FakeKube } from './fake-kube/index.js';

const CRD_FILE = fileURLToPath(new URL('./fake-kube/fixtures/widgets.yaml', import.meta.url));
const CRD = YAML.parse(readFileSync(CRD_FILE, 'utf8'));
const GROUP = 'test.conveyor.dev';
const VERSION = 'v1alpha1';
const PLURAL = 'widgets';
const CRD_REF = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', name: 'widgets.test.conveyor.dev' };

const widgetYaml = (name: string, spec: Record<string, unknown>) =>
  YAML.stringify({ apiVersion: `${GROUP}/${VERSION}`, kind: 'Widget', metadata: { name }, spec });

/** Collects items and lets a test await the first moment a predicate holds (no polling). */
class Log<T> {
  readonly items: T[] = [];
  private waiters: Array<{ pred: (items: T[]) => boolean; resolve: () => void }> = [];
  push = (item: T) => {
    this.items.push(item);
    this.waiters = this.waiters.filter((w) => (w.pred(this.items) ? (w.resolve(), false) : true));
  };
  waitFor(pred: (items: T[]) => boolean, what: string, timeoutMs = 5000): Promise<void> {
    if (pred(this.items)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.items).slice(0, 2000)}`)),
        timeoutMs,
      );
      this.waiters.push({
        pred,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }
}

/** The parsed Status of a client-node ApiException. */
function statusOf(e: unknown): any {
  expect(e).toBeInstanceOf(k8s.ApiException);
  const body = (e as k8s.ApiException<unknown>).body;
  return typeof body === 'string' ? JSON.parse(body) : body;
}

async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected the call to fail');
}

// =====================================================================================================
describe('fake kube-apiserver with the real kubectl', () => {
  let fk: FakeKube;
  beforeAll(async () => {
    fk = await startFakeKube();
  });
  afterAll(async () => {
    await fk?.close();
  });

  it('applies a CRD with default flags (validation on), which becomes Established and served', async () => {
    const r = await fk.kubectl(['apply', '-f', CRD_FILE]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe('customresourcedefinition.apiextensions.k8s.io/widgets.test.conveyor.dev created');
    const crd = fk.get(CRD_REF);
    const established = crd.status.conditions.find((c: any) => c.type === 'Established');
    expect(established.status).toBe('True');
    expect(crd.status.acceptedNames).toMatchObject({ kind: 'Widget', plural: 'widgets', shortNames: ['wdg'] });
    // kubectl learnt from /openapi/v3 that the server supports field validation, and asked for it
    expect(fk.requests.some((q) => q.method === 'POST' && /fieldValidation=Strict/.test(q.query))).toBe(true);
  });

  it('lists the kind with its short name in api-resources', async () => {
    const r = await fk.kubectl(['api-resources', '--api-group', GROUP]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^widgets\s+wdg\s+test\.conveyor\.dev\/v1alpha1\s+true\s+Widget\s*$/m);
    // kubectl asked for aggregated discovery, got the legacy documents, and fell back to per-group lists
    expect(fk.requests.some((q) => q.path === `/apis/${GROUP}/${VERSION}` && q.status === 200)).toBe(true);
  });

  it('applies a custom resource, prints the printer columns and serves defaults', async () => {
    const r = await fk.kubectl(['apply', '-f', '-'], { input: widgetYaml('orders', { topic: 'orders.events' }) });
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe('widget.test.conveyor.dev/orders created');

    const table = await fk.kubectl(['get', PLURAL]);
    expect(table.code).toBe(0);
    const [header, row] = table.stdout.trim().split('\n');
    expect(header.split(/\s+/)).toEqual(['NAME', 'TOPIC', 'MAX-DEPTH', 'READY', 'AGE']);
    expect(row).toMatch(/^orders\s+orders\.events\s+1000\s+\d+s$/);

    const y = await fk.kubectl(['get', 'widget', 'orders', '-o', 'yaml']);
    expect(y.code).toBe(0);
    const obj = YAML.parse(y.stdout);
    expect(obj.spec).toEqual({ topic: 'orders.events', maxDepth: 1000, mode: 'fifo', retention: { seconds: 86400 } });
    expect(obj.metadata.generation).toBe(1);
    expect(obj.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(obj.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('re-applies a changed field: merge patch, generation 2, last-applied annotation kept', async () => {
    const r = await fk.kubectl(['apply', '-f', '-'], { input: widgetYaml('orders', { topic: 'orders.events', maxDepth: 5 }) });
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe('widget.test.conveyor.dev/orders configured');
    expect(fk.requests.some((q) => q.method === 'PATCH' && q.contentType === 'application/merge-patch+json')).toBe(true);
    const obj = fk.get({ group: GROUP, version: VERSION, plural: PLURAL, namespace: 'default', name: 'orders' });
    expect(obj.metadata.generation).toBe(2);
    expect(obj.spec.maxDepth).toBe(5);
    const lastApplied = JSON.parse(obj.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']);
    expect(lastApplied.spec).toEqual({ topic: 'orders.events', maxDepth: 5 });
  });

  it('refuses an invalid resource with the field messages', async () => {
    const r = await fk.kubectl(['apply', '-f', '-'], { input: widgetYaml('bad', { topic: 'Bad Topic', maxDepth: 0 }) });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('The Widget "bad" is invalid');
    expect(r.stderr).toContain('spec.maxDepth: Invalid value: 0: spec.maxDepth in body should be greater than or equal to 1');
    expect(r.stderr).toContain(`spec.topic: Invalid value: "Bad Topic": spec.topic in body should match '^[a-z][a-z0-9.-]*$'`);
    const dlq = await fk.kubectl(['apply', '-f', '-'], { input: widgetYaml('dlq', { topic: 'orders.dlq' }) });
    expect(dlq.code).not.toBe(0);
    expect(dlq.stderr).toContain('spec.topic: Invalid value: "string": topic must not end with .dlq');
    const unknown = await fk.kubectl(['apply', '-f', '-'], { input: widgetYaml('unk', { topic: 'a', colour: 'red' }) });
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain(
      'Widget in version "v1alpha1" cannot be handled as a Widget: strict decoding error: unknown field "spec.colour"',
    );
    expect(fk.list({ group: GROUP, version: VERSION, plural: PLURAL }).map((w) => w.metadata.name)).toEqual(['orders']);
  });

  it('refuses a change of an immutable field with the CEL rule message', async () => {
    const r = await fk.kubectl(['apply', '-f', '-'], { input: widgetYaml('orders', { topic: 'other.events', maxDepth: 5 }) });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('The Widget "orders" is invalid: spec.topic: Invalid value: "string": topic is immutable');
    const obj = fk.get({ group: GROUP, version: VERSION, plural: PLURAL, namespace: 'default', name: 'orders' });
    expect(obj.spec.topic).toBe('orders.events');
  });

  it('patches the status subresource (kubectl --subresource=status) and shows it in a printer column', async () => {
    const r = await fk.kubectl([
      'patch', 'widget', 'orders', '--subresource=status', '--type=merge',
      '-p', JSON.stringify({ status: { conditions: [{ type: 'Ready', status: 'True' }] } }),
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const obj = fk.get({ group: GROUP, version: VERSION, plural: PLURAL, namespace: 'default', name: 'orders' });
    expect(obj.metadata.generation).toBe(2);
    const table = await fk.kubectl(['get', 'wdg']);
    expect(table.stdout.trim().split('\n')[1]).toMatch(/^orders\s+orders\.events\s+5\s+True\s+\d+s$/);
  });

  it('deletes', async () => {
    const r = await fk.kubectl(['delete', 'widget', 'orders']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^widget\.test\.conveyor\.dev "orders" deleted( from default namespace)?$/); // kubectl 1.35 names the namespace
    expect(fk.get({ group: GROUP, version: VERSION, plural: PLURAL, namespace: 'default', name: 'orders' })).toBeUndefined();
    const empty = await fk.kubectl(['get', PLURAL]);
    expect(empty.stderr.trim()).toBe('No resources found in default namespace.');
  });

  it('re-applies a CronJob with a strategic merge patch that keeps list items merged by key', async () => {
    const cron = (schedule: string, image: string) =>
      YAML.stringify({
        apiVersion: 'batch/v1',
        kind: 'CronJob',
        metadata: { name: 'reaper' },
        spec: {
          schedule,
          jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'reaper', image, args: ['reap'] }] } } } },
        },
      });
    expect((await fk.kubectl(['apply', '-f', '-'], { input: cron('*/5 * * * *', 'conveyor:1') })).code).toBe(0);
    const r = await fk.kubectl(['apply', '-f', '-'], { input: cron('*/10 * * * *', 'conveyor:2') });
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe('cronjob.batch/reaper configured');
    expect(fk.requests.some((q) => q.method === 'PATCH' && q.contentType === 'application/strategic-merge-patch+json')).toBe(true);
    const cj = fk.get({ group: 'batch', version: 'v1', plural: 'cronjobs', namespace: 'default', name: 'reaper' });
    expect(cj.spec.schedule).toBe('*/10 * * * *');
    expect(cj.spec.jobTemplate.spec.template.spec.containers).toEqual([{ name: 'reaper', image: 'conveyor:2', args: ['reap'] }]);
    expect(cj.metadata.generation).toBe(2);
  });

  it('stops serving a kind, and drops its objects, when its CRD is deleted', async () => {
    expect((await fk.kubectl(['apply', '-f', '-'], { input: widgetYaml('last', { topic: 'last' }) })).code).toBe(0);
    const r = await fk.kubectl(['delete', '-f', CRD_FILE]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe('customresourcedefinition.apiextensions.k8s.io "widgets.test.conveyor.dev" deleted');
    const get = await fk.kubectl(['get', PLURAL]);
    expect(get.code).not.toBe(0);
    expect(get.stderr).toContain(`the server doesn't have a resource type "${PLURAL}"`);
    expect(fk.list({ group: GROUP, version: VERSION, plural: PLURAL })).toEqual([]);
    const res = await fetch(`${fk.url}/apis/${GROUP}/${VERSION}/namespaces/default/${PLURAL}`);
    expect(res.status).toBe(404);
  });
});

// =====================================================================================================
describe('fake kube-apiserver with the real @kubernetes/client-node', () => {
  let fk: FakeKube;
  let kc: k8s.KubeConfig;
  let co: k8s.CustomObjectsApi;
  const ns = 'cn';
  const ref = { group: GROUP, version: VERSION, plural: PLURAL };
  const widget = (name: string, spec: Record<string, unknown> = { topic: name }, extra: Record<string, unknown> = {}) => ({
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'Widget',
    metadata: { name, ...extra },
    spec,
  });

  beforeAll(async () => {
    fk = await startFakeKube({ bookmarkIntervalMs: 50 });
    kc = new k8s.KubeConfig();
    kc.loadFromFile(fk.writeKubeconfig());
    co = kc.makeApiClient(k8s.CustomObjectsApi);
    // Typed client-node APIs serialize through their models: a plain YAML object would lose `default`,
    // `x-kubernetes-validations`, ... (the models name them `_default`, `xKubernetesValidations`), so the
    // CRD goes through k8s.loadYaml, which maps the YAML onto the models.
    const body = k8s.loadYaml<k8s.V1CustomResourceDefinition>(readFileSync(CRD_FILE, 'utf8'));
    const crd = await kc.makeApiClient(k8s.ApiextensionsV1Api).createCustomResourceDefinition({ body });
    expect(crd.status?.conditions?.map((c) => `${c.type}=${c.status}`)).toEqual(['NamesAccepted=True', 'Established=True']);
    expect(fk.get(CRD_REF).spec).toMatchObject(CRD.spec);
  });
  afterAll(async () => {
    await fk?.close();
  });

  it('creates, gets, lists and replaces; a stale resourceVersion is a 409 Conflict', async () => {
    const created: any = await co.createNamespacedCustomObject({ ...ref, namespace: ns, body: widget('a') });
    expect(created.metadata).toMatchObject({ name: 'a', namespace: ns, generation: 1 });
    expect(created.spec.maxDepth).toBe(1000);
    const got: any = await co.getNamespacedCustomObject({ ...ref, namespace: ns, name: 'a' });
    expect(got.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    await co.createNamespacedCustomObject({ ...ref, namespace: ns, body: widget('b', { topic: 'b' }, { labels: { tier: 'x' } }) });
    const list: any = await co.listNamespacedCustomObject({ ...ref, namespace: ns });
    expect(list.kind).toBe('WidgetList');
    expect(list.items.map((i: any) => i.metadata.name)).toEqual(['a', 'b']);
    expect(Number(list.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(created.metadata.resourceVersion));
    const selected: any = await co.listNamespacedCustomObject({ ...ref, namespace: ns, labelSelector: 'tier in (x,y)' });
    expect(selected.items.map((i: any) => i.metadata.name)).toEqual(['b']);

    const all: any = await co.listClusterCustomObject({ ...ref });
    expect(all.items.map((i: any) => `${i.metadata.namespace}/${i.metadata.name}`)).toEqual(['cn/a', 'cn/b']);
    const page1: any = await co.listNamespacedCustomObject({ ...ref, namespace: ns, limit: 1 });
    expect(page1.items.map((i: any) => i.metadata.name)).toEqual(['a']);
    const page2: any = await co.listNamespacedCustomObject({ ...ref, namespace: ns, limit: 1, _continue: page1.metadata.continue });
    expect(page2.items.map((i: any) => i.metadata.name)).toEqual(['b']);
    expect(page2.metadata.continue).toBeUndefined();
    const dry: any = await co.createNamespacedCustomObject({ ...ref, namespace: ns, body: widget('dry'), dryRun: 'All' });
    expect(dry.spec.maxDepth).toBe(1000);
    expect(fk.get({ ...ref, namespace: ns, name: 'dry' })).toBeUndefined();

    const replaced: any = await co.replaceNamespacedCustomObject({
      ...ref,
      namespace: ns,
      name: 'a',
      body: { ...got, spec: { ...got.spec, maxDepth: 7 } },
    });
    expect(replaced.metadata.generation).toBe(2);
    expect(Number(replaced.metadata.resourceVersion)).toBeGreaterThan(Number(got.metadata.resourceVersion));

    const e = await rejection(
      co.replaceNamespacedCustomObject({ ...ref, namespace: ns, name: 'a', body: { ...got, spec: { ...got.spec, maxDepth: 8 } } }),
    );
    expect(e.code).toBe(409);
    expect(statusOf(e)).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'Conflict',
      code: 409,
      message:
        'Operation cannot be fulfilled on widgets.test.conveyor.dev "a": the object has been modified; please apply your changes to the latest version and try again',
      details: { name: 'a', group: GROUP, kind: 'widgets' },
    });
    const dup = await rejection(co.createNamespacedCustomObject({ ...ref, namespace: ns, body: widget('a') }));
    expect(statusOf(dup)).toMatchObject({ reason: 'AlreadyExists', code: 409, message: 'widgets.test.conveyor.dev "a" already exists' });
    const missing = await rejection(co.getNamespacedCustomObject({ ...ref, namespace: ns, name: 'nope' }));
    expect(statusOf(missing)).toMatchObject({ reason: 'NotFound', code: 404, message: 'widgets.test.conveyor.dev "nope" not found' });
  });

  it('returns a 422 Invalid with causes, and JSON patch (the generated default) with a failing test op is a 422', async () => {
    const e = await rejection(co.createNamespacedCustomObject({ ...ref, namespace: ns, body: widget('inv', { topic: 'inv', maxDepth: 0 }) }));
    expect(statusOf(e)).toMatchObject({
      reason: 'Invalid',
      code: 422,
      message: 'Widget.test.conveyor.dev "inv" is invalid: spec.maxDepth: Invalid value: 0: spec.maxDepth in body should be greater than or equal to 1',
      details: {
        name: 'inv',
        group: GROUP,
        kind: 'Widget',
        causes: [
          { reason: 'FieldValueInvalid', field: 'spec.maxDepth', message: 'Invalid value: 0: spec.maxDepth in body should be greater than or equal to 1' },
        ],
      },
    });
    const p = await rejection(
      co.patchNamespacedCustomObject({ ...ref, namespace: ns, name: 'a', body: [{ op: 'test', path: '/spec/topic', value: 'zzz' }] }),
    );
    expect(statusOf(p)).toMatchObject({ code: 422, reason: 'Invalid', details: { causes: [{ message: 'testing value /spec/topic failed: test failed' }] } });
    expect(fk.requests.at(-1)?.contentType).toBe('application/json-patch+json');
  });

  it('merge-patches status through the status subresource without bumping generation; spec writes do', async () => {
    const before: any = await co.getNamespacedCustomObject({ ...ref, namespace: ns, name: 'a' });
    const st: any = await co.patchNamespacedCustomObjectStatus(
      {
        ...ref,
        namespace: ns,
        name: 'a',
        // a status write ignores everything but status
        body: { spec: { maxDepth: 99 }, status: { observedGeneration: before.metadata.generation, conditions: [{ type: 'Ready', status: 'True' }] } },
      },
      mergePatch(),
    );
    expect(fk.requests.at(-1)).toMatchObject({ method: 'PATCH', contentType: 'application/merge-patch+json', status: 200 });
    expect(st.status.conditions).toEqual([{ type: 'Ready', status: 'True' }]);
    expect(st.spec.maxDepth).toBe(before.spec.maxDepth);
    expect(st.metadata.generation).toBe(before.metadata.generation);
    expect(Number(st.metadata.resourceVersion)).toBeGreaterThan(Number(before.metadata.resourceVersion));

    // a main-resource write ignores status and bumps generation for the spec change
    const spec: any = await co.patchNamespacedCustomObject(
      { ...ref, namespace: ns, name: 'a', body: { spec: { maxDepth: 42 }, status: { conditions: [] } } },
      mergePatch(),
    );
    expect(spec.metadata.generation).toBe(before.metadata.generation + 1);
    expect(spec.status.conditions).toEqual([{ type: 'Ready', status: 'True' }]);

    // status writes check resourceVersion too
    const stale = await rejection(
      co.replaceNamespacedCustomObjectStatus({ ...ref, namespace: ns, name: 'a', body: { ...st, status: { observedGeneration: 9 } } }),
    );
    expect(statusOf(stale).reason).toBe('Conflict');
  });

  it('runs the finalizer flow: delete sets deletionTimestamp, removing the last finalizer deletes', async () => {
    const created: any = await co.createNamespacedCustomObject({
      ...ref,
      namespace: ns,
      body: widget('fin', { topic: 'fin' }, { finalizers: ['conveyor.dev/cleanup'] }),
    });
    const seen = new Log<string>();
    const ctrl = await new k8s.Watch(kc).watch(
      `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}`,
      { resourceVersion: created.metadata.resourceVersion, fieldSelector: 'metadata.name=fin' },
      (type, obj) => seen.push(`${type} ${obj.metadata.deletionTimestamp ? 'deleting' : 'live'} ${(obj.metadata.finalizers ?? []).length}`),
      () => {},
    );
    const deleting: any = await co.deleteNamespacedCustomObject({ ...ref, namespace: ns, name: 'fin' });
    expect(deleting.metadata.deletionTimestamp).toMatch(/Z$/);
    expect(deleting.metadata.deletionGracePeriodSeconds).toBe(0);
    expect(deleting.metadata.generation).toBe(2);
    expect(fk.get({ ...ref, namespace: ns, name: 'fin' })).toBeDefined();

    const add = await rejection(
      co.patchNamespacedCustomObject(
        { ...ref, namespace: ns, name: 'fin', body: { metadata: { finalizers: ['conveyor.dev/cleanup', 'other/x'] } } },
        mergePatch(),
      ),
    );
    expect(statusOf(add).message).toContain(
      'metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"other/x"}',
    );

    const gone: any = await co.patchNamespacedCustomObject(
      { ...ref, namespace: ns, name: 'fin', body: { metadata: { finalizers: null } } },
      mergePatch(),
    );
    expect(gone.metadata.name).toBe('fin');
    expect(fk.get({ ...ref, namespace: ns, name: 'fin' })).toBeUndefined();
    await seen.waitFor((e) => e.some((x) => x.startsWith('DELETED')), 'DELETED');
    expect(seen.items).toEqual(['MODIFIED deleting 1', 'MODIFIED deleting 0', 'DELETED deleting 0']);
    ctrl.abort();
    const missing = await rejection(co.getNamespacedCustomObject({ ...ref, namespace: ns, name: 'fin' }));
    expect(missing.code).toBe(404);
  });

  it('accepts Lease MicroTimes from V1MicroTime and refuses a 3-digit fraction with 400', async () => {
    const coord = kc.makeApiClient(k8s.CoordinationV1Api);
    const lease = await coord.createNamespacedLease({
      namespace: ns,
      body: {
        metadata: { name: 'leader' },
        spec: { holderIdentity: 'pod-a', leaseDurationSeconds: 15, acquireTime: new k8s.V1MicroTime(), renewTime: new k8s.V1MicroTime() },
      },
    });
    expect(String(lease.spec?.renewTime)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    lease.spec!.renewTime = new k8s.V1MicroTime(Date.now() + 1000);
    lease.spec!.holderIdentity = 'pod-b';
    const renewed = await coord.replaceNamespacedLease({ namespace: ns, name: 'leader', body: lease });
    expect(renewed.spec?.holderIdentity).toBe('pod-b');

    // a plain Date serializes with three fractional digits: the server cannot decode it
    const plain = new Date('2026-11-23T10:00:00.123Z').toISOString();
    const post = await fetch(`${fk.url}/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer anything' },
      body: JSON.stringify({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'other' }, spec: { renewTime: plain } }),
    });
    expect(post.status).toBe(400);
    expect(fk.get({ group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespace: ns, name: 'other' })).toBeUndefined();
    const put = await fetch(`${fk.url}/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/leader`, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...renewed, spec: { ...renewed.spec, renewTime: plain } }),
    });
    expect(put.status).toBe(400);
    const status: any = await put.json();
    expect(status).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400 });
    expect(status.message).toBe(
      'Lease in version "v1" cannot be handled as a Lease: parsing time "2026-11-23T10:00:00.123Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".123Z" as ".000000"',
    );
    // (a merge patch producing such a value is refused as an invalid patch, 422, like the real patch handler does)
    const patch = await fetch(`${fk.url}/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/leader`, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/merge-patch+json' },
      body: JSON.stringify({ spec: { renewTime: plain } }),
    });
    expect(patch.status).toBe(422);
    expect(((await patch.json()) as any).message).toContain('patch: Invalid value:');
  });

  it('server-side applies (apply-patch+yaml with a fieldManager): creates when absent, merges when present', async () => {
    const apply = (spec: Record<string, unknown>) =>
      co.patchNamespacedCustomObject(
        { ...ref, namespace: ns, name: 'ssa', fieldManager: 'conveyor-operator', body: widget('ssa', spec) },
        applyPatch(),
      );
    const created: any = await apply({ topic: 'ssa', maxDepth: 3 });
    expect(fk.requests.at(-1)).toMatchObject({ method: 'PATCH', contentType: 'application/apply-patch+yaml', status: 201 });
    expect(created.spec).toMatchObject({ topic: 'ssa', maxDepth: 3 });
    const merged: any = await apply({ topic: 'ssa', mode: 'priority' });
    expect(merged.spec).toMatchObject({ topic: 'ssa', maxDepth: 3, mode: 'priority' });
    expect(merged.metadata.generation).toBe(2);
    const noManager = await rejection(co.patchNamespacedCustomObject({ ...ref, namespace: ns, name: 'ssa', body: widget('ssa') }, applyPatch()));
    expect(statusOf(noManager)).toMatchObject({ code: 400, reason: 'BadRequest' });
  });

  it('creates a CronJob and merge-patches spec.schedule / spec.suspend', async () => {
    const batch = kc.makeApiClient(k8s.BatchV1Api);
    await batch.createNamespacedCronJob({
      namespace: ns,
      body: {
        metadata: { name: 'reaper' },
        spec: {
          schedule: '*/5 * * * *',
          jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'reaper', image: 'conveyor:1' }] } } } },
        },
      },
    });
    const patched = await batch.patchNamespacedCronJob(
      { namespace: ns, name: 'reaper', body: { spec: { schedule: '*/15 * * * *', suspend: true } } },
      mergePatch(),
    );
    expect(patched.spec?.schedule).toBe('*/15 * * * *');
    expect(patched.spec?.suspend).toBe(true);
    expect(patched.spec?.jobTemplate.spec?.template.spec?.containers[0].image).toBe('conveyor:1');
    expect(patched.metadata?.generation).toBe(2);
  });

  it('creates core v1 Events (generateName) and selects them by involvedObject', async () => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const ev = await core.createNamespacedEvent({
      namespace: ns,
      body: {
        metadata: { generateName: 'a.' },
        involvedObject: { apiVersion: `${GROUP}/${VERSION}`, kind: 'Widget', name: 'a', namespace: ns },
        reason: 'Reconciled',
        message: 'ok',
        type: 'Normal',
      },
    });
    expect(ev.metadata?.name).toMatch(/^a\.[a-z0-9]{5}$/);
    const list = await core.listNamespacedEvent({ namespace: ns, fieldSelector: 'involvedObject.kind=Widget,involvedObject.name=a' });
    expect(list.items.map((i) => i.reason)).toEqual(['Reconciled']);
  });

  it('validates manifests offline with the same code (crdValidator)', () => {
    const validate = crdValidator([CRD]);
    expect(validate(widget('ok'))).toEqual([]);
    expect(validate(widget('bad', { topic: 'x.dlq', maxDepth: 0 }))).toEqual([
      'spec.maxDepth: Invalid value: 0: spec.maxDepth in body should be greater than or equal to 1',
      'spec.topic: Invalid value: "string": topic must not end with .dlq',
    ]);
    expect(validate(widget('m', { topic: 'new' }), widget('m', { topic: 'old' }))).toEqual([
      'spec.topic: Invalid value: "string": topic is immutable',
    ]);
  });

  // ---------------------------------------------------------------------------------------------- watches

  it('streams ADDED/MODIFIED/DELETED and BOOKMARK events to Watch', async () => {
    const wns = 'watch';
    const log = new Log<{ type: string; obj: any }>();
    const done = new Log<unknown>();
    const start: any = await co.listNamespacedCustomObject({ ...ref, namespace: wns });
    const ctrl = await new k8s.Watch(kc).watch(
      `/apis/${GROUP}/${VERSION}/namespaces/${wns}/${PLURAL}`,
      { allowWatchBookmarks: true, resourceVersion: start.metadata.resourceVersion },
      (type, obj) => log.push({ type, obj }),
      (err) => done.push(err),
    );
    await co.createNamespacedCustomObject({ ...ref, namespace: wns, body: widget('w1') });
    await co.patchNamespacedCustomObject({ ...ref, namespace: wns, name: 'w1', body: { spec: { maxDepth: 3 } } }, mergePatch());
    await co.deleteNamespacedCustomObject({ ...ref, namespace: wns, name: 'w1' });
    await log.waitFor((items) => items.some((i) => i.type === 'DELETED'), 'DELETED');
    const changes = log.items.filter((i) => i.type !== 'BOOKMARK');
    expect(changes.map((i) => `${i.type} ${i.obj.metadata.name}`)).toEqual(['ADDED w1', 'MODIFIED w1', 'DELETED w1']);
    expect(changes[1].obj.spec.maxDepth).toBe(3);
    await log.waitFor((items) => items.some((i) => i.type === 'BOOKMARK'), 'a BOOKMARK');
    const bm = log.items.find((i) => i.type === 'BOOKMARK')!.obj;
    expect(bm).toMatchObject({ kind: 'Widget', apiVersion: `${GROUP}/${VERSION}` });
    expect(Number(bm.metadata.resourceVersion)).toBeGreaterThan(0);
    ctrl.abort();
  });

  it('answers a watch from a compacted resourceVersion with a 410 Expired ERROR event, then ends it', async () => {
    const old: any = await co.createNamespacedCustomObject({ ...ref, namespace: 'compact', body: widget('c1') });
    await co.patchNamespacedCustomObject({ ...ref, namespace: 'compact', name: 'c1', body: { spec: { maxDepth: 4 } } }, mergePatch());
    fk.compact();
    const log = new Log<{ type: string; obj: any }>();
    const done = new Log<unknown>();
    await new k8s.Watch(kc).watch(
      `/apis/${GROUP}/${VERSION}/namespaces/compact/${PLURAL}`,
      { resourceVersion: old.metadata.resourceVersion },
      (type, obj) => log.push({ type, obj }),
      (err) => done.push(err ?? 'clean end'),
    );
    await done.waitFor((d) => d.length > 0, 'the watch to end');
    expect(done.items[0]).toBe('clean end');
    expect(log.items).toHaveLength(1);
    expect(log.items[0].type).toBe('ERROR');
    expect(log.items[0].obj).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'Expired', code: 410 });
    expect(log.items[0].obj.message).toMatch(new RegExp(`^too old resource version: ${old.metadata.resourceVersion} \\(\\d+\\)$`));
  });

  it('drives an informer: add/update/delete, a re-list after 410, an error when the watch socket is destroyed', async () => {
    const ins = 'informer';
    const path = `/apis/${GROUP}/${VERSION}/namespaces/${ins}/${PLURAL}`;
    const informer = k8s.makeInformer<any>(kc, path, () => co.listNamespacedCustomObject({ ...ref, namespace: ins }));
    const events = new Log<string>();
    informer.on('add', (o) => events.push(`add ${o.metadata.name}`));
    informer.on('update', (o) => events.push(`update ${o.metadata.name} ${o.spec.maxDepth}`));
    informer.on('delete', (o) => events.push(`delete ${o.metadata.name}`));
    informer.on('connect', () => events.push('connect'));
    informer.on('error', (e: any) => events.push(`error ${e?.message ?? e}`));
    await co.createNamespacedCustomObject({ ...ref, namespace: ins, body: widget('i1') });
    await informer.start();
    await events.waitFor((e) => e.includes('add i1'), 'add i1');
    await co.createNamespacedCustomObject({ ...ref, namespace: ins, body: widget('i2') });
    await co.patchNamespacedCustomObject({ ...ref, namespace: ins, name: 'i1', body: { spec: { maxDepth: 9 } } }, mergePatch());
    await co.deleteNamespacedCustomObject({ ...ref, namespace: ins, name: 'i2' });
    await events.waitFor((e) => e.includes('delete i2'), 'delete i2');
    expect(events.items.filter((e) => e !== 'connect')).toEqual(['add i1', 'add i2', 'update i1 9', 'delete i2']);

    // history compacted, watch ended cleanly: the informer resumes from its resourceVersion, gets 410,
    // and re-lists by itself (a change made meanwhile shows up)
    const listsBefore = fk.requests.filter((r) => r.method === 'GET' && r.path === path && !/watch=true/.test(r.query)).length;
    fk.compact();
    fk.dropWatches('close');
    await co.patchNamespacedCustomObject({ ...ref, namespace: ins, name: 'i1', body: { spec: { maxDepth: 10 } } }, mergePatch());
    await events.waitFor((e) => e.includes('update i1 10'), 'update after re-list');
    const lists = fk.requests.filter((r) => r.method === 'GET' && r.path === path && !/watch=true/.test(r.query));
    expect(lists.length).toBe(listsBefore + 1);
    const expiredWatch = fk.requests.filter((r) => r.path === path && /watch=true/.test(r.query)).at(-2);
    expect(expiredWatch?.status).toBe(200);
    expect(informer.list(ins).map((o) => o.metadata.name)).toEqual(['i1']);

    // (the re-list delivered `10`; an event through the new watch proves the watch is open again)
    await co.patchNamespacedCustomObject({ ...ref, namespace: ins, name: 'i1', body: { spec: { maxDepth: 11 } } }, mergePatch());
    await events.waitFor((e) => e.includes('update i1 11'), 'update through the new watch');

    // abrupt socket loss: the informer reports an error and stops (client-node behaviour)
    const watchesBefore = fk.requests.filter((r) => r.path === path && /watch=true/.test(r.query)).length;
    fk.dropWatches('destroy');
    await events.waitFor((e) => e.some((x) => x.startsWith('error ')), 'an informer error');
    await co.patchNamespacedCustomObject({ ...ref, namespace: ins, name: 'i1', body: { spec: { maxDepth: 12 } } }, mergePatch());
    expect(fk.requests.filter((r) => r.path === path && /watch=true/.test(r.query)).length).toBe(watchesBefore);
    expect(events.items).not.toContain('update i1 12');
    // ...and a controller restarting it catches up
    await informer.start();
    await events.waitFor((e) => e.includes('update i1 12'), 'update after restart');
    await informer.stop();
  });

  it('goes away (ECONNREFUSED) and comes back on the same port', async () => {
    await co.createNamespacedCustomObject({ ...ref, namespace: ns, body: widget('away') });
    await fk.goAway();
    const e = await rejection(co.getNamespacedCustomObject({ ...ref, namespace: ns, name: 'away' }));
    expect(e.code).toBe('ECONNREFUSED');
    await fk.comeBack();
    const back: any = await co.getNamespacedCustomObject({ ...ref, namespace: ns, name: 'away' });
    expect(back.metadata.name).toBe('away');
    expect(new URL(kc.getCurrentCluster()!.server).port).toBe(String(fk.port));
  });

  it('fails matching requests with a Status for `count` times, and until removed', async () => {
    const removeOnce = fk.failRequests({ method: 'GET', pathPattern: /\/widgets\/a$/, status: 503, count: 1 });
    const e = await rejection(co.getNamespacedCustomObject({ ...ref, namespace: ns, name: 'a' }));
    expect(e.code).toBe(503);
    expect(statusOf(e)).toMatchObject({ kind: 'Status', status: 'Failure', code: 503, reason: 'ServiceUnavailable' });
    expect(((await co.getNamespacedCustomObject({ ...ref, namespace: ns, name: 'a' })) as any).metadata.name).toBe('a');
    removeOnce();

    const remove = fk.failRequests({ method: 'PATCH', pathPattern: /\/status$/, status: 429, reason: 'TooManyRequests' });
    for (let i = 0; i < 2; i++) {
      const t = await rejection(co.patchNamespacedCustomObjectStatus({ ...ref, namespace: ns, name: 'a', body: { status: {} } }, mergePatch()));
      expect(statusOf(t)).toMatchObject({ code: 429, reason: 'TooManyRequests' });
    }
    remove();
    await co.patchNamespacedCustomObjectStatus({ ...ref, namespace: ns, name: 'a', body: { status: { observedGeneration: 3 } } }, mergePatch());
    expect(fk.get({ ...ref, namespace: ns, name: 'a' }).status.observedGeneration).toBe(3);
  });

  it('hangs matching requests until the rule is removed, which drops their sockets', async () => {
    const release = fk.hangRequests({ method: 'GET', pathPattern: /\/widgets\/b$/ });
    const outcome = co.getNamespacedCustomObject({ ...ref, namespace: ns, name: 'b' }).then(
      () => 'answered',
      (err) => err,
    );
    // other requests are unaffected meanwhile
    expect(((await co.getNamespacedCustomObject({ ...ref, namespace: ns, name: 'a' })) as any).metadata.name).toBe('a');
    const pending = await Promise.race([outcome, new Promise((r) => setTimeout(() => r('pending'), 200))]);
    expect(pending).toBe('pending');
    expect(fk.requests.some((r) => r.path.endsWith('/widgets/b') && r.status === 0)).toBe(true);
    release();
    const err: any = await outcome;
    expect(err).toBeInstanceOf(Error);
    expect(err.code).toBe('ECONNRESET');
    expect(((await co.getNamespacedCustomObject({ ...ref, namespace: ns, name: 'b' })) as any).metadata.name).toBe('b');
  });
});

// =====================================================================================================
describe('fake kube-apiserver: workloads, owner references and garbage collection', () => {
  let fk: FakeKube;
  let core: k8s.CoreV1Api;
  let apps: k8s.AppsV1Api;
  let batch: k8s.BatchV1Api;
  const ns = 'owners';
  const spec = { containers: [{ name: 'c', image: 'busybox' }] };
  const ownerRef = (obj: { metadata?: k8s.V1ObjectMeta }, kind: string, controller = true) => ({
    apiVersion: 'apps/v1',
    kind,
    name: obj.metadata!.name!,
    uid: obj.metadata!.uid!,
    controller,
    blockOwnerDeletion: true,
  });

  beforeAll(async () => {
    fk = await startFakeKube();
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(fk.writeKubeconfig());
    core = kc.makeApiClient(k8s.CoreV1Api);
    apps = kc.makeApiClient(k8s.AppsV1Api);
    batch = kc.makeApiClient(k8s.BatchV1Api);
  });
  afterAll(async () => {
    await fk?.close();
  });

  it('serves pods, replicasets and deployments (short names for kubectl), with 404s for what is not there', async () => {
    const r = await fk.kubectl(['api-resources', '--api-group', 'apps']);
    expect(r.stdout).toMatch(/^deployments\s+deploy\s+apps\/v1\s+true\s+Deployment\s*$/m);
    expect(r.stdout).toMatch(/^replicasets\s+rs\s+apps\/v1\s+true\s+ReplicaSet\s*$/m);
    expect(statusOf(await rejection(core.readNamespacedPod({ name: 'nope', namespace: ns }))).message).toBe('pods "nope" not found');
    expect(statusOf(await rejection(apps.readNamespacedDeployment({ name: 'nope', namespace: ns }))).message).toBe('deployments.apps "nope" not found');
    const pod = await core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'solo' }, spec } });
    expect(pod.metadata?.resourceVersion).toMatch(/^\d+$/);
    expect((await core.readNamespacedPod({ name: 'solo', namespace: ns })).metadata?.uid).toBe(pod.metadata?.uid);
  });

  it('refuses owner references without a uid, and two controllers, with the API server\'s messages', async () => {
    const missing = statusOf(
      await rejection(core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'p1', ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: '' }] }, spec } })),
    );
    expect(missing.reason).toBe('Invalid');
    expect(missing.message).toContain('metadata.ownerReferences.uid: Invalid value: "": must not be empty');
    const refs = [
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'a', uid: '1', controller: true },
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'b', uid: '2', controller: true },
    ];
    const two = statusOf(await rejection(core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'p2', ownerReferences: refs }, spec } })));
    expect(two.message).toContain('Only one reference can have Controller set to true. Found "true" in references for ReplicaSet/a and ReplicaSet/b');
  });

  it('deleting an owner deletes its dependents down the chain; one with another live owner only loses the reference; Orphan keeps them', async () => {
    const deployment = await apps.createNamespacedDeployment({ namespace: ns, body: { metadata: { name: 'web' }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec } } } });
    const rs = await apps.createNamespacedReplicaSet({ namespace: ns, body: { metadata: { name: 'web-1', ownerReferences: [ownerRef(deployment, 'Deployment')] }, spec: { selector: { matchLabels: { a: 'b' } } } } });
    await core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'web-1-x', ownerReferences: [ownerRef(rs, 'ReplicaSet')] }, spec } });
    const keeper = await apps.createNamespacedDeployment({ namespace: ns, body: { metadata: { name: 'keeper' }, spec: { selector: { matchLabels: { k: 'v' } }, template: { metadata: { labels: { k: 'v' } }, spec } } } });
    const shared = await batch.createNamespacedCronJob({
      namespace: ns,
      body: {
        metadata: { name: 'shared', ownerReferences: [ownerRef(deployment, 'Deployment'), ownerRef(keeper, 'Deployment', false)] },
        spec: { schedule: '* * * * *', jobTemplate: { spec: { template: { spec: { ...spec, restartPolicy: 'Never' } } } } },
      },
    });

    expect((await fk.kubectl(['-n', ns, 'delete', 'deployment', 'web'])).code).toBe(0);
    expect(fk.get({ group: 'apps', version: 'v1', plural: 'replicasets', namespace: ns, name: 'web-1' })).toBeUndefined();
    expect(fk.get({ group: '', version: 'v1', plural: 'pods', namespace: ns, name: 'web-1-x' })).toBeUndefined();
    const left = fk.get({ group: 'batch', version: 'v1', plural: 'cronjobs', namespace: ns, name: 'shared' });
    expect(left.metadata.ownerReferences.map((r: any) => r.name)).toEqual(['keeper']);
    expect(Number(left.metadata.resourceVersion)).toBeGreaterThan(Number(shared.metadata!.resourceVersion));

    // Orphan: the dependents stay, without the reference.
    await apps.deleteNamespacedDeployment({ name: 'keeper', namespace: ns, body: { propagationPolicy: 'Orphan' } });
    expect(fk.get({ group: 'batch', version: 'v1', plural: 'cronjobs', namespace: ns, name: 'shared' }).metadata.ownerReferences).toBeUndefined();
  });
});
