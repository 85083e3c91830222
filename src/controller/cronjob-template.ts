import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';

/** The parts of the delete-reaper CronJob that come from controller.delete_reaper_cronjob_template. */
export interface CronJobTemplate {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** The CronJob's spec; schedule and suspend only as the schedule to start with before any is stored. */
  spec: Record<string, unknown> & { jobTemplate: Record<string, unknown>; schedule?: string };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function stringMap(value: unknown, what: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isObject(value) || Object.values(value).some((v) => typeof v !== 'string')) throw new Error(`${what} must map names to strings`);
  return value as Record<string, string>;
}

/**
 * Reads the CronJob the controller creates (a CronJob manifest in YAML or JSON; the Helm chart renders it into
 * the release's ConfigMap). Name, namespace and owner references are the controller's and are ignored here.
 * Throws a message naming the file and what is wrong with it.
 */
export function loadCronJobTemplate(path: string): CronJobTemplate {
  const where = `controller.delete_reaper_cronjob_template (${path})`;
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`${where}: cannot read a CronJob from it: ${(err as Error).message}`);
  }
  try {
    if (!isObject(doc)) throw new Error('not a CronJob manifest');
    if (doc.kind !== undefined && doc.kind !== 'CronJob') throw new Error(`kind is ${JSON.stringify(doc.kind)}, not CronJob`);
    const metadata = isObject(doc.metadata) ? doc.metadata : {};
    if (!isObject(doc.spec) || !isObject(doc.spec.jobTemplate)) throw new Error('spec.jobTemplate is missing');
    if (doc.spec.schedule !== undefined && typeof doc.spec.schedule !== 'string') throw new Error('spec.schedule must be a string');
    return {
      labels: stringMap(metadata.labels, 'metadata.labels'),
      annotations: stringMap(metadata.annotations, 'metadata.annotations'),
      spec: doc.spec as CronJobTemplate['spec'],
    };
  } catch (err) {
    throw new Error(`${where}: ${(err as Error).message}`);
  }
}
