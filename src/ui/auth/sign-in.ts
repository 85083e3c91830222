import type { QueryClient } from '@tanstack/react-query';
import { api } from '../api/client';
import { session } from './session';
import { fetchAuthStatus } from './status';

/** A refused sign-in, worded for the form: the service's own message, and when a retry is allowed. */
export class SignInError extends Error {}

function sentence(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * Logs in, stores the token and reloads who the user is. The page and its filters stay as they were: the
 * screen's queries are refetched (reset instead when another user signed in, so nothing of the previous
 * user's data shows for a moment).
 */
export async function signIn(queryClient: QueryClient, username: string, password: string): Promise<void> {
  const { data, error, response } = await api.POST('/api/auth/login', { body: { username, password } });
  if (!response.ok) {
    const message = typeof error === 'object' && error !== null && 'error' in error ? String((error as { error: unknown }).error) : `HTTP ${response.status}`;
    if (response.status === 429) {
      const retryAfter = Number(response.headers.get('Retry-After'));
      throw new SignInError(`${sentence(message)}. Try again in ${Number.isFinite(retryAfter) && retryAfter > 0 ? `${retryAfter} s` : 'a minute'}.`);
    }
    throw new SignInError(`${sentence(message)}.`);
  }
  session.setToken((data as { token: string }).token);
  const status = await fetchAuthStatus();
  const previous = session.state().user;
  const user = status.user ?? null;
  session.update({ authRequired: status.auth_required, user, loginPrompt: user === null, promptDismissed: false });
  if (previous !== null && previous.id !== user?.id) await queryClient.resetQueries();
  else await queryClient.invalidateQueries();
}
