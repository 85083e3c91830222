// Discovery (/version, /api, /apis, resource lists) and the OpenAPI documents kubectl needs.
//
// kubectl 1.32 asks for aggregated discovery (apidiscovery.k8s.io/v2) first; answering the legacy
// documents with Content-Type application/json makes it fall back to /api/v1 and /apis/<g>/<v>.
// `kubectl apply` (default --validate=strict) reads /openapi/v3 to learn whether the server supports
// the fieldValidation parameter (it does: PATCH operations list it, so kubectl sends fieldValidation=Strict
// and skips client-side schema validation) and reads /openapi/v2 as protobuf (an empty protobuf body is a
// valid empty document, which makes kubectl fall back to its built-in types for strategic merge patches).
import { createHash } from 'node:crypto';
import type { Registry, ResourceType } from './resources.js';

export const SERVER_VERSION = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2026-01-01T00:00:00Z',
  goVersion: 'go1.23.4',
  compiler: 'gc',
  platform: 'linux/amd64',
};

const gvString = (group: string, version: string) => (group ? `${group}/${version}` : version);

export function apiVersions(hostPort: string): any {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: hostPort }],
  };
}

function apiGroup(g: { name: string; versions: string[] }): any {
  const versions = g.versions.map((v) => ({ groupVersion: gvString(g.name, v), version: v }));
  return { name: g.name, versions, preferredVersion: versions[0] };
}

export function apiGroupList(reg: Registry): any {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: reg.groups().filter((g) => g.name !== '').map(apiGroup) };
}

export function apiGroupDoc(reg: Registry, group: string): any | undefined {
  const g = reg.groups().find((x) => x.name === group);
  return g ? { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(g) } : undefined;
}

const storageVersionHash = (t: ResourceType) =>
  createHash('sha256').update(`${t.group}/${t.version}/${t.kind}`).digest('base64').slice(0, 11);

export function apiResourceList(reg: Registry, group: string, version: string): any | undefined {
  const types = reg.all().filter((t) => t.group === group && t.version === version);
  if (!types.length) return undefined;
  const resources: any[] = [];
  for (const t of types) {
    const r: any = {
      name: t.plural,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: t.verbs,
      storageVersionHash: storageVersionHash(t),
    };
    if (t.shortNames.length) r.shortNames = t.shortNames;
    if (t.categories.length) r.categories = t.categories;
    resources.push(r);
    if (t.statusSubresource)
      resources.push({ name: `${t.plural}/status`, singularName: '', namespaced: t.namespaced, kind: t.kind, verbs: ['get', 'patch', 'update'] });
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gvString(group, version), resources };
}

// ---------------------------------------------------------------------------------------------
// OpenAPI

export const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';

export const openApiV2Json = (): any => ({
  swagger: '2.0',
  info: { title: 'Kubernetes', version: SERVER_VERSION.gitVersion },
  paths: {},
  definitions: {},
});

const gvPath = (group: string, version: string) => (group ? `apis/${group}/${version}` : `api/${version}`);

function definitionName(t: ResourceType): string {
  if (t.crdName) return `${t.group.split('.').reverse().join('.')}.${t.version}.${t.kind}`;
  if (t.group === 'apiextensions.k8s.io') return `io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.${t.version}.${t.kind}`;
  const g = t.group === '' ? 'core' : t.group.replace(/\.k8s\.io$/, '');
  return `io.k8s.api.${g}.${t.version}.${t.kind}`;
}

const param = (name: string, type = 'string') => ({
  name,
  in: 'query',
  description: name,
  schema: { type, uniqueItems: true },
});
const pathParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string', uniqueItems: true } });

