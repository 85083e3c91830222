import { useEffect } from 'react';
import { api, onForbidden, unwrap } from '../api/client';
import { session, type SessionUser } from './session';

interface AuthStatus {
  auth_required: boolean;
  user?: SessionUser;
}

/** Asks the service whether auth is on and who the stored token belongs to (no user: none or not valid). */
export async function fetchAuthStatus(): Promise<AuthStatus> {
  return (await unwrap(api.GET('/api/auth/status'))) as AuthStatus;
}

let rereading: Promise<void> | undefined;

/**
 * Reads again who the token belongs to, so a change of rights (an admin demoted or promoted, by anyone) shows
 * in the navigation without a reload: after a 403, a token refresh, or a change to a user.
 */
export function rereadUser(): Promise<void> {
  rereading ??= (async () => {
    try {
      const status = await fetchAuthStatus();
      const current = session.state().user;
      const user = status.user;
      // No user: the token is no longer valid, which the next request's 401 handles.
      if (!user || current === null || user.id !== current.id) return;
      if (user.is_admin !== current.is_admin || user.username !== current.username) session.update({ user });
    } catch {
      // Unreachable: the next 403 or refresh asks again.
    } finally {
      rereading = undefined;
    }
  })();
  return rereading;
}

/**
 * On load: auth off shows everything; auth on with a valid token signs the tab in; otherwise the stale token
 * goes and the sign-in dialog opens. While the service cannot be reached, it asks again every few seconds.
 */
export function useAuthStatus(): void {
  useEffect(() => onForbidden(() => void rereadUser()), []);
  useEffect(() => {
    let cancelled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      try {
        const status = await fetchAuthStatus();
        if (cancelled) return;
        const user = status.user ?? null;
        if (status.auth_required && !user) session.clearToken();
        session.update({ authRequired: status.auth_required, user, loginPrompt: status.auth_required && !user, promptDismissed: false });
      } catch {
        if (!cancelled) timer = setTimeout(load, 3_000);
      }
    };
    void load();
    return () => {
      cancelled = true;
      clearTimeout(timer);
    };
  }, []);
}
