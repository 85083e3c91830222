// No Kubernetes client here: the configuration schema checks controller.instance with this file.

/** Held on every resource the controller has written rows for, so a deletion waits for the rows' removal. */
export const FINALIZER = 'conveyor.dev/finalizer';

/** The label that says which Conveyor a resource belongs to (controller.instance). */
export const INSTANCE_LABEL = 'conveyor.dev/instance';

// A Helm release name: the chart hands its release name over, and the finalizer's name part
// (`finalizer-<instance>`) must stay within the 63 characters of a qualified name.
const INSTANCE_NAME = /^[a-z0-9]([-a-z0-9]{0,51}[a-z0-9])?$/;

export const isInstanceName = (value: string): boolean => INSTANCE_NAME.test(value);

/** What one controller calls its own: the resources it sees, the finalizer it holds and the Lease it leads with. */
export interface InstanceScope {
  instance: string;
  /** The watch's label selector; undefined = every resource. */
  labelSelector?: string;
  finalizer: string;
  /**
   * The unscoped finalizer an instance takes over on its resources: they were labelled after an unscoped
   * controller had managed them, and no one else would ever remove it.
   */
  legacyFinalizer?: string;
  leaseName: string;
}

export function instanceScope(instance: string, leaseName: string): InstanceScope {
  if (!instance) return { instance, finalizer: FINALIZER, leaseName };
  return {
    instance,
    labelSelector: `${INSTANCE_LABEL}=${instance}`,
    finalizer: `${FINALIZER}-${instance}`,
    legacyFinalizer: FINALIZER,
    leaseName: `${leaseName}-${instance}`,
  };
}
