import type { V1OwnerReference } from '@kubernetes/client-node';
import { describeKubeError, isForbidden, isNotFound, type KubeClients } from './kube.js';

/** The controller's own pod, from the downward API (POD_NAME, POD_NAMESPACE). */
export interface OwnPod {
  name?: string;
  namespace?: string;
}

/**
 * What the search for the Deployment that runs this controller found: its owner reference, or why there is
 * none. `settled` is false for a failure worth trying again (the API server unreachable, a 5xx); true when
 * asking again cannot help (no POD_NAME, a pod run by something else than a Deployment, a 404 or a 403).
 */
export type OwnerSearch = { owner: V1OwnerReference; settled: true } | { owner: undefined; settled: boolean; reason: string };

type Reference = { apiVersion?: string; kind?: string; name?: string; uid?: string; controller?: boolean };

const controllerOf = (refs: Reference[] | undefined, apiVersion: string, kind: string) =>
  (refs ?? []).find((r) => r.controller === true && r.apiVersion === apiVersion && r.kind === kind);

/**
 * Finds the Deployment this controller runs in, the way the garbage collector links them: the pod's
 * controlling owner is a ReplicaSet, whose controlling owner is the Deployment. Objects the controller creates
 * with an owner reference to it are deleted with the release, and GitOps tools show them under it instead of
 * as objects of their own.
 */
export class OwnDeployment {
  private found: OwnerSearch | undefined;

  constructor(
    private readonly clients: KubeClients,
    private readonly pod: OwnPod,
    /** Where the objects it will own live: an owner reference only points within one namespace. */
    private readonly namespace: string,
  ) {}

  /** The search's answer; a settled one is kept for the life of the process (a pod never changes owners). */
  async search(): Promise<OwnerSearch> {
    if (this.found?.settled) return this.found;
    this.found = await this.lookup();
    return this.found;
  }

  private async lookup(): Promise<OwnerSearch> {
    const { name, namespace = this.namespace } = this.pod;
    if (!name) return { owner: undefined, settled: true, reason: 'POD_NAME is not set (the downward API gives the pod its name)' };
    if (namespace !== this.namespace)
      return { owner: undefined, settled: true, reason: `the pod runs in namespace ${namespace}, not in ${this.namespace}, and an owner must be in the same namespace` };
    const step = async <T>(what: string, read: () => Promise<T>): Promise<T | OwnerSearch> => {
      try {
        return await read();
      } catch (err) {
        const settled = isNotFound(err) || isForbidden(err);
        return { owner: undefined, settled, reason: `cannot read ${what}: ${describeKubeError(err)}` };
      }
    };
    const isAnswer = (v: unknown): v is OwnerSearch => typeof v === 'object' && v !== null && 'settled' in v;

    const pod = await step(`Pod ${namespace}/${name}`, () => this.clients.core.readNamespacedPod({ name, namespace }));
    if (isAnswer(pod)) return pod;
    const rsRef = controllerOf(pod.metadata?.ownerReferences, 'apps/v1', 'ReplicaSet');
    if (!rsRef?.name) return { owner: undefined, settled: true, reason: `Pod ${namespace}/${name} is not run by a ReplicaSet` };

    const replicaSet = await step(`ReplicaSet ${namespace}/${rsRef.name}`, () => this.clients.apps.readNamespacedReplicaSet({ name: rsRef.name!, namespace }));
    if (isAnswer(replicaSet)) return replicaSet;
    const deploymentRef = controllerOf(replicaSet.metadata?.ownerReferences, 'apps/v1', 'Deployment');
    if (!deploymentRef?.name) return { owner: undefined, settled: true, reason: `ReplicaSet ${namespace}/${rsRef.name} is not run by a Deployment` };

    const deployment = await step(`Deployment ${namespace}/${deploymentRef.name}`, () =>
      this.clients.apps.readNamespacedDeployment({ name: deploymentRef.name!, namespace }),
    );
    if (isAnswer(deployment)) return deployment;
    const uid = deployment.metadata?.uid;
    // A Deployment deleted and created again under the same name is another owner: its ReplicaSets are new too.
    if (!uid || uid !== deploymentRef.uid)
      return { owner: undefined, settled: false, reason: `Deployment ${namespace}/${deploymentRef.name} is not the one that owns ReplicaSet ${rsRef.name}` };
    return {
      owner: { apiVersion: 'apps/v1', kind: 'Deployment', name: deploymentRef.name, uid, controller: true, blockOwnerDeletion: true },
      settled: true,
    };
  }
}
