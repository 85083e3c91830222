import { useCallback, useState } from 'react';
import { ErrorMessage } from '../components/error-message';
import { navigate, useRoute } from '../router';
import { useUsers, type User } from '../users/api';
import { CreateUserDialog } from '../users/create-user-dialog';
import { UserDetails } from '../users/user-details';
import { UserTable } from '../users/user-table';

/** Admin only: the shell shows this screen to admins alone (with auth off, everyone is one). */
export function UsersScreen() {
  const selectedId = useRoute().params.get('user');
  const users = useUsers();
  const [creating, setCreating] = useState(false);
  const close = useCallback(() => setCreating(false), []);
  const created = useCallback((user: User) => {
    setCreating(false);
    navigate('users', { user: user.id });
  }, []);
  const selected = users.data?.find((u) => u.id === selectedId) ?? null;
  return (
    <div className="users-screen">
      <h1>Users</h1>
      <div className="toolbar">
        <button type="button" className="primary" onClick={() => setCreating(true)}>
          Create user
        </button>
      </div>
      <ErrorMessage error={users.error} />
      {users.isPending && <p className="hint">Loading users…</p>}
      {users.data && <UserTable users={users.data} selectedId={selectedId} />}
      {selectedId && users.data && !selected && <p className="error">No user with this id (deleted?).</p>}
      {selected && <UserDetails key={selected.id} user={selected} />}
      {creating && <CreateUserDialog onClose={close} onCreated={created} />}
    </div>
  );
}
