// The resource types the fake serves: built-in kinds (stored generically) and the kinds of registered
// CustomResourceDefinitions, plus the CRD rules (defaults, validation, status conditions).
import { ApiError, DecodeError, fieldInvalid, fieldRequired, fieldNotSupported, invalid, type FieldError } from './errors.js';
import { compileSchema, SchemaCompileError, type CompiledSchema } from './crd-schema.js';
import { nowTime } from './meta.js';

export interface PrinterColumn {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
}

export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  singular: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  verbs: string[];
  /** Objects of every version of a group/plural share one storage. */
  storageKey: string;
  /** Has a /status subresource (writes to the main resource ignore status, and status writes only status). */
  statusSubresource: boolean;
  printerColumns?: PrinterColumn[];
  /** Set for custom resources. */
  crdName?: string;
  schema?: CompiledSchema;
  /** Extra field selectors (besides metadata.name / metadata.namespace). */
  fieldSelectors: string[];
  /** PUT without metadata.resourceVersion allowed (false for custom resources and CRDs). */
  allowUnconditionalUpdate: boolean;
  /** DELETE answers with the object (custom resources) rather than a Status. */
  returnDeletedObject: boolean;
  /** Names are DNS labels (namespaces) or subdomains (everything else). */
  nameKind: 'subdomain' | 'label';
  /** Extra decode-time checks of built-in kinds (throws DecodeError). */
  decode?: (obj: any) => void;
}

export const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

// ---------------------------------------------------------------------------------------------
// Built-in kinds

const MICROTIME_LAYOUT = '2006-01-02T15:04:05.000000Z07:00';

/** metav1.MicroTime decoding: exactly six fractional digits, as Go's time.Parse with RFC3339Micro demands. */
function checkMicroTime(value: unknown): void {
  if (value === undefined || value === null) return;
  const s = String(value);
  const fail = (rest: string, elem: string) => {
    throw new DecodeError(
      `parsing time ${JSON.stringify(s)} as ${JSON.stringify(MICROTIME_LAYOUT)}: cannot parse ${JSON.stringify(rest)} as ${JSON.stringify(elem)}`,
    );
  };
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(.*)$/.exec(s);
  if (!m) fail(s, '2006');
  const rest = m![2];
  const frac = /^\.\d{6}/.exec(rest);
  if (!frac) fail(rest, '.000000');
  const zone = rest.slice(7);
  if (!/^(Z|[+-]\d{2}:\d{2})$/.test(zone)) fail(zone, 'Z07:00');
}

const builtin = (
  group: string,
  version: string,
  plural: string,
  kind: string,
  opts: Partial<ResourceType> = {},
): ResourceType => ({
  group,
  version,
  plural,
  singular: kind.toLowerCase(),
  kind,
  listKind: `${kind}List`,
  namespaced: true,
  shortNames: [],
  categories: [],
  verbs: ALL_VERBS,
  storageKey: `${group}/${plural}`,
  statusSubresource: false,
  fieldSelectors: [],
  allowUnconditionalUpdate: true,
  returnDeletedObject: false,
  nameKind: 'subdomain',
  ...opts,
});

const EVENT_FIELDS = [
  'involvedObject.kind',
  'involvedObject.namespace',
  'involvedObject.name',
  'involvedObject.uid',
  'involvedObject.apiVersion',
  'involvedObject.resourceVersion',
  'involvedObject.fieldPath',
  'reason',
  'reportingComponent',
  'source',
  'type',
];

