import { useSyncExternalStore } from 'react';

/**
 * The signed-in state of this tab. The token lives in sessionStorage and goes with every request
 * (docs/admin-ui.md, Signing in), so it dies with the tab and is never shared with another one.
 */
const TOKEN_KEY = 'conveyor.token';

export interface SessionUser {
  id: string;
  username: string;
  is_admin: boolean;
}

export interface SessionState {
  /** null until /api/auth/status has answered. */
  authRequired: boolean | null;
  user: SessionUser | null;
  /** A request was refused with 401: the login form is shown over the current screen. */
  loginPrompt: boolean;
  /**
   * The user closed the sign-in dialog: later 401s (a polling screen makes one every few seconds) do not
   * force it open again; the topbar's "Sign in" button does.
   */
  promptDismissed: boolean;
}

let state: SessionState = { authRequired: null, user: null, loginPrompt: false, promptDismissed: false };
const listeners = new Set<() => void>();

function update(next: Partial<SessionState>): void {
  state = { ...state, ...next };
  for (const listener of listeners) listener();
}

export const session = {
  token(): string | null {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  setToken(token: string): void {
    sessionStorage.setItem(TOKEN_KEY, token);
  },
  clearToken(): void {
    sessionStorage.removeItem(TOKEN_KEY);
  },
  /** With auth off a 401 cannot happen; with auth on it means the token is gone, expired or revoked. */
  expired(): void {
    if (!state.loginPrompt && !state.promptDismissed) update({ loginPrompt: true });
  },
  /** Opens the sign-in dialog on request (topbar button), whatever was dismissed before. */
  prompt(): void {
    update({ loginPrompt: true, promptDismissed: false });
  },
  dismissPrompt(): void {
    update({ loginPrompt: false, promptDismissed: true });
  },
  /** Sign out: the token goes, the screen with it (App renders none without a user), the sign-in dialog opens. */
  signOut(): void {
    sessionStorage.removeItem(TOKEN_KEY);
    update({ user: null, loginPrompt: true, promptDismissed: false });
  },
  update,
  state: () => state,
  subscribe(listener: () => void): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};

export function useSession(): SessionState {
  return useSyncExternalStore(session.subscribe, session.state);
}

/** Admin-only screens and actions are hidden from users who are not admins (auth off: everyone is). */
export function useIsAdmin(): boolean {
  const { authRequired, user } = useSession();
  return authRequired === false || user?.is_admin === true;
}
