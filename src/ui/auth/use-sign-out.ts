import { useQueryClient } from '@tanstack/react-query';
import { useCallback } from 'react';
import { session } from './session';

/** Signing out forgets the token and every cached answer, so the next user sees nothing of this one's data. */
export function useSignOut(): () => void {
  const queryClient = useQueryClient();
  return useCallback(() => {
    session.signOut();
    queryClient.clear();
  }, [queryClient]);
}