function ops(t: ResourceType, opName: string, ref: string, sub: string): Record<string, unknown> {
  const gvk = { group: t.group, version: t.version, kind: t.kind };
  const json = { 'application/json': { schema: { $ref: ref } } };
  const id = (verb: string) => `${verb}${t.group.replace(/[^A-Za-z0-9]/g, '')}${t.version}${opName}${t.kind}${sub}`;
  // Strategic merge patch is left out even for built-in kinds (which accept it), so that kubectl computes
  // such patches from its compiled-in Go types (which know the merge keys), not from this schema-less document.
  const patchTypes = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'];
  const patchContent = Object.fromEntries(
    patchTypes.map((p) => [p, { schema: { $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch' } }]),
  );
  const write = [param('dryRun'), param('fieldManager'), param('fieldValidation')];
  return {
    get: { operationId: id('read'), responses: { '200': { description: 'OK', content: json } }, 'x-kubernetes-action': 'get', 'x-kubernetes-group-version-kind': gvk },
    put: {
      operationId: id('replace'),
      parameters: write,
      requestBody: { content: { '*/*': { schema: { $ref: ref } } }, required: true },
      responses: { '200': { description: 'OK', content: json } },
      'x-kubernetes-action': 'put',
      'x-kubernetes-group-version-kind': gvk,
    },
    patch: {
      operationId: id('patch'),
      parameters: [...write, param('force', 'boolean')],
      requestBody: { content: patchContent, required: true },
      responses: { '200': { description: 'OK', content: json } },
      'x-kubernetes-action': 'patch',
      'x-kubernetes-group-version-kind': gvk,
    },
  };
}

export function openApiV3Doc(reg: Registry, group: string, version: string): any | undefined {
  const types = reg.all().filter((t) => t.group === group && t.version === version);
  if (!types.length) return undefined;
  const prefix = group ? `/apis/${group}/${version}` : `/api/${version}`;
  const paths: Record<string, any> = {};
  const schemas: Record<string, any> = {
    'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta': { type: 'object' },
    'io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta': { type: 'object' },
    'io.k8s.apimachinery.pkg.apis.meta.v1.Patch': { type: 'object' },
    'io.k8s.apimachinery.pkg.apis.meta.v1.Status': { type: 'object' },
  };
  for (const t of types) {
    const def = definitionName(t);
    const ref = `#/components/schemas/${def}`;
    const gvkExt = [{ group: t.group, version: t.version, kind: t.kind }];
    const base = t.schema ? structuredClone(t.schema.schema) : { type: 'object' };
    base.properties = {
      ...(base.properties ?? {}),
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { allOf: [{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' }] },
    };
    if (!t.schema) base['x-kubernetes-preserve-unknown-fields'] = true;
    base['x-kubernetes-group-version-kind'] = gvkExt;
    schemas[def] = base;
    schemas[`${def}List`] = {
      type: 'object',
      required: ['items'],
      properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, items: { type: 'array', items: { $ref: ref } } },
      'x-kubernetes-group-version-kind': [{ group: t.group, version: t.version, kind: t.listKind }],
    };
    const coll = t.namespaced ? `${prefix}/namespaces/{namespace}/${t.plural}` : `${prefix}/${t.plural}`;
    const nsParams = t.namespaced ? [pathParam('namespace')] : [];
    paths[coll] = {
      get: {
        operationId: `list${t.kind}`,
        responses: { '200': { description: 'OK', content: { 'application/json': { schema: { $ref: `${ref}List` } } } } },
        'x-kubernetes-action': 'list',
        'x-kubernetes-group-version-kind': gvkExt[0],
      },
      post: {
        operationId: `create${t.kind}`,
        parameters: [param('dryRun'), param('fieldManager'), param('fieldValidation')],
        requestBody: { content: { '*/*': { schema: { $ref: ref } } }, required: true },
        responses: { '201': { description: 'Created', content: { 'application/json': { schema: { $ref: ref } } } } },
        'x-kubernetes-action': 'post',
        'x-kubernetes-group-version-kind': gvkExt[0],
      },
      parameters: nsParams,
    };
    paths[`${coll}/{name}`] = { ...ops(t, '', ref, ''), parameters: [pathParam('name'), ...nsParams] };
    if (t.statusSubresource)
      paths[`${coll}/{name}/status`] = { ...ops(t, '', ref, 'Status'), parameters: [pathParam('name'), ...nsParams] };
    if (t.namespaced)
      paths[`${prefix}/${t.plural}`] = {
        get: {
          operationId: `list${t.kind}ForAllNamespaces`,
          responses: { '200': { description: 'OK', content: { 'application/json': { schema: { $ref: `${ref}List` } } } } },
          'x-kubernetes-action': 'list',
          'x-kubernetes-group-version-kind': gvkExt[0],
        },
      };
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: SERVER_VERSION.gitVersion },
    paths,
    components: { schemas },
  };
}

export const docHash = (doc: unknown): string =>
  createHash('sha512').update(JSON.stringify(doc)).digest('hex').toUpperCase();

export function openApiV3Index(reg: Registry): any {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const g of reg.groups())
    for (const v of g.versions) {
      const p = gvPath(g.name, v);
      paths[p] = { serverRelativeURL: `/openapi/v3/${p}?hash=${docHash(openApiV3Doc(reg, g.name, v))}` };
    }
  return { paths };
}
