import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseDurationSeconds } from '../src/config/duration.js';
import { validateConfig } from '../src/config/load.js';
import { configSchema } from '../src/config/schema.js';

/** The rows of the reference table in docs/configuration.md: key, environment variable, default. */
function documentedKeys(): Map<string, { env: string; default: string }> {
  const text = readFileSync('docs/configuration.md', 'utf8');
  const rows = new Map<string, { env: string; default: string }>();
  for (const line of text.split('\n')) {
    const cells = /^\| `([a-z_]+\.[a-z_]+)` \| `([A-Z_]+)` \| ([^|]+) \|/.exec(line);
    if (cells) rows.set(cells[1], { env: cells[2], default: cells[3].trim() });
  }
  return rows;
}

function schemaKeys(): string[] {
  return Object.entries(configSchema.shape).flatMap(([section, sectionSchema]) =>
    Object.keys((sectionSchema as unknown as { def: { innerType: { shape: Record<string, unknown> } } }).def.innerType.shape).map((key) => `${section}.${key}`),
  );
}

/** A documented default as the schema would hold it: durations in seconds, `x` and "" as strings. */
function parseDocumented(text: string, actual: unknown): unknown {
  if (text === '""') return '';
  const code = /^`(.*)`$/.exec(text);
  if (code) return code[1];
  if (text === 'true' || text === 'false') return text === 'true';
  if (typeof actual === 'number' && /[a-z]$/.test(text)) return parseDurationSeconds(text);
  return Number(text);
}

describe('docs/configuration.md', () => {
  const documented = documentedKeys();
  const defaults = validateConfig({}) as unknown as Record<string, Record<string, unknown>>;

  it('lists every configuration key, and no key the schema does not have', () => {
    expect([...documented.keys()].sort()).toEqual(schemaKeys().sort());
  });

  it('names the environment variable and the default of each key as the service applies them', () => {
    for (const key of schemaKeys()) {
      const [section, name] = key.split('.');
      const row = documented.get(key)!;
      expect(row.env, key).toBe(`CONVEYOR_${section}_${name}`.toUpperCase());
      const actual = defaults[section][name];
      expect(parseDocumented(row.default, actual), `${key}: documented default ${row.default}`).toEqual(actual);
    }
  });
});
