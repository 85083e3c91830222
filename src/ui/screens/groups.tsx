import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useCallback, useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import { ConfirmDialog } from '../components/confirm-dialog';
import { ErrorMessage } from '../components/error-message';
import { useGroupDepths, useGroupManagers, useGroups, groupKeys } from '../groups/api';
import { GroupTable } from '../groups/group-table';
import { RegisterForm } from '../groups/register-form';
import { href, useRoute } from '../router';
import { TopicPicker } from '../topics/topic-picker';

/** The consumer groups of the topic in the URL: their depths, registering and unregistering. */
export function GroupsScreen() {
  const topic = useRoute().params.get('topic') ?? '';
  return (
    <>
      <h1>Consumer groups</h1>
      {/* Keys differ between the siblings: equal ones make React lose the old picker and leave it on every screen. */}
      <TopicPicker key={`picker:${topic}`} screen="groups" topic={topic} action="Show groups" />
      {topic === '' ? <p className="hint">Choose a topic to see and change its consumer groups.</p> : <TopicGroups key={`groups:${topic}`} topic={topic} />}
    </>
  );
}

function TopicGroups(props: { topic: string }) {
  const { topic } = props;
  const headingId = useId();
  const queryClient = useQueryClient();
  const groups = useGroups(topic);
  const names = groups.data?.items ?? [];
  const { depths, error: statsError } = useGroupDepths(topic);
  const managers = useGroupManagers(topic, names);
  const [unregistering, setUnregistering] = useState<string | null>(null);

  const unregister = useMutation({
    mutationFn: (group: string) => unwrap(api.DELETE('/api/topics/{topic}/consumer-groups/{group}', { params: { path: { topic, group } } })),
    onSuccess: () => {
      setUnregistering(null);
      void queryClient.invalidateQueries({ queryKey: groupKeys.list(topic), exact: true });
      void queryClient.invalidateQueries({ queryKey: ['stats'] });
      void queryClient.invalidateQueries({ queryKey: ['topics'] });
    },
  });
  const { reset: resetUnregister } = unregister;
  const closeConfirm = useCallback(() => {
    setUnregistering(null);
    resetUnregister();
  }, [resetUnregister]);

  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>Groups of {topic}</h2>
      <p className="hint">
        Every registered group gets every message of the topic and works through it on its own. A topic without groups is a plain queue. Settings: <a href={href('topics', { topic })}>topic {topic}</a>.
      </p>
      <ErrorMessage error={groups.error} />
      <ErrorMessage error={statsError} />
      {groups.isPending ? (
        <p>Loading…</p>
      ) : groups.data && names.length === 0 ? (
        <p>No consumer group is registered on {topic}.</p>
      ) : (
        groups.data && <GroupTable groups={names} depths={depths} managers={managers} onUnregister={setUnregistering} />
      )}
      <h3>Register a group</h3>
      <RegisterForm topic={topic} />
      {unregistering !== null && (
        <ConfirmDialog
          title="Unregister the group"
          message={`Unregister ${unregistering} from ${topic}? Its deliveries are dropped, and messages no other group still needs are completed.`}
          actionLabel="Unregister"
          pending={unregister.isPending}
          error={unregister.error}
          onConfirm={() => unregister.mutate(unregistering)}
          onClose={closeConfirm}
        />
      )}
    </section>
  );
}
