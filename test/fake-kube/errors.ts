// metav1.Status errors and field errors, formatted the way k8s.io/apimachinery formats them
// (apimachinery/pkg/api/errors and apimachinery/pkg/util/validation/field, Kubernetes 1.32).

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: Array<{ reason: string; message: string; field?: string }>;
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** Thrown by handlers; the server answers with `status` as the body and `status.code` as the HTTP status. */
export class ApiError extends Error {
  constructor(readonly status: Status) {
    super(status.message ?? status.reason ?? `HTTP ${status.code}`);
  }
}

/** What a resource's errors need to know about it. */
export interface ErrorSubject {
  group: string;
  plural: string;
  kind: string;
}

const omitEmpty = (d: StatusDetails): StatusDetails => {
  const out: StatusDetails = {};
  for (const [k, v] of Object.entries(d)) if (v !== undefined && v !== '') (out as Record<string, unknown>)[k] = v;
  return out;
};

export function status(code: number, reason: string, message: string, details?: StatusDetails): Status {
  // field order of the real server's encoding: ..., message, reason, details, code
  const s: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason } as Status;
  if (details) s.details = omitEmpty(details);
  s.code = code;
  return s;
}

export const qualifiedResource = (r: { group: string; plural: string }): string =>
  r.group ? `${r.plural}.${r.group}` : r.plural;
export const qualifiedKind = (r: { group: string; kind: string }): string => (r.group ? `${r.kind}.${r.group}` : r.kind);

export const notFound = (r: ErrorSubject, name: string): ApiError =>
  new ApiError(
    status(404, 'NotFound', `${qualifiedResource(r)} "${name}" not found`, { name, group: r.group, kind: r.plural }),
  );

export const alreadyExists = (r: ErrorSubject, name: string): ApiError =>
  new ApiError(
    status(409, 'AlreadyExists', `${qualifiedResource(r)} "${name}" already exists`, {
      name,
      group: r.group,
      kind: r.plural,
    }),
  );

export const conflict = (r: ErrorSubject, name: string, why: string): ApiError =>
  new ApiError(
    status(409, 'Conflict', `Operation cannot be fulfilled on ${qualifiedResource(r)} "${name}": ${why}`, {
      name,
      group: r.group,
      kind: r.plural,
    }),
  );

export const OPTIMISTIC_LOCK_MESSAGE =
  'the object has been modified; please apply your changes to the latest version and try again';

export const badRequest = (message: string): ApiError => new ApiError(status(400, 'BadRequest', message, {}));

export const methodNotAllowed = (): ApiError =>
  new ApiError(status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {}));

export const resourceNotFound = (): ApiError =>
  new ApiError(status(404, 'NotFound', 'the server could not find the requested resource', {}));

export const unsupportedMediaType = (accepted: string[]): ApiError =>
  new ApiError(
    status(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
      {},
    ),
  );

export const internalError = (message: string): ApiError =>
  new ApiError(
    status(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ reason: '', message }] }),
  );

/** errors.NewGenericServerResponse(422, ...) as the patch handler uses it for JSON patch failures. */
export const unprocessable = (serverMessage: string): ApiError =>
  new ApiError(
    status(422, 'Invalid', 'the server rejected our request due to an error in our request', {
      causes: [{ reason: 'UnexpectedServerResponse', message: serverMessage }],
    }),
  );

export const expired = (message: string): Status => status(410, 'Expired', message);

// ---------------------------------------------------------------------------------------------
// field.Error

export type FieldErrorType =
  | 'FieldValueNotFound'
  | 'FieldValueRequired'
  | 'FieldValueDuplicate'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'InternalError'
  | 'FieldValueTypeInvalid';

const TYPE_TEXT: Record<FieldErrorType, string> = {
  FieldValueNotFound: 'Not found',
  FieldValueRequired: 'Required value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueInvalid: 'Invalid value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
  InternalError: 'Internal error',
  FieldValueTypeInvalid: 'Invalid value',
};

/** A value printed verbatim in a field error (e.g. Go's `0x0` for an unset uint64). */
export class GoRaw {
  constructor(readonly text: string) {}
}

/** A decoding failure of a typed field (e.g. a bad metav1.MicroTime); the handler words the Status. */
export class DecodeError extends Error {}

/** Marker for "no value to print" (field.omitValue). */
export const OMIT = Symbol('omit');

export interface FieldError {
  type: FieldErrorType;
  field: string;
  value?: unknown;
  detail: string;
}

