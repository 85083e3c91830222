import { useSyncExternalStore } from 'react';

/**
 * Screens live in the URL's fragment (`#/messages?topic=orders&status=failed`): the page itself is always
 * the one index.html, so reloads, bookmarks and a path prefix in front of the service all keep working
 * without the server knowing the UI's routes.
 */
export const SCREENS = ['overview', 'messages', 'enqueue', 'consume', 'topics', 'groups', 'replay', 'users', 'maintenance'] as const;
export type ScreenId = (typeof SCREENS)[number];

export interface Route {
  screen: ScreenId;
  params: URLSearchParams;
}

function parse(hash: string): Route {
  const [path, query = ''] = hash.replace(/^#\/?/, '').split('?', 2);
  const screen = (SCREENS as readonly string[]).includes(path) ? (path as ScreenId) : 'overview';
  return { screen, params: new URLSearchParams(query) };
}

let current = parse(window.location.hash);
const listeners = new Set<() => void>();
window.addEventListener('hashchange', () => {
  current = parse(window.location.hash);
  for (const listener of listeners) listener();
});

export function useRoute(): Route {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => current,
  );
}

export function href(screen: ScreenId, params?: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params ?? {})) if (value !== undefined && value !== '') query.set(key, value);
  const text = query.toString();
  return `#/${screen}${text ? `?${text}` : ''}`;
}

/** `replace`: correct the current entry (e.g. an offset past the end) rather than add one that Back returns to. */
export function navigate(screen: ScreenId, params?: Record<string, string | undefined>, options: { replace?: boolean } = {}): void {
  if (options.replace) window.location.replace(href(screen, params));
  else window.location.hash = href(screen, params);
}
