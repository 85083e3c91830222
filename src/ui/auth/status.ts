import { useEffect } from 'react';
import { api, unwrap } from '../api/client';
import { session, type SessionUser } from './session';

interface AuthStatus {
  auth_required: boolean;
  user?: SessionUser;
}

/** Asks the service whether auth is on and who the stored token belongs to (no user: none or not valid). */
export async function fetchAuthStatus(): Promise<AuthStatus> {
  return (await unwrap(api.GET('/api/auth/status'))) as AuthStatus;
}

/**
 * On load: auth off shows everything; auth on with a valid token signs the tab in; otherwise the stale token
 * goes and the sign-in dialog opens. While the service cannot be reached, it asks again every few seconds.
 */
export function useAuthStatus(): void {
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
