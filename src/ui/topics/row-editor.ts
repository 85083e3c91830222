import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useCallback, useState } from 'react';

/**
 * Save (PUT) and delete (DELETE, after a confirmation) of one per-topic row, a configuration or a schema:
 * both keep the row's cached query in step with the answer and have the topics list refetched. The mutations
 * live in the editor, above its keyed form, so "Saved." and errors survive the form's refill.
 */
export function useTopicRowEditor<Row, Body>(options: {
  rowKey: readonly unknown[];
  listKey: readonly unknown[];
  put: (body: Body) => Promise<Row>;
  remove: () => Promise<unknown>;
}) {
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const refreshList = () => {
    void queryClient.invalidateQueries({ queryKey: options.listKey, exact: true });
    // The topic list (pickers, overview) says which topics are configured or have a schema.
    void queryClient.invalidateQueries({ queryKey: ['topics'] });
  };
  const save = useMutation({
    mutationFn: options.put,
    onSuccess: (row) => {
      queryClient.setQueryData(options.rowKey, row);
      refreshList();
    },
  });
  const remove = useMutation({
    mutationFn: options.remove,
    onSuccess: () => {
      setConfirming(false);
      save.reset();
      queryClient.setQueryData(options.rowKey, null);
      refreshList();
    },
  });
  const { reset: resetRemove } = remove;
  // Stable, so the dialog is not closed and reopened on every render (Dialog's effect depends on it).
  const closeConfirm = useCallback(() => {
    setConfirming(false);
    resetRemove();
  }, [resetRemove]);
  return { save, remove, confirming, confirm: () => setConfirming(true), closeConfirm };
}
