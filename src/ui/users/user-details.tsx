import { useCallback, useState } from 'react';
import { ConfirmDialog } from '../components/confirm-dialog';
import { ErrorMessage } from '../components/error-message';
import { Timestamp } from '../components/timestamp';
import { navigate } from '../router';
import { useDeleteUser, useUpdateUser, type User } from './api';
import { GrantsSection } from './grants-section';
import { PasswordDialog } from './password-dialog';

type Open = 'none' | 'password' | 'delete';

/** One user: the admin flag, password, deletion, and the user's grants. */
export function UserDetails(props: { user: User }) {
  const { user } = props;
  const [open, setOpen] = useState<Open>('none');
  const [notice, setNotice] = useState<string | null>(null);
  const update = useUpdateUser(user.id);
  const remove = useDeleteUser(user.id);
  const { reset: resetRemove } = remove;
  const close = useCallback(() => {
    setOpen('none');
    resetRemove();
  }, [resetRemove]);
  const passwordChanged = useCallback(() => {
    setOpen('none');
    setNotice(`The password of ${user.username} was changed.`);
  }, [user.username]);
  const toggleAdmin = () => {
    setNotice(null);
    update.mutate({ is_admin: !user.is_admin }, { onSuccess: (u) => setNotice(u.is_admin ? `${u.username} is now an administrator.` : `${u.username} is no longer an administrator.`) });
  };
  const confirmDelete = () =>
    remove.mutate(undefined, {
      onSuccess: () => {
        setOpen('none');
        navigate('users');
      },
    });
  return (
    <section className="user-details" aria-labelledby="user-details-title">
      <h2 id="user-details-title">{user.username}</h2>
      <dl className="facts">
        {user.service_account && (
          <>
            <dt>Kind</dt>
            <dd>Kubernetes service account: signs in with its ServiceAccount token, has no password and is never an administrator</dd>
          </>
        )}
        <dt>Administrator</dt>
        <dd>{user.is_admin ? 'Yes: may do everything; grants do not apply' : 'No: needs grants'}</dd>
        <dt>Created</dt>
        <dd>
          <Timestamp iso={user.created_at} />
        </dd>
        <dt>Updated</dt>
        <dd>
          <Timestamp iso={user.updated_at} />
        </dd>
      </dl>
      <div className="toolbar">
        {/* The API refuses both for a service account: its token is its credential, and it is never an admin. */}
        {!user.service_account && (
          <>
            <button type="button" onClick={() => setOpen('password')}>
              Change password
            </button>
            <button type="button" onClick={toggleAdmin} disabled={update.isPending}>
              {user.is_admin ? 'Remove administrator rights' : 'Make administrator'}
            </button>
          </>
        )}
        <button type="button" className="danger" onClick={() => setOpen('delete')}>
          Delete user
        </button>
      </div>
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      <ErrorMessage error={update.error} />
      <GrantsSection user={user} />
      {open === 'password' && <PasswordDialog user={user} onClose={close} onChanged={passwordChanged} />}
      {open === 'delete' && (
        <ConfirmDialog
          title="Delete user"
          message={`Delete ${user.username} and all of their grants? Their tokens stop working at once.`}
          actionLabel="Delete user"
          pending={remove.isPending}
          error={remove.error}
          onConfirm={confirmDelete}
          onClose={close}
        />
      )}
    </section>
  );
}
