const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** Epoch milliseconds of an RFC 3339 timestamp (with a zone), or null when it is not one. */
export function parseRfc3339(value: unknown): number | null {
  if (typeof value !== 'string' || !RFC3339.test(value)) return null;
  const ms = Date.parse(value.replace(' ', 'T'));
  return Number.isNaN(ms) ? null : ms;
}
