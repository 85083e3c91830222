import { Timestamp } from '../components/timestamp';
import { href } from '../router';
import type { User } from './api';

/** Every user; the name links to the user's details (`#/users?user=<id>`), so a user's page can be bookmarked. */
export function UserTable(props: { users: User[]; selectedId: string | null }) {
  if (props.users.length === 0) return <p className="hint">No users yet.</p>;
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label="User list">
      <table aria-label="Users">
        <thead>
          <tr>
            <th scope="col">Username</th>
            <th scope="col">Administrator</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {props.users.map((user) => (
            <tr key={user.id} className={user.id === props.selectedId ? 'selected' : undefined}>
              <td>
                <a href={href('users', { user: user.id })} aria-current={user.id === props.selectedId ? 'true' : undefined}>
                  {user.username}
                </a>
                {user.service_account && <span className="badge">service account</span>}
              </td>
              <td>{user.is_admin ? 'Yes' : 'No'}</td>
              <td>
                <Timestamp iso={user.created_at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
