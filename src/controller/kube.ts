import {
  ApiException,
  AppsV1Api,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';

export const GROUP = 'conveyor.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const COMPONENT = 'conveyor-controller';

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** The parts of a custom resource the controller reads. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    creationTimestamp?: string | Date;
    deletionTimestamp?: string | Date;
    finalizers?: string[];
  };
  spec?: Record<string, unknown>;
  status?: { observedGeneration?: number; conditions?: Condition[]; [field: string]: unknown };
}

export interface KubeClients {
  config: KubeConfig;
  custom: CustomObjectsApi;
  coordination: CoordinationV1Api;
  batch: BatchV1Api;
  core: CoreV1Api;
  apps: AppsV1Api;
}

/** In-cluster when a service account is mounted, else KUBECONFIG or ~/.kube/config, as kubectl does. */
export function kubeClients(config?: KubeConfig): KubeClients {
  const kc = config ?? new KubeConfig();
  if (!config) kc.loadFromDefault();
  return {
    config: kc,
    custom: kc.makeApiClient(CustomObjectsApi),
    coordination: kc.makeApiClient(CoordinationV1Api),
    batch: kc.makeApiClient(BatchV1Api),
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
  };
}

/** client-node 1.4's generated patch methods send JSON Patch unless told otherwise. */
export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export const statusCode = (err: unknown): number | undefined => (err instanceof ApiException ? err.code : (err as { statusCode?: number })?.statusCode);
export const isNotFound = (err: unknown) => statusCode(err) === 404;
export const isConflict = (err: unknown) => statusCode(err) === 409;
export const isForbidden = (err: unknown) => statusCode(err) === 403;

export const objectKey = (namespace: string | undefined, name: string) => (namespace ? `${namespace}/${name}` : name);

/** A short, safe description of a Kubernetes API failure for logs and status messages (never a body dump). */
export function describeKubeError(err: unknown): string {
  if (err instanceof ApiException) {
    let message = '';
    try {
      message = (typeof err.body === 'string' ? JSON.parse(err.body) : (err.body as { message?: string }))?.message ?? '';
    } catch {
      message = '';
    }
    return `Kubernetes API answered ${err.code}${message ? `: ${message}` : ''}`;
  }
  const e = err as { code?: string; message?: string };
  return `Kubernetes API unreachable: ${e?.code ?? e?.message ?? String(err)}`;
}

export const creationTime = (obj: KubeObject) => new Date(obj.metadata.creationTimestamp ?? 0).getTime();
