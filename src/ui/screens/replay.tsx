import { useId } from 'react';
import { useIsAdmin } from '../auth/session';
import { ErrorMessage } from '../components/error-message';
import { formatAge } from '../format';
import { MessageLog } from '../replay/message-log';
import { ReplayForm } from '../replay/replay-form';
import { href, useRoute } from '../router';
import { useTopicConfig } from '../topics/api';
import { TopicPicker } from '../topics/topic-picker';

/** Replay from the archive log of the topic in the URL, and the log itself. Admin only (as the API). */
export function ReplayScreen() {
  const topic = useRoute().params.get('topic') ?? '';
  const isAdmin = useIsAdmin();
  return (
    <>
      <h1>Replay</h1>
      {!isAdmin ? (
        <p className="screen-notice">Replay and the message log are for administrators only. Ask an administrator to replay a topic for you.</p>
      ) : (
        <>
          {/* Keys differ between the siblings: equal ones make React lose the old picker and leave it on every screen. */}
          <TopicPicker key={`picker:${topic}`} screen="replay" topic={topic} action="Show" />
          {topic === '' ? <p className="hint">Choose a replayable topic to replay its acked messages or browse its message log.</p> : <TopicReplay key={`replay:${topic}`} topic={topic} />}
        </>
      )}
    </>
  );
}

function TopicReplay(props: { topic: string }) {
  const { topic } = props;
  const headingId = useId();
  const config = useTopicConfig(topic);
  const settings = href('topics', { topic });
  return (
    <>
      <section aria-labelledby={headingId}>
        <h2 id={headingId}>Replay {topic}</h2>
        <ErrorMessage error={config.error} />
        {config.isPending ? (
          <p>Loading…</p>
        ) : config.data?.replayable ? (
          <>
            <p>
              {config.data.replay_window_seconds === null
                ? 'No replay window: a replay may start anywhere in the log.'
                : `Replay window: the last ${formatAge(config.data.replay_window_seconds)} (replay_window_seconds ${config.data.replay_window_seconds}); a replay cannot start earlier.`}{' '}
              <a href={settings}>Change it in the topic's configuration</a>.
            </p>
            <ReplayForm config={config.data} />
          </>
        ) : (
          !config.error && (
            <p className="screen-notice">
              {topic} is not replayable: its acked messages are not archived, so there is nothing to replay. To make it replayable, turn on “Replayable” in{' '}
              <a href={settings}>its configuration</a> (optionally with a replay window); messages acked from then on can be replayed.
            </p>
          )
        )}
      </section>
      <MessageLog topic={topic} />
    </>
  );
}
