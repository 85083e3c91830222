import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import type { MessageStatus } from './types';

/** After any change to messages, every list and count on screen is stale. */
function useInvalidateMessages() {
  const queryClient = useQueryClient();
  return () => Promise.all([queryClient.invalidateQueries({ queryKey: ['messages'] }), queryClient.invalidateQueries({ queryKey: ['stats'] }), queryClient.invalidateQueries({ queryKey: ['topics'] })]);
}

export interface RequeueResult {
  requeued: string[];
  failed: Array<{ id: string; error: unknown }>;
}

/** Requeues dead letters one call each (the API has no batch requeue); a refusal of one does not stop the rest. */
export function useRequeue() {
  const invalidate = useInvalidateMessages();
  return useMutation({
    mutationFn: async (ids: string[]): Promise<RequeueResult> => {
      const outcomes = await Promise.allSettled(ids.map((id) => unwrap(api.POST('/api/messages/{id}/requeue', { params: { path: { id } } }))));
      const result: RequeueResult = { requeued: [], failed: [] };
      outcomes.forEach((outcome, i) => {
        if (outcome.status === 'fulfilled') result.requeued.push(ids[i]);
        else result.failed.push({ id: ids[i], error: outcome.reason });
      });
      return result;
    },
    onSettled: invalidate,
  });
}

/** A browser reads these as steps of the path (written as %2E too) and drops them, so they never reach the service. */
const PATH_STEP_KEYS = new Set(['.', '..']);

export function useDeleteByKey() {
  const invalidate = useInvalidateMessages();
  return useMutation({
    mutationFn: async (vars: { topic: string; key: string }) => {
      if (PATH_STEP_KEYS.has(vars.key)) {
        throw new Error(`A browser cannot send the key "${vars.key}" in a URL path: it reads it as a step of the path. Delete these messages with curl --path-as-is.`);
      }
      return unwrap(api.DELETE('/api/topics/{topic}/messages/by-key/{key}', { params: { path: { topic: vars.topic, key: vars.key } } }));
    },
    onSuccess: invalidate,
  });
}

export function usePurge() {
  const invalidate = useInvalidateMessages();
  return useMutation({
    mutationFn: (vars: { topic: string; statuses: MessageStatus[] }) => unwrap(api.POST('/api/topics/{topic}/purge', { params: { path: { topic: vars.topic } }, body: { statuses: vars.statuses } })),
    onSuccess: invalidate,
  });
}
