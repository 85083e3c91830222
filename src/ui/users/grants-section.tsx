import { useCallback, useState } from 'react';
import { ConfirmDialog } from '../components/confirm-dialog';
import { ErrorMessage } from '../components/error-message';
import { Timestamp } from '../components/timestamp';
import { describeManager } from '../topics/api';
import { useDeleteGrant, useGrants, type Grant, type User } from './api';
import { AddConsumeGrantForm, AddGrantForm } from './grant-forms';

function describe(grant: Grant): string {
  return grant.action === 'consume' ? `consume ${grant.topic_pattern} as ${grant.consumer_group}` : `${grant.action} ${grant.topic_pattern}`;
}

/** A user's grants (topic grants and consume grants in one list, as the API gives them) and the forms that add them. */
export function GrantsSection(props: { user: User }) {
  const { user } = props;
  const grants = useGrants(user.id);
  const remove = useDeleteGrant(user.id);
  const [deleting, setDeleting] = useState<Grant | null>(null);
  const { reset } = remove;
  const close = useCallback(() => {
    setDeleting(null);
    reset();
  }, [reset]);
  return (
    <section aria-labelledby="grants-title">
      <h3 id="grants-title">Grants</h3>
      {user.is_admin && <p className="hint">{user.username} is an administrator: grants take effect only if the admin flag is removed.</p>}
      <ErrorMessage error={grants.error} />
      {grants.data && grants.data.length === 0 && <p className="hint">No grants: {user.username} may not touch any topic.</p>}
      {grants.data?.some((g) => g.managed_by) && (
        <p className="managed-notice">
          Grants managed by a Kubernetes ConveyorAccess are read-only here: change that resource instead.
        </p>
      )}
      {grants.data && grants.data.length > 0 && (
        <div className="table-wrap" tabIndex={0} role="region" aria-label="Grant list">
          <table aria-label={`Grants of ${user.username}`}>
            <thead>
              <tr>
                <th scope="col">Action</th>
                <th scope="col">Topic pattern</th>
                <th scope="col">Consumer group</th>
                <th scope="col">Created</th>
                <th scope="col">Managed by</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {grants.data.map((grant) => (
                <tr key={grant.id}>
                  <td>{grant.action}</td>
                  <td>
                    <code>{grant.topic_pattern}</code>
                  </td>
                  <td>{grant.consumer_group || '—'}</td>
                  <td>
                    <Timestamp iso={grant.created_at} />
                  </td>
                  <td>{grant.managed_by ? describeManager(grant.managed_by) : '—'}</td>
                  <td>
                    {!grant.managed_by && (
                      <button type="button" aria-label={`Delete grant ${describe(grant)}`} onClick={() => setDeleting(grant)}>
                        Delete
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <AddGrantForm userId={user.id} />
      <AddConsumeGrantForm userId={user.id} />
      {deleting && (
        <ConfirmDialog
          title="Delete grant"
          message={`Remove the grant "${describe(deleting)}" from ${user.username}? It stops applying at once.`}
          actionLabel="Delete grant"
          pending={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate(deleting.id, { onSuccess: close })}
          onClose={close}
        />
      )}
    </section>
  );
}
