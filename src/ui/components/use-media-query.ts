import { useSyncExternalStore } from 'react';

/** The width below which screens switch to their phone layout (the stylesheet's breakpoint too). */
export const NARROW = '(max-width: 700px)';

/** Whether a media query matches now, following its changes (a rotated phone, a resized window). */
export function useMediaQuery(query: string): boolean {
  return useSyncExternalStore(
    (listener) => {
      const list = window.matchMedia(query);
      list.addEventListener('change', listener);
      return () => list.removeEventListener('change', listener);
    },
    () => window.matchMedia(query).matches,
  );
}
