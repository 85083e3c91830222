/**
 * The chart for many teams on one cluster (issue 44): each release's controller is its own instance, topic
 * ownership and adopt_existing come from the values, and ClusterRoles aggregated to the built-in roles let
 * namespace editors manage Conveyor resources. The controller's behaviour itself: test/controller-instances.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import type { Config } from '../src/config/schema.js';
import { CHART, EXPLICIT_AUTH, helm, helmTemplate, validateObject, type K8sObject } from './helpers/helm.js';

// The auth values given (helm template cannot look up a generated Secret): test/chart-gitops.test.ts.
const EXTERNAL = [...EXPLICIT_AUTH, '--set', 'database.embedded=false', '--set', 'database.url=mysql://conveyor:s3cret@mysql.db.svc:3306/conveyor'];

/** The controller's conveyor.yaml as rendered (the ConfigMap the controller Deployment mounts). */
function controllerConfig(objects: K8sObject[]): Config {
  const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.data?.['conveyor.yaml'])!;
  const dir = mkdtempSync(join(tmpdir(), 'conveyor-chart-instances-'));
  try {
    const path = join(dir, 'conveyor.yaml');
    writeFileSync(path, configMap.data['conveyor.yaml']);
    return loadConfig({ configPath: path, env: {} });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const leaseRule = (objects: K8sObject[]) =>
  objects.filter((o) => o.kind === 'Role').flatMap((r) => r.rules).find((rule: any) => rule.resources.includes('leases') && rule.resourceNames);

describe('two releases in one cluster', () => {
  const releases: Record<string, K8sObject[]> = {};
  beforeAll(async () => {
    const ownership = ['--set', 'controller.topicOwnership.team-orders={orders,orders.*}', '--set', 'controller.topicOwnership.team-payments={payments.*}'];
    releases.staging = (await helmTemplate([...EXTERNAL, ...ownership, '--set', 'controller.adoptExisting=false'], { release: 'staging', namespace: 'conveyor-staging' })).objects;
    releases.production = (await helmTemplate(EXTERNAL, { release: 'production', namespace: 'conveyor-production' })).objects;
  }, 60_000);

  it('each controller is the instance of its release name, with its own Lease, granted by name', () => {
    for (const [release, objects] of Object.entries(releases)) {
      const config = controllerConfig(objects);
      expect(config.controller.instance).toBe(release);
      expect(config.controller.lease_name).toBe('conveyor-controller');
      expect(leaseRule(objects).resourceNames).toEqual([`conveyor-controller-${release}`]);
    }
  });

  it('topic ownership and adopt_existing reach the controller as the service reads them', () => {
    const staging = controllerConfig(releases.staging).controller;
    expect(staging.topic_ownership).toBe('team-orders=orders,orders.*;team-payments=payments.*');
    expect(staging.adopt_existing).toBe(false);
    const production = controllerConfig(releases.production).controller;
    expect(production.topic_ownership).toBe('');
    expect(production.adopt_existing).toBe(true);
  });

  it('ClusterRoles aggregated to admin/edit (manage) and view (read) Conveyor resources, named per release', () => {
    const names = new Set<string>();
    for (const objects of Object.values(releases)) {
      const roles = objects.filter((o) => o.kind === 'ClusterRole' && Object.keys(o.metadata.labels ?? {}).some((l) => l.startsWith('rbac.authorization.k8s.io/aggregate-to-')));
      expect(roles).toHaveLength(2);
      for (const role of roles) {
        expect(validateObject(role)).toEqual([]);
        names.add(role.metadata.name);
        // Aggregated roles grant nothing by themselves: no binding of the chart refers to them.
        expect(objects.some((o) => o.roleRef?.name === role.metadata.name)).toBe(false);
      }
      const [edit, view] = ['aggregate-to-edit', 'aggregate-to-view'].map((label) => roles.find((r) => r.metadata.labels![`rbac.authorization.k8s.io/${label}`] === 'true')!);
      expect(edit.metadata.labels!['rbac.authorization.k8s.io/aggregate-to-admin']).toBe('true');
      const resources = ['topicconfigs', 'topicschemas', 'consumergroups', 'conveyoraccesses'];
      expect(edit.rules).toEqual([{ apiGroups: ['conveyor.dev'], resources, verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'] }]);
      expect(view.rules).toEqual([{ apiGroups: ['conveyor.dev'], resources, verbs: ['get', 'list', 'watch'] }]);
      expect(view.metadata.labels!['rbac.authorization.k8s.io/aggregate-to-edit']).toBeUndefined();
    }
    // Cluster-wide names: two releases must not claim the same object.
    expect(names.size).toBe(4);
  });

  it('rbac.aggregateToDefaultRoles=false renders no aggregated ClusterRole', async () => {
    const { objects } = await helmTemplate([...EXTERNAL, '--set', 'rbac.aggregateToDefaultRoles=false']);
    expect(objects.filter((o) => o.kind === 'ClusterRole').map((o) => o.metadata.labels)).not.toContainEqual(expect.objectContaining({ 'rbac.authorization.k8s.io/aggregate-to-view': 'true' }));
  });
});

describe('values', () => {
  it('controller.instance overrides the release name (two releases of one name in two namespaces)', async () => {
    const { objects } = await helmTemplate([...EXTERNAL, '--set', 'controller.instance=orders-eu'], { release: 'conveyor', namespace: 'eu' });
    expect(controllerConfig(objects).controller.instance).toBe('orders-eu');
    expect(leaseRule(objects).resourceNames).toEqual(['conveyor-controller-orders-eu']);
  });

  it('refuses an instance that cannot name a label and finalizer, and a topic pattern grants could not hold', async () => {
    const failing = async (args: string[]) => {
      const result = await helm(['template', 'conveyor', CHART, ...EXTERNAL, ...args]);
      expect(result.code).not.toBe(0);
      return result.stderr;
    };
    expect(await failing(['--set', 'controller.instance=Staging'])).toMatch(/\/controller\/instance/);
    expect(await failing(['--set', 'controller.topicOwnership.team-a={orders/eu}'])).toMatch(/\/controller\/topicOwnership\/team-a\/0/);
    expect(await failing(['--set', 'controller.topicOwnership.Team_A={orders}'])).toMatch(/'Team_A' does not match pattern/);
  });
});
