import { z } from 'zod';
import { configSchema } from '../config/schema.js';

/** How `conveyor config check` hides a value: all of it, or the password inside a URL. */
export type Sensitivity = 'secret' | 'url-password';

/** One configuration key as the help texts and `config check` show it, read from the schema itself. */
export interface ConfigKey {
  section: string;
  name: string;
  /** `section.name`, as in conveyor.yaml. */
  key: string;
  /** CONVEYOR_SECTION_NAME. */
  env: string;
  /** The default as a user would write it: `25s`, `8080`, `false`, `""`. */
  defaultText: string;
  /** Durations are validated into seconds; config check prints them back as `25s`. */
  duration: boolean;
  description: string;
  sensitive?: Sensitivity;
}

type AnySchema = z.ZodType & { def: { type: string; innerType?: AnySchema; in?: AnySchema; defaultValue?: unknown; shape?: Record<string, AnySchema> } };

function metaOf(schema: AnySchema): { description?: string; sensitive?: Sensitivity } {
  return (z.globalRegistry.get(schema) ?? {}) as { description?: string; sensitive?: Sensitivity };
}

/** The default value inside a key's schema: `.default()` directly, or under a transform (durations). */
function defaultOf(schema: AnySchema): unknown {
  const { def } = schema;
  if (def.type === 'default' || def.type === 'prefault') return typeof def.defaultValue === 'function' ? (def.defaultValue as () => unknown)() : def.defaultValue;
  if (def.type === 'pipe' && def.in) return defaultOf(def.in);
  if (def.innerType) return defaultOf(def.innerType);
  return undefined;
}

function defaultText(value: unknown): string {
  if (value === '' || value === undefined) return '""';
  return String(value);
}

let cached: ConfigKey[] | undefined;

/** Every key of the configuration schema, in schema order. */
export function configKeys(): ConfigKey[] {
  if (cached) return cached;
  const keys: ConfigKey[] = [];
  for (const [section, sectionSchema] of Object.entries(configSchema.shape)) {
    const shape = (sectionSchema as unknown as AnySchema).def.innerType!.def.shape!;
    for (const [name, schema] of Object.entries(shape)) {
      const meta = metaOf(schema);
      const fallback = defaultOf(schema);
      keys.push({
        section,
        name,
        key: `${section}.${name}`,
        env: `CONVEYOR_${section}_${name}`.toUpperCase(),
        defaultText: defaultText(fallback),
        duration: schema.def.type === 'pipe' && typeof fallback === 'string',
        description: meta.description ?? '',
        sensitive: meta.sensitive,
      });
    }
  }
  cached = keys;
  return keys;
}

/** The keys whose `section.name` or `section.*` pattern is listed, in schema order. */
export function keysMatching(patterns: readonly string[]): ConfigKey[] {
  return configKeys().filter((k) => patterns.some((p) => p === k.key || p === `${k.section}.*`));
}
