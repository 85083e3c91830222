import { describeManager, type ManagedBy } from './api';

/** Kubernetes wins over the HTTP API: say who owns the row and where to change it instead. */
export function ManagedNotice(props: { managedBy: ManagedBy }) {
  return (
    <p className="managed-notice">
      <strong>Managed by {describeManager(props.managedBy)}</strong>. Read-only here: change that Kubernetes resource instead.
    </p>
  );
}
