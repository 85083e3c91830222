import { useEffect, useId, useRef, useState } from 'react';
import { api, ApiError, unwrap } from '../api/client';
import { idleFor, trackActivity } from './activity';
import { tokenExpiresAt } from './jwt';
import { session, useSession } from './session';
import { rereadUser } from './status';
import { useSignOut } from './use-sign-out';

/** Someone who touched the page within this long is "there": their session is renewed without asking. */
const ACTIVE_WITHIN_MS = 60_000;
const REFRESH_BEFORE_MS = 5 * 60_000;
const WARN_BEFORE_MS = 2 * 60_000;
const RETRY_AFTER_FAILURE_MS = 10_000;

function clock(ms: number): string {
  const seconds = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
}

/** Renews the token of a signed-in tab: quietly while the user is active, after asking when they were idle. */
export function SessionKeeper() {
  const { authRequired, user, loginPrompt, promptDismissed } = useSession();
  const [left, setLeft] = useState<number | null>(null);
  const [warning, setWarning] = useState(false);
  const [refreshFailure, setRefreshFailure] = useState<string | null>(null);
  const warningRef = useRef(false);
  const show = (value: boolean) => {
    warningRef.current = value;
    setWarning(value);
  };
  const refreshing = useRef(false);
  const failedAt = useRef(0);
  const stayRef = useRef<HTMLButtonElement>(null);
  const titleId = useId();
  const signOut = useSignOut();
  // A dismissed sign-in dialog means the service refused this tab's token: nothing is left to renew.
  const active = authRequired === true && user !== null && !loginPrompt && !promptDismissed;

  const refresh = async () => {
    if (refreshing.current) return;
    refreshing.current = true;
    try {
      const { token } = (await unwrap(api.POST('/api/auth/refresh'))) as { token: string };
      session.setToken(token);
      void rereadUser();
      setRefreshFailure(null);
      show(false);
    } catch (err) {
      // A 401 has already opened the sign-in dialog (client.ts); anything else is said, and retried a little later.
      failedAt.current = Date.now();
      if (!(err instanceof ApiError && err.status === 401)) setRefreshFailure(err instanceof ApiError ? err.message : 'the service could not be reached');
    } finally {
      refreshing.current = false;
    }
  };

  useEffect(() => trackActivity(), []);

  useEffect(() => {
    if (!active) {
      show(false);
      return;
    }
    const tick = () => {
      const token = session.token();
      const expiresAt = token ? tokenExpiresAt(token) : null;
      if (expiresAt === null) return;
      const remaining = expiresAt - Date.now();
      setLeft(remaining);
      if (remaining <= 0) {
        show(false);
        session.expired();
        return;
      }
      if (refreshing.current || Date.now() - failedAt.current < RETRY_AFTER_FAILURE_MS) return;
      // Once warned, only the user's answer (a button) decides: a stray mouse move is not a "yes".
      if (warningRef.current) return;
      if (remaining < REFRESH_BEFORE_MS && idleFor() < ACTIVE_WITHIN_MS) void refresh();
      else if (remaining < WARN_BEFORE_MS) show(true);
    };
    tick();
    const timer = setInterval(tick, 1_000);
    return () => clearInterval(timer);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [active]);

  useEffect(() => {
    if (warning) stayRef.current?.focus();
  }, [warning]);

  if (!active || !warning || left === null) return null;
  return (
    <div className="session-warning" role="alertdialog" aria-labelledby={titleId}>
      <p id={titleId} className="session-warning-title">
        Your session expires in {clock(left)}
      </p>
      {refreshFailure && (
        <p role="alert" className="error">
          Could not renew the session: {refreshFailure}. Try again, or sign out and back in.
        </p>
      )}
      <div className="session-warning-actions">
        <button ref={stayRef} type="button" className="primary" onClick={() => void refresh()}>
          Stay signed in
        </button>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </div>
    </div>
  );
}
