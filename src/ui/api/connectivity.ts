import { useSyncExternalStore } from 'react';

/** Whether the last request reached the service: the shell shows a banner while it does not. */
let reachable = true;
const listeners = new Set<() => void>();

export function setReachable(value: boolean): void {
  if (value === reachable) return;
  reachable = value;
  for (const listener of listeners) listener();
}

export function useReachable(): boolean {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => reachable,
  );
}