export function builtinTypes(): ResourceType[] {
  return [
    builtin('', 'v1', 'namespaces', 'Namespace', {
      namespaced: false,
      shortNames: ['ns'],
      statusSubresource: true,
      nameKind: 'label',
      fieldSelectors: ['status.phase'],
      verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
    }),
    builtin('', 'v1', 'events', 'Event', {
      shortNames: ['ev'],
      fieldSelectors: EVENT_FIELDS,
      decode: (obj) => {
        checkMicroTime(obj?.eventTime);
        checkMicroTime(obj?.series?.lastObservedTime);
      },
    }),
    builtin('', 'v1', 'configmaps', 'ConfigMap', { shortNames: ['cm'] }),
    builtin('', 'v1', 'secrets', 'Secret', { fieldSelectors: ['type'] }),
    builtin('events.k8s.io', 'v1', 'events', 'Event', {
      shortNames: ['ev'],
      fieldSelectors: ['regarding.kind', 'regarding.namespace', 'regarding.name', 'regarding.uid', 'reason', 'type', 'reportingController'],
      decode: (obj) => {
        checkMicroTime(obj?.eventTime);
        checkMicroTime(obj?.series?.lastObservedTime);
      },
    }),
    builtin('coordination.k8s.io', 'v1', 'leases', 'Lease', {
      decode: (obj) => {
        checkMicroTime(obj?.spec?.acquireTime);
        checkMicroTime(obj?.spec?.renewTime);
      },
    }),
    builtin('', 'v1', 'pods', 'Pod', {
      shortNames: ['po'],
      categories: ['all'],
      statusSubresource: true,
      fieldSelectors: ['spec.nodeName', 'spec.restartPolicy', 'spec.schedulerName', 'spec.serviceAccountName', 'status.phase', 'status.podIP', 'status.nominatedNodeName'],
    }),
    // Stored like any other kind: no deployment or replica-set controller runs, so a test creates the
    // ReplicaSet and Pods a Deployment would get (with their ownerReferences) itself.
    builtin('apps', 'v1', 'deployments', 'Deployment', { shortNames: ['deploy'], categories: ['all'], statusSubresource: true }),
    builtin('apps', 'v1', 'replicasets', 'ReplicaSet', { shortNames: ['rs'], categories: ['all'], statusSubresource: true }),
    builtin('batch', 'v1', 'cronjobs', 'CronJob', { shortNames: ['cj'], categories: ['all'], statusSubresource: true }),
    builtin('batch', 'v1', 'jobs', 'Job', { categories: ['all'], statusSubresource: true, fieldSelectors: ['status.successful'] }),
    builtin('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', {
      namespaced: false,
      shortNames: ['crd', 'crds'],
      categories: ['api-extensions'],
      statusSubresource: true,
      allowUnconditionalUpdate: false,
    }),
  ];
}

// ---------------------------------------------------------------------------------------------
// CustomResourceDefinitions

