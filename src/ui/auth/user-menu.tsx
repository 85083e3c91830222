import { session, useSession } from './session';
import { useSignOut } from './use-sign-out';

/** The topbar's end: who is signed in and "Sign out"; or "Sign in" when the dialog was closed. Nothing with auth off. */
export function UserMenu() {
  const { authRequired, user, loginPrompt, promptDismissed } = useSession();
  const signOut = useSignOut();
  if (authRequired !== true) return null;
  if (user === null || promptDismissed) {
    // While the dialog is open its own button is the only "Sign in" on the page.
    return loginPrompt ? null : (
      <div className="user-menu">
        <button type="button" className="primary" onClick={() => session.prompt()}>
          Sign in
        </button>
      </div>
    );
  }
  return (
    <div className="user-menu">
      <span className="user-name">
        <span className="visually-hidden">Signed in as </span>
        {user.username}
        {user.is_admin && <span className="badge">admin</span>}
      </span>
      <button type="button" onClick={signOut}>
        Sign out
      </button>
    </div>
  );
}
