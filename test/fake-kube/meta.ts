// ObjectMeta rules: names, generateName, timestamps, label/name validation messages.
import { GoRaw, fieldInvalid, fieldRequired, fieldForbidden, type FieldError } from './errors.js';

/** RFC 3339 with seconds precision, as metav1.Time serializes (`2026-11-23T10:00:00Z`). */
export const nowTime = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
export function generateName(base: string): string {
  const b = base.length > 58 ? base.slice(0, 58) : base;
  let s = '';
  for (let i = 0; i < 5; i++) s += GENERATE_ALPHABET[Math.floor(Math.random() * GENERATE_ALPHABET.length)];
  return b + s;
}

const DNS1123_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN = `${DNS1123_LABEL}(\\.${DNS1123_LABEL})*`;
const LABEL_VALUE = '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?';
const QUALIFIED_NAME = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';

export function validateName(name: string, kind: 'subdomain' | 'label', field = 'metadata.name'): FieldError[] {
  const errs: FieldError[] = [];
  if (kind === 'label') {
    if (name.length > 63) errs.push(fieldInvalid(field, name, 'must be no more than 63 characters'));
    if (!new RegExp(`^${DNS1123_LABEL}$`).test(name))
      errs.push(
        fieldInvalid(
          field,
          name,
          `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '${DNS1123_LABEL}')`,
        ),
      );
    return errs;
  }
  if (name.length > 253) errs.push(fieldInvalid(field, name, 'must be no more than 253 characters'));
  if (!new RegExp(`^${DNS1123_SUBDOMAIN}$`).test(name))
    errs.push(
      fieldInvalid(
        field,
        name,
        `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '${DNS1123_SUBDOMAIN}')`,
      ),
    );
  return errs;
}

function validateLabels(labels: unknown): FieldError[] {
  const errs: FieldError[] = [];
  if (labels === undefined || labels === null || typeof labels !== 'object') return errs;
  for (const [k, v] of Object.entries(labels as Record<string, unknown>)) {
    const namePart = k.includes('/') ? k.slice(k.indexOf('/') + 1) : k;
    if (namePart.length > 63 || !new RegExp(`^${QUALIFIED_NAME}$`).test(namePart))
      errs.push(
        fieldInvalid(
          'metadata.labels',
          k,
          `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '${QUALIFIED_NAME}')`,
        ),
      );
    if (typeof v !== 'string') continue;
    if (v.length > 63) errs.push(fieldInvalid('metadata.labels', v, 'must be no more than 63 characters'));
    if (!new RegExp(`^${LABEL_VALUE}$`).test(v))
      errs.push(
        fieldInvalid(
          'metadata.labels',
          v,
          `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '${LABEL_VALUE}')`,
        ),
      );
  }
  return errs;
}

/** ValidateObjectMeta (the parts a fake needs): name present and well-formed, labels well-formed. */
export function validateObjectMeta(obj: any, nameKind: 'subdomain' | 'label'): FieldError[] {
  const md = obj?.metadata ?? {};
  const errs: FieldError[] = [];
  if (!md.name) errs.push(fieldRequired('metadata.name', 'name or generateName is required'));
  else errs.push(...validateName(String(md.name), nameKind));
  errs.push(...validateLabels(md.labels));
  errs.push(...validateOwnerReferences(md.ownerReferences));
  return errs;
}

/** apimachinery's ValidateOwnerReferences: every reference names its owner fully, and at most one is the controller. */
export function validateOwnerReferences(refs: unknown): FieldError[] {
  if (!Array.isArray(refs)) return [];
  const field = 'metadata.ownerReferences';
  const errs: FieldError[] = [];
  let firstController = '';
  for (const ref of refs as any[]) {
    const apiVersion = String(ref?.apiVersion ?? '');
    const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
    if (!version) errs.push(fieldInvalid(`${field}.apiVersion`, apiVersion, 'version must not be empty'));
    if (!ref?.kind) errs.push(fieldInvalid(`${field}.kind`, String(ref?.kind ?? ''), 'must not be empty'));
    if (!ref?.name) errs.push(fieldInvalid(`${field}.name`, String(ref?.name ?? ''), 'must not be empty'));
    if (!ref?.uid) errs.push(fieldInvalid(`${field}.uid`, String(ref?.uid ?? ''), 'must not be empty'));
    if (ref?.controller === true) {
      const current = `${ref.kind}/${ref.name}`;
      if (firstController)
        errs.push(
          fieldInvalid(field, new GoRaw('[]v1.OwnerReference{...}'), `Only one reference can have Controller set to true. Found "true" in references for ${firstController} and ${current}`),
        );
      else firstController = current;
    }
  }
  return errs;
}

/** Finalizers may not be added while the object is being deleted. */
export function validateFinalizerUpdate(oldObj: any, newObj: any): FieldError[] {
  if (!oldObj?.metadata?.deletionTimestamp) return [];
  const before = new Set<string>(oldObj.metadata.finalizers ?? []);
  const added = ((newObj?.metadata?.finalizers ?? []) as string[]).filter((f) => !before.has(f)).sort();
  if (!added.length) return [];
  return [
    fieldForbidden(
      'metadata.finalizers',
      `no new finalizers can be added if the object is being deleted, found new finalizers []string{${added
        .map((f) => JSON.stringify(f))
        .join(', ')}}`,
    ),
  ];
}