const CRD_GK = { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition' };

/** Kubernetes version priority: GA > beta > alpha > other, higher numbers first. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return { rank: 0, major: 0, minor: 0, s: v };
    return { rank: m[2] === 'alpha' ? 1 : m[2] === 'beta' ? 2 : 3, major: +m[1], minor: m[3] ? +m[3] : 0, s: v };
  };
  const x = parse(a);
  const y = parse(b);
  if (x.rank !== y.rank) return y.rank - x.rank;
  if (x.rank === 0) return x.s < y.s ? -1 : x.s > y.s ? 1 : 0;
  if (x.major !== y.major) return y.major - x.major;
  return y.minor - x.minor;
}

/** Fill in the defaults the API server sets on a CRD (singular, listKind, conversion). In place. */
export function defaultCrd(crd: any): void {
  const spec = (crd.spec ??= {});
  const names = (spec.names ??= {});
  if (names.kind && !names.singular) names.singular = String(names.kind).toLowerCase();
  if (names.kind && !names.listKind) names.listKind = `${names.kind}List`;
  spec.conversion ??= { strategy: 'None' };
}

/** Validate a CRD; returns the field errors (empty when valid). Also compiles the schemas. */
export function validateCrd(crd: any): FieldError[] {
  const errs: FieldError[] = [];
  const spec = crd.spec ?? {};
  const names = spec.names ?? {};
  if (!spec.group) errs.push(fieldRequired('spec.group'));
  if (!names.plural) errs.push(fieldRequired('spec.names.plural'));
  if (!names.kind) errs.push(fieldRequired('spec.names.kind'));
  if (spec.scope !== 'Namespaced' && spec.scope !== 'Cluster')
    errs.push(
      spec.scope
        ? fieldNotSupported('spec.scope', spec.scope, ['Cluster', 'Namespaced'])
        : fieldRequired('spec.scope'),
    );
  if (names.plural && spec.group && crd.metadata?.name !== `${names.plural}.${spec.group}`)
    errs.push(fieldInvalid('metadata.name', crd.metadata?.name ?? '', 'must be spec.names.plural+"."+spec.group'));
  const versions: any[] = Array.isArray(spec.versions) ? spec.versions : [];
  if (!versions.length) errs.push(fieldInvalid('spec.versions', null, 'must have exactly one version marked as storage version'));
  else if (versions.filter((v) => v?.storage).length !== 1)
    errs.push(fieldInvalid('spec.versions', versions, 'must have exactly one version marked as storage version'));
  versions.forEach((v, i) => {
    if (!v?.name) errs.push(fieldRequired(`spec.versions[${i}].name`));
    const schema = v?.schema?.openAPIV3Schema;
    if (!schema) errs.push(fieldRequired(`spec.versions[${i}].schema.openAPIV3Schema`, 'schemas are required'));
    else {
      try {
        compileSchema(schema, `spec.versions[${i}].schema.openAPIV3Schema`);
      } catch (e) {
        if (e instanceof SchemaCompileError) errs.push(...e.errors);
        else throw e;
      }
    }
  });
  return errs;
}

export function assertValidCrd(crd: any): void {
  const errs = validateCrd(crd);
  if (errs.length) throw invalid(CRD_GK, crd?.metadata?.name ?? '', errs);
}

/** The status the apiextensions controllers give an accepted CRD. Keeps transition times of `old`. */
export function crdStatus(crd: any, old?: any): any {
  const names = crd.spec.names;
  const prev = (type: string) =>
    (old?.status?.conditions ?? []).find((c: any) => c?.type === type && c?.status === 'True')?.lastTransitionTime;
  const now = nowTime();
  const acceptedNames: any = { kind: names.kind, listKind: names.listKind, plural: names.plural, singular: names.singular };
  if (names.shortNames?.length) acceptedNames.shortNames = names.shortNames;
  if (names.categories?.length) acceptedNames.categories = names.categories;
  const storage = crd.spec.versions.find((v: any) => v.storage)?.name;
  const stored = new Set<string>(old?.status?.storedVersions ?? []);
  if (storage) stored.add(storage);
  return {
    acceptedNames,
    conditions: [
      {
        type: 'NamesAccepted',
        status: 'True',
        lastTransitionTime: prev('NamesAccepted') ?? now,
        reason: 'NoConflicts',
        message: 'no conflicts found',
      },
      {
        type: 'Established',
        status: 'True',
        lastTransitionTime: prev('Established') ?? now,
        reason: 'InitialNamesAccepted',
        message: 'the initial names have been accepted',
      },
    ],
    storedVersions: [...stored],
  };
}

/** The resource types (one per served version) a valid CRD makes the server serve. */
export function crdTypes(crd: any): ResourceType[] {
  const spec = crd.spec;
  const names = spec.names;
  const out: ResourceType[] = [];
  spec.versions.forEach((v: any, i: number) => {
    if (!v.served) return;
    const schema = compileSchema(v.schema.openAPIV3Schema, `spec.versions[${i}].schema.openAPIV3Schema`);
    out.push({
      group: spec.group,
      version: v.name,
      plural: names.plural,
      singular: names.singular,
      kind: names.kind,
      listKind: names.listKind,
      namespaced: spec.scope === 'Namespaced',
      shortNames: names.shortNames ?? [],
      categories: names.categories ?? [],
      verbs: ALL_VERBS,
      storageKey: `${spec.group}/${names.plural}`,
      statusSubresource: !!v.subresources?.status,
      printerColumns: v.additionalPrinterColumns ?? [],
      crdName: crd.metadata.name,
      schema,
      fieldSelectors: (v.selectableFields ?? []).map((f: any) => String(f.jsonPath).replace(/^\./, '')),
      allowUnconditionalUpdate: false,
      returnDeletedObject: true,
      nameKind: 'subdomain',
    });
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Registry

export class Registry {
  private readonly builtins = builtinTypes();
  private readonly custom = new Map<string, ResourceType[]>(); // crd name -> types

  all(): ResourceType[] {
    return [...this.builtins, ...[...this.custom.values()].flat()];
  }

  find(group: string, version: string, plural: string): ResourceType | undefined {
    return this.all().find((t) => t.group === group && t.version === version && t.plural === plural);
  }

  hasGroupVersion(group: string, version: string): boolean {
    return this.all().some((t) => t.group === group && t.version === version);
  }

  /** Register (or re-register after an update) the kinds of a CRD. */
  setCrd(crd: any): void {
    this.custom.set(crd.metadata.name, crdTypes(crd));
  }

  removeCrd(name: string): ResourceType[] {
    const types = this.custom.get(name) ?? [];
    this.custom.delete(name);
    return types;
  }

  /** Group -> versions (preferred first). Built-in groups first, in a stable order. */
  groups(): Array<{ name: string; versions: string[] }> {
    const map = new Map<string, Set<string>>();
    for (const t of this.all()) {
      if (!map.has(t.group)) map.set(t.group, new Set());
      map.get(t.group)!.add(t.version);
    }
    return [...map.entries()].map(([name, vs]) => ({ name, versions: [...vs].sort(compareVersions) }));
  }
}

export { ApiError };
