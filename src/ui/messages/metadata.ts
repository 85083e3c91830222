/**
 * The enqueue form's metadata editor holds JSON text; the API takes an object of string values,
 * so the text is checked here with a message that says what to fix, before anything is sent.
 */
export type MetadataParse = { ok: true; value: Record<string, string> | undefined } | { ok: false; error: string };

export function parseMetadata(text: string): MetadataParse {
  if (text.trim() === '') return { ok: true, value: undefined };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `Metadata is not valid JSON: ${(err as Error).message}` };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { ok: false, error: 'Metadata must be a JSON object of text values, for example {"source": "shop"}.' };
  }
  for (const [name, value] of Object.entries(parsed)) {
    if (typeof value !== 'string') {
      const kind = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
      const hint = typeof value === 'number' || typeof value === 'boolean' ? ` Quote it: "${name}": "${String(value)}".` : '';
      return { ok: false, error: `Metadata value "${name}" must be a string, not ${kind}.${hint}` };
    }
  }
  return { ok: true, value: parsed as Record<string, string> };
}
