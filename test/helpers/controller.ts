import { spawn, type ChildProcess } from 'node:child_process';
import { KubeConfig } from '@kubernetes/client-node';
import { vi } from 'vitest';
import { startController, type RunningController } from '../../src/controller/controller.js';
import type { OwnPod } from '../../src/controller/own-deployment.js';
import { createLogger, type Logger } from '../../src/log/logger.js';
import type { FakeKube } from '../fake-kube/index.js';
import { conveyorArgs } from './conveyor-command.js';
import { Api } from './http.js';
import { testConfig, type ConfigOverrides } from './server.js';

export const CONTROLLER_NAMESPACE = 'conveyor-system';

/** Short timings so leader election, resync and the CronJob sync show within a test's patience. */
export const FAST_CONTROLLER: Record<string, string> = {
  namespace: CONTROLLER_NAMESPACE,
  lease_duration: '3s',
  renew_deadline: '2s',
  retry_period: '250ms',
  resync_period: '2s',
  schedule_sync_interval: '500ms',
  watch_timeout: '5m',
};

export interface TestController extends RunningController {
  api: Api;
}

/**
 * A controller in this process, talking to the fake API server through the real client library. `pod` is what
 * the downward API would give it (POD_NAME, POD_NAMESPACE); by default it has none.
 */
export async function startTestController(
  kube: FakeKube,
  dbUrl: string,
  overrides: ConfigOverrides = {},
  options: { pod?: OwnPod; logger?: Logger } = {},
): Promise<TestController> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kube.writeKubeconfig());
  const config = testConfig(dbUrl, { ...overrides, controller: { ...FAST_CONTROLLER, port: 0, host: '127.0.0.1', ...overrides.controller } });
  const logger = options.logger ?? createLogger(process.env.CONVEYOR_TEST_LOG_LEVEL ?? 'silent');
  const running = await startController(config, { logger, kubeConfig, pod: options.pod ?? {} });
  return { ...running, api: new Api(`http://127.0.0.1:${running.port}`) };
}

export interface ControllerProcess {
  process: ChildProcess;
  identity: string;
  api: Api;
  output(): string;
  stop(signal: NodeJS.Signals): Promise<void>;
}

/** `conveyor controller` as an OS process (for SIGKILL and SIGTERM), configured only through the environment. */
export async function startControllerProcess(kubeconfig: string, dbUrl: string, controller: Record<string, string> = {}): Promise<ControllerProcess> {
  const env: Record<string, string> = { KUBECONFIG: kubeconfig, CONVEYOR_DB_URL: dbUrl, CONVEYOR_LOG_LEVEL: 'info', CONVEYOR_CONTROLLER_PORT: '0', CONVEYOR_CONTROLLER_HOST: '127.0.0.1' };
  for (const [key, value] of Object.entries({ ...FAST_CONTROLLER, ...controller })) env[`CONVEYOR_CONTROLLER_${key.toUpperCase()}`] = value;
  const child = spawn(process.execPath, conveyorArgs(['controller']), { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const started = await new Promise<{ port: number; identity: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`controller did not start:\n${output}`)), 30_000);
    child.stdout!.on('data', () => {
      const line = output.split('\n').find((l) => l.includes('conveyor controller started'));
      if (!line) return;
      clearTimeout(timer);
      const parsed = JSON.parse(line);
      resolve({ port: parsed.port, identity: parsed.identity });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`controller exited with ${code}:\n${output}`));
    });
  });
  return {
    process: child,
    identity: started.identity,
    api: new Api(`http://127.0.0.1:${started.port}`),
    output: () => output,
    stop: (signal) =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill(signal);
      }),
  };
}

export interface ResourceRef {
  plural: 'topicconfigs' | 'topicschemas' | 'consumergroups' | 'conveyoraccesses';
  namespace: string;
  name: string;
}

export const conveyorResource = (kube: FakeKube, ref: ResourceRef) => kube.get({ group: 'conveyor.dev', version: 'v1alpha1', ...ref });

export function readyOf(obj: any): { status?: string; reason?: string; message?: string; observedGeneration?: number } {
  return obj?.status?.conditions?.find((c: any) => c.type === 'Ready') ?? {};
}

/** Waits until the resource's Ready condition has the given status (and reason), for its current generation. */
export async function waitForReady(kube: FakeKube, ref: ResourceRef, status: 'True' | 'False' = 'True', reason?: string, timeout = 15_000): Promise<any> {
  // vi.waitFor rather than expect.poll: suites also wait for resources in beforeAll.
  return vi.waitFor(
    () => {
      const obj = conveyorResource(kube, ref);
      const ready = readyOf(obj);
      const done = ready.status === status && (reason === undefined || ready.reason === reason) && obj?.status?.observedGeneration === obj?.metadata?.generation;
      if (!done) throw new Error(`${ref.plural} ${ref.namespace}/${ref.name}: waiting for Ready=${status}${reason ? ` (${reason})` : ''}, status is ${JSON.stringify(obj?.status)}`);
      return obj;
    },
    { timeout, interval: 100 },
  );
}

export const leaseHolder = (kube: FakeKube, name = 'conveyor-controller') =>
  kube.get({ group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespace: CONTROLLER_NAMESPACE, name })?.spec?.holderIdentity ?? '';
