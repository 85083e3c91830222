import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1';
import { Namespace } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { crdValidator } from './fake-kube/index.js';

const readDocs = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => ({ file: f, doc: d.toJSON() as any })))
    .filter(({ doc }) => doc);

const crds = readDocs('crds');
const validate = crdValidator(crds.map((c) => c.doc));
const examples = readDocs('deploy/examples');

describe('CRDs and example manifests', () => {
  it('ships one valid CustomResourceDefinition per kind, with status, short names, category and printer columns', () => {
    expect(crds.map((c) => c.doc.spec.names.kind).sort()).toEqual(['ConsumerGroup', 'ConveyorAccess', 'TopicConfig', 'TopicSchema']);
    for (const { doc } of crds) {
      new CustomResourceDefinition(doc).validate();
      expect(doc.spec.group).toBe('conveyor.dev');
      expect(doc.spec.scope).toBe('Namespaced');
      expect(doc.spec.names.categories).toEqual(['conveyor']);
      expect(doc.spec.names.shortNames.length).toBeGreaterThan(0);
      const [version] = doc.spec.versions;
      expect(version.name).toBe('v1alpha1');
      expect(version.subresources).toEqual({ status: {} });
      // A ConveyorAccess names a ServiceAccount, not one topic.
      const what = doc.spec.names.kind === 'ConveyorAccess' ? 'ServiceAccount' : 'Topic';
      expect(version.additionalPrinterColumns.map((c: any) => c.name)).toEqual(expect.arrayContaining([what, 'Ready', 'Reason', 'Age']));
    }
  });

  it('validates every example manifest against the CRD schemas', () => {
    const custom = examples.filter(({ doc }) => doc.apiVersion === 'conveyor.dev/v1alpha1');
    expect(new Set(custom.map(({ doc }) => doc.kind))).toEqual(new Set(['TopicConfig', 'TopicSchema', 'ConsumerGroup']));
    for (const { file, doc } of custom) expect(validate(doc), `${file}: ${doc.kind} ${doc.metadata.name}`).toEqual([]);
    for (const { doc } of examples.filter(({ doc }) => doc.kind === 'Namespace')) new Namespace(doc).validate();
  });

  const orders = examples.find(({ doc }) => doc.kind === 'TopicConfig' && doc.metadata.name === 'orders')!.doc;
  const schema = examples.find(({ doc }) => doc.kind === 'TopicSchema')!.doc;
  const group = examples.find(({ doc }) => doc.kind === 'ConsumerGroup')!.doc;
  const broken: Array<[string, any, string]> = [
    ['maxDepth 0', { ...orders, spec: { ...orders.spec, maxDepth: 0 } }, 'spec.maxDepth'],
    ['a negative maxRetries', { ...orders, spec: { ...orders.spec, maxRetries: -1 } }, 'spec.maxRetries'],
    // Above 2^53 - 1 the controller could not hold the number exactly (and would refuse it for good).
    ['a maxDepth past the largest exact integer', { ...orders, spec: { ...orders.spec, maxDepth: 2 ** 53 } }, 'spec.maxDepth'],
    ['a throughputLimit past the largest exact integer', { ...orders, spec: { ...orders.spec, throughputLimit: 2 ** 53 } }, 'spec.throughputLimit'],
    ['a delivery delay past 7 days', { ...orders, spec: { ...orders.spec, deliveryDelaySeconds: 604_801 } }, 'spec.deliveryDelaySeconds'],
    ['a negative retry backoff', { ...orders, spec: { ...orders.spec, retryBackoffSeconds: -1 } }, 'spec.retryBackoffSeconds'],
    ['a string where a number goes', { ...orders, spec: { ...orders.spec, messageTtlSeconds: '1h' } }, 'spec.messageTtlSeconds'],
    ['an unknown deletionPolicy', { ...orders, spec: { ...orders.spec, deletionPolicy: 'Keep' } }, 'spec.deletionPolicy'],
    ['a dead-letter topic', { ...orders, spec: { ...orders.spec, topic: 'orders.dlq' } }, 'reserved for dead-letter topics'],
    ['a topic with a space', { ...orders, spec: { ...orders.spec, topic: 'my orders' } }, 'spec.topic'],
    ['a schema without its topic', { ...schema, spec: { schema: schema.spec.schema } }, 'spec.topic'],
    ['a group without its topic', { ...group, spec: {} }, 'spec.topic'],
  ];
  for (const [what, doc, field] of broken) {
    it(`refuses ${what}`, () => {
      const errors = validate(doc);
      expect(errors.join('\n')).toContain(field);
    });
  }

  const access = {
    apiVersion: 'conveyor.dev/v1alpha1',
    kind: 'ConveyorAccess',
    metadata: { name: 'billing', namespace: 'team-orders' },
    spec: {
      serviceAccount: 'billing',
      grants: [
        { action: 'read', topicPattern: 'orders.*' },
        { action: 'consume', topicPattern: 'orders', consumerGroup: 'billing' },
      ],
    },
  };
  const grant = (g: Record<string, unknown>) => ({ ...access, spec: { ...access.spec, grants: [g] } });
  const brokenAccess: Array<[string, any, string]> = [
    ['a ConveyorAccess without its serviceAccount', { ...access, spec: { grants: [] } }, 'spec.serviceAccount'],
    ['a ServiceAccount name that is no DNS subdomain', { ...access, spec: { ...access.spec, serviceAccount: 'Billing_SA' } }, 'spec.serviceAccount'],
    ['an unknown grant action', grant({ action: 'delete', topicPattern: 'orders' }), 'spec.grants[0].action'],
    ['a grant without its topicPattern', grant({ action: 'read' }), 'spec.grants[0].topicPattern'],
    ['a topic pattern with a star inside', grant({ action: 'read', topicPattern: 'or*ders' }), 'spec.grants[0].topicPattern'],
    ['a consume grant without its consumerGroup', grant({ action: 'consume', topicPattern: 'orders' }), 'a consume grant names its consumerGroup'],
    ['a consumerGroup on a read grant', grant({ action: 'read', topicPattern: 'orders', consumerGroup: 'billing' }), 'a consume grant names its consumerGroup'],
  ];
  it('accepts a ConveyorAccess with topic and consume grants', () => {
    expect(validate(access)).toEqual([]);
    expect(validate({ ...access, spec: { serviceAccount: 'billing', deletionPolicy: 'Retain' } })).toEqual([]);
  });
  for (const [what, doc, field] of brokenAccess) {
    it(`refuses ${what}`, () => {
      expect(validate(doc).join('\n')).toContain(field);
    });
  }

  it('keeps spec.serviceAccount immutable, the grants editable', () => {
    expect(validate({ ...access, spec: { ...access.spec, serviceAccount: 'shipping' } }, access).join('\n')).toContain('spec.serviceAccount is immutable');
    expect(validate({ ...access, spec: { ...access.spec, grants: [] } }, access)).toEqual([]);
  });

  it('keeps spec.topic and spec.group immutable', () => {
    const moved = { ...group, spec: { ...group.spec, topic: 'elsewhere' } };
    expect(validate(moved, group).join('\n')).toContain('spec.topic is immutable');
    const renamed = { ...group, spec: { ...group.spec, group: 'other' } };
    expect(validate(renamed, group).join('\n')).toContain('spec.group is immutable');
    expect(validate({ ...group, spec: { ...group.spec, deletionPolicy: 'Retain' } }, group)).toEqual([]);
  });
});
