/**
 * ConveyorAccess (docs/auth.md, "Access granted in Git"): a namespace's resource names one of its
 * ServiceAccounts and its grants; the controller applies them as the grants of the principal
 * `system:serviceaccount:<ns>:<name>`, marked managed (the HTTP API answers 409), repairs drift at resync,
 * revokes (Delete) or releases (Retain) them with the resource, and refuses grants outside the namespace's
 * topics (controller.topic_ownership). Against the fake API server, with a real service-account token.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { patternWithin } from '../src/controller/topic-ownership.js';
import { startFakeKube, type FakeKube } from './fake-kube/index.js';
import { startAuthServer, type AuthServer } from './helpers/auth.js';
import { conveyorResource, readyOf, startTestController, waitForReady, type ResourceRef, type TestController } from './helpers/controller.js';
import { describeEachEngine } from './helpers/engines.js';
import { TestIssuer } from './helpers/kube-issuer.js';

const scratch = mkdtempSync(join(tmpdir(), 'conveyor-access-'));
let manifests = 0;

async function kubectlOk(kube: FakeKube, args: string[]): Promise<string> {
  const run = await kube.kubectl(args);
  expect(run.code, `kubectl ${args.join(' ')}\n${run.stderr}`).toBe(0);
  return run.stdout;
}

async function apply(kube: FakeKube, yaml: string): Promise<void> {
  const path = join(scratch, `m${++manifests}.yaml`);
  writeFileSync(path, yaml);
  await kubectlOk(kube, ['apply', '-f', path]);
}

const access = (namespace: string, name: string, spec: Record<string, unknown>) =>
  `apiVersion: conveyor.dev/v1alpha1\nkind: ConveyorAccess\nmetadata: ${JSON.stringify({ name, namespace })}\nspec: ${JSON.stringify(spec)}\n`;
const ref = (namespace: string, name: string): ResourceRef => ({ plural: 'conveyoraccesses', namespace, name });
const BILLING = 'system:serviceaccount:team-orders:billing';
const grantKey = (g: any) => `${g.action} ${g.topic_pattern}${g.consumer_group ? ` ${g.consumer_group}` : ''}`;

it('a grant pattern is within a namespace\'s pattern only when every topic it matches is', () => {
  const within: Array<[string, string]> = [
    ['orders', 'orders'],
    ['orders', 'orders.*'],
    ['orders.eu', 'orders.*'],
    ['orders.*', 'orders.*'],
    ['orders.eu.*', 'orders.*'],
    ['orders.eu*', 'orders.*'],
    ['orders.*', 'orders*'],
    ['ordersX*', 'orders*'],
    ['*', '*'],
    ['anything.*', '*'],
  ];
  const outside: Array<[string, string]> = [
    ['orders.*', 'orders'],
    ['orders*', 'orders.*'], // orders* also matches ordersX
    ['*', 'orders.*'],
    ['payments', 'orders.*'],
    ['order*', 'orders*'],
    ['ordersX.*', 'orders.*'],
  ];
  for (const [pattern, allowed] of within) expect(patternWithin(pattern, allowed), `${pattern} within ${allowed}`).toBe(true);
  for (const [pattern, allowed] of outside) expect(patternWithin(pattern, allowed), `${pattern} within ${allowed}`).toBe(false);
});

describeEachEngine('controller: ConveyorAccess', (engine) => {
  let kube: FakeKube;
  let issuer: TestIssuer;
  let server: AuthServer;
  let controller: TestController;
  const principal = async (username: string) => (await server.admin.get('/api/users')).body.items.find((u: any) => u.username === username);
  const grantsOf = async (username: string) => {
    const user = await principal(username);
    return user ? ((await server.admin.get(`/api/users/${user.id}/grants`)).body.items as any[]) : [];
  };
  const asBilling = async () => server.api.withToken(await issuer.token({ namespace: 'team-orders', name: 'billing' }));

  beforeAll(async () => {
    kube = await startFakeKube();
    await kubectlOk(kube, ['apply', '-f', 'crds/']);
    issuer = await TestIssuer.start();
    server = await startAuthServer(engine, { overrides: { auth: { kubernetes_enabled: true, kubernetes_issuer: issuer.url } } });
    controller = await startTestController(kube, server.database.url, { controller: { topic_ownership: 'team-orders=orders,orders.*;team-payments=payments.*' } });
  });
  afterAll(async () => {
    await controller?.close();
    await server?.close();
    await issuer?.close();
    await kube?.close();
  });

  it('applies the grants to the service account\'s principal, made for it, marked managed, and the token may use them', async () => {
    await apply(
      kube,
      access('team-orders', 'billing', {
        serviceAccount: 'billing',
        grants: [
          { action: 'write', topicPattern: 'orders.*' },
          { action: 'read', topicPattern: 'orders' },
          { action: 'consume', topicPattern: 'orders', consumerGroup: 'billing' },
        ],
      }),
    );
    const obj = await waitForReady(kube, ref('team-orders', 'billing'));
    expect(readyOf(obj)).toMatchObject({ reason: 'Applied', message: `3 grants applied to ${BILLING}` });
    expect(obj.status).toMatchObject({ principal: BILLING, grants: 3 });
    expect(obj.metadata.finalizers).toEqual(['conveyor.dev/finalizer']);

    expect(await principal(BILLING)).toMatchObject({ username: BILLING, service_account: true, is_admin: false });
    const grants = await grantsOf(BILLING);
    expect(grants.map(grantKey).sort()).toEqual(['consume orders billing', 'read orders', 'write orders.*']);
    for (const g of grants) expect(g.managed_by).toEqual({ kind: 'ConveyorAccess', namespace: 'team-orders', name: 'billing' });

    const billing = await asBilling();
    expect((await billing.enqueue('orders.eu', 'from git')).status).toBe(201);
    expect((await billing.enqueue('payments', 'x')).status).toBe(403);

    const table = await kubectlOk(kube, ['get', 'cac', '-n', 'team-orders']);
    expect(table).toMatch(/billing\s+billing\s+3\s+True\s+Applied/);
    const audit = (await server.admin.get('/api/audit-log?actor=ConveyorAccess team-orders/billing')).body.items;
    expect(audit[0]).toMatchObject({ action: 'access_grants.apply', target: BILLING, topic: null, result: 'ok' });
  });

  it('answers 409 to HTTP changes of managed grants, naming the resource; unmanaged grants stay the API\'s', async () => {
    const user = await principal(BILLING);
    const managed = (await grantsOf(BILLING)).find((g) => g.action === 'write')!;
    const revoke = await server.admin.delete(`/api/users/${user.id}/grants/${managed.id}`);
    expect(revoke.status).toBe(409);
    expect(revoke.body.error).toBe('this grant is managed by ConveyorAccess team-orders/billing; change that Kubernetes resource instead');
    expect((await server.admin.post(`/api/users/${user.id}/grants`, { action: 'write', topic_pattern: 'orders.*' })).status).toBe(409);
    const removeUser = await server.admin.delete(`/api/users/${user.id}`);
    expect(removeUser.status).toBe(409);
    expect(removeUser.body.error).toContain('managed by ConveyorAccess team-orders/billing');

    const extra = await server.admin.post(`/api/users/${user.id}/grants`, { action: 'read', topic_pattern: 'orders.audit' });
    expect(extra.status).toBe(201);
    expect(extra.body.managed_by).toBeNull();
  });

  it('applies an edit: grants left out are revoked (and no longer allowed), those made through the API stay', async () => {
    await apply(
      kube,
      access('team-orders', 'billing', {
        serviceAccount: 'billing',
        grants: [
          { action: 'read', topicPattern: 'orders.*' },
          { action: 'consume', topicPattern: 'orders', consumerGroup: 'billing' },
        ],
      }),
    );
    const obj = await waitForReady(kube, ref('team-orders', 'billing'));
    expect(obj.status.grants).toBe(2);
    expect((await grantsOf(BILLING)).map(grantKey).sort()).toEqual(['consume orders billing', 'read orders.*', 'read orders.audit']);
    // The principal is re-read within the cache's 5 s.
    const billing = await asBilling();
    await expect.poll(async () => (await billing.enqueue('orders.eu', 'x')).status, { timeout: 10_000, interval: 500 }).toBe(403);
  });

  it('puts a grant deleted in the database back at the next resync', async () => {
    const user = await principal(BILLING);
    const row = (await grantsOf(BILLING)).find((g) => g.action === 'consume')!;
    await server.db('grants').where({ id: row.id }).delete();
    await expect.poll(async () => (await grantsOf(BILLING)).map(grantKey).sort(), { timeout: 10_000 }).toEqual(['consume orders billing', 'read orders.*', 'read orders.audit']);
    const back = (await grantsOf(BILLING)).find((g) => g.action === 'consume')!;
    expect(back.managed_by).toMatchObject({ name: 'billing' });
    expect(back.user_id).toBe(user.id);
  });

  it('refuses a grant outside the namespace\'s topics with TopicNotAllowed, applying none of them', async () => {
    await apply(
      kube,
      access('team-orders', 'sneaky', {
        serviceAccount: 'sneaky',
        grants: [
          { action: 'read', topicPattern: 'orders' },
          { action: 'write', topicPattern: 'payments.*' },
        ],
      }),
    );
    const refused = await waitForReady(kube, ref('team-orders', 'sneaky'), 'False', 'TopicNotAllowed');
    expect(readyOf(refused).message).toBe(
      'topic pattern "payments.*" is not within this namespace\'s topics: resources in namespace "team-orders" may grant only within topics matching orders, orders.* (controller.topic_ownership)',
    );
    expect(refused.metadata.finalizers).toBeUndefined();
    expect(await principal('system:serviceaccount:team-orders:sneaky')).toBeUndefined();

    // `*` is every topic: never within a namespace that owns some.
    await apply(kube, access('team-payments', 'all', { serviceAccount: 'all', grants: [{ action: 'read', topicPattern: '*' }] }));
    await waitForReady(kube, ref('team-payments', 'all'), 'False', 'TopicNotAllowed');
  });

  it('reports Invalid for what the schema lets through but the API would refuse (the same grant twice)', async () => {
    await apply(
      kube,
      access('team-orders', 'twice', {
        serviceAccount: 'twice',
        grants: [
          { action: 'read', topicPattern: 'orders' },
          { action: 'read', topicPattern: 'orders' },
        ],
      }),
    );
    const twice = await waitForReady(kube, ref('team-orders', 'twice'), 'False', 'Invalid');
    expect(readyOf(twice).message).toBe('spec.grants[1] repeats spec.grants[0]');

    expect(await principal('system:serviceaccount:team-orders:twice')).toBeUndefined();
  });

  it('a second resource for the same service account is a Conflict; the oldest keeps the grants', async () => {
    await apply(kube, access('team-orders', 'billing-copy', { serviceAccount: 'billing', grants: [{ action: 'admin', topicPattern: 'orders' }] }));
    const conflict = await waitForReady(kube, ref('team-orders', 'billing-copy'), 'False', 'Conflict');
    expect(readyOf(conflict).message).toContain('is already managed by ConveyorAccess team-orders/billing');
    expect((await grantsOf(BILLING)).map(grantKey)).not.toContain('admin orders');
    await kubectlOk(kube, ['delete', 'conveyoraccess', 'billing-copy', '-n', 'team-orders']);
  });

  it('deletionPolicy Delete revokes the resource\'s grants with it; the principal and the API\'s grants stay', async () => {
    await kubectlOk(kube, ['delete', 'cac', 'billing', '-n', 'team-orders', '--wait=false']);
    await expect.poll(() => conveyorResource(kube, ref('team-orders', 'billing')), { timeout: 10_000 }).toBeUndefined();
    expect((await grantsOf(BILLING)).map(grantKey)).toEqual(['read orders.audit']);
    expect(await principal(BILLING)).toBeDefined();
    const events = kube.list({ group: '', version: 'v1', plural: 'events', namespace: 'team-orders' }).filter((e) => e.reason === 'Deleted');
    expect(events.map((e) => e.message)).toContain(`the grants of ${BILLING}: removed (deletionPolicy Delete)`);
  });

  it('deletionPolicy Retain releases the grants to the HTTP API', async () => {
    const shipping = 'system:serviceaccount:team-orders:shipping';
    await apply(kube, access('team-orders', 'shipping', { serviceAccount: 'shipping', deletionPolicy: 'Retain', grants: [{ action: 'read', topicPattern: 'orders.*' }] }));
    await waitForReady(kube, ref('team-orders', 'shipping'));
    await kubectlOk(kube, ['delete', 'cac', 'shipping', '-n', 'team-orders', '--wait=false']);
    await expect.poll(() => conveyorResource(kube, ref('team-orders', 'shipping')), { timeout: 10_000 }).toBeUndefined();
    const [kept] = await grantsOf(shipping);
    expect(kept).toMatchObject({ action: 'read', topic_pattern: 'orders.*', managed_by: null });
    const user = await principal(shipping);
    expect((await server.admin.delete(`/api/users/${user.id}/grants/${kept.id}`)).status).toBe(204);
  });
});