export const fieldInvalid = (field: string, value: unknown, detail: string): FieldError => ({
  type: 'FieldValueInvalid',
  field,
  value,
  detail,
});
export const fieldRequired = (field: string, detail = ''): FieldError => ({
  type: 'FieldValueRequired',
  field,
  value: '',
  detail,
});
export const fieldForbidden = (field: string, detail: string): FieldError => ({
  type: 'FieldValueForbidden',
  field,
  value: '',
  detail,
});
export const fieldTypeInvalid = (field: string, value: unknown, detail: string): FieldError => ({
  type: 'FieldValueTypeInvalid',
  field,
  value,
  detail,
});
export const fieldNotSupported = (field: string, value: unknown, valid: string[]): FieldError => ({
  type: 'FieldValueNotSupported',
  field,
  value,
  detail: valid.length ? `supported values: ${valid.map((v) => goQuote(v)).join(', ')}` : '',
});
/** field.TooLongMaxLength as of 1.32. */
export const fieldTooLong = (field: string, value: unknown, max: number): FieldError => ({
  type: 'FieldValueTooLong',
  field,
  value,
  detail: max >= 0 ? `may not be longer than ${max}` : 'value is too long',
});
export const fieldTooMany = (field: string, actual: number, max: number): FieldError => ({
  type: 'FieldValueTooMany',
  field,
  value: actual >= 0 ? actual : OMIT,
  detail: max >= 0 ? `must have at most ${max} items` : 'has too many items',
});

/** Go's %q for a string (close enough: JSON escaping, which Go's strconv.Quote mostly shares). */
export function goQuote(s: string): string {
  return JSON.stringify(s);
}

/** Go's %#v for JSON-decoded values (map[string]interface {} / []interface {}). */
function goSharpV(v: unknown): string {
  if (v === null || v === undefined) return 'interface {}(nil)';
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number') return Number.isInteger(v) ? `${v}` : `${v}`;
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[]interface {}{${v.map(goSharpV).join(', ')}}`;
  if (typeof v === 'object') {
    const entries = Object.keys(v as object)
      .sort()
      .map((k) => `${goQuote(k)}:${goSharpV((v as Record<string, unknown>)[k])}`);
    return `map[string]interface {}{${entries.join(', ')}}`;
  }
  return String(v);
}

/** field.Error.ErrorBody(). */
export function errorBody(e: FieldError): string {
  let s: string;
  if (
    e.type === 'FieldValueRequired' ||
    e.type === 'FieldValueForbidden' ||
    e.type === 'FieldValueTooLong' ||
    e.type === 'InternalError' ||
    e.value === OMIT
  ) {
    s = TYPE_TEXT[e.type];
  } else {
    const v = e.value;
    if (v instanceof GoRaw) s = `${TYPE_TEXT[e.type]}: ${v.text}`;
    else if (v === null || v === undefined) s = `${TYPE_TEXT[e.type]}: "null"`;
    else if (typeof v === 'string') s = `${TYPE_TEXT[e.type]}: ${goQuote(v)}`;
    else if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint')
      s = `${TYPE_TEXT[e.type]}: ${String(v)}`;
    else s = `${TYPE_TEXT[e.type]}: ${goSharpV(v)}`;
  }
  if (e.detail) s += `: ${e.detail}`;
  return s;
}

/** field.Error.Error(). */
export const formatFieldError = (e: FieldError): string => `${e.field}: ${errorBody(e)}`;

/** utilerrors.NewAggregate(...).Error(): deduplicated, one message bare, several in brackets. */
export function aggregate(messages: string[]): string {
  const seen = new Set<string>();
  const uniq = messages.filter((m) => (seen.has(m) ? false : (seen.add(m), true)));
  if (uniq.length === 1) return uniq[0];
  return `[${uniq.join(', ')}]`;
}

/** errors.NewInvalid(qualifiedKind, name, errs). */
export function invalid(r: { group: string; kind: string }, name: string, errs: FieldError[]): ApiError {
  const causes = errs.map((e) => ({ reason: e.type, message: errorBody(e), field: e.field }));
  const qk = qualifiedKind(r);
  const message = errs.length
    ? `${qk} ${goQuote(name)} is invalid: ${aggregate(errs.map(formatFieldError))}`
    : `${qk} ${goQuote(name)} is invalid`;
  return new ApiError(status(422, 'Invalid', message, { name, group: r.group, kind: r.kind, causes }));
}

/** The BadRequest the decoder answers with when strict field validation finds unknown or duplicate fields. */
export const strictDecodingError = (kind: string, version: string, unknown: string[]): ApiError =>
  badRequest(
    `${kind} in version ${goQuote(version)} cannot be handled as a ${kind}: strict decoding error: ${unknown
      .map((f) => `unknown field ${goQuote(f)}`)
      .join(', ')}`,
  );

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Gone',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

const MESSAGES: Record<number, string> = {
  400: 'the server rejected our request for an unknown reason',
  401: 'Unauthorized',
  403: 'forbidden',
  404: 'the server could not find the requested resource',
  405: 'the server does not allow this method on the requested resource',
  409: 'the server reported a conflict',
  410: 'the resource no longer exists',
  422: 'the server rejected our request due to an error in our request',
  429: 'the server has received too many requests and has asked us to try again later',
  500: 'an error on the server has prevented the request from succeeding',
  503: 'the server is currently unable to handle the request',
  504: 'the server was unable to return a response in the time allotted, but may still be processing the request',
};

/** A Status for an arbitrary HTTP code (used by fault injection). */
export function statusForCode(code: number, reason?: string, message?: string): Status {
  return status(code, reason ?? REASONS[code] ?? 'Unknown', message ?? MESSAGES[code] ?? `injected HTTP ${code}`, {});
}
