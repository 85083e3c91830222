import { useId } from 'react';
import { href, useRoute } from '../router';
import { ApiError } from '../api/client';
import { useTopicConfig } from '../topics/api';
import { ConfigEditor } from '../topics/config-editor';
import { ReadOnlyTopic } from '../topics/read-only-topic';
import { SchemaEditor } from '../topics/schema-editor';
import { TopicList } from '../topics/topic-list';
import { TopicPicker } from '../topics/topic-picker';

/** Topic configurations and Avro schemas: the list, and the editors of the topic in the URL. */
export function TopicsScreen() {
  const topic = useRoute().params.get('topic') ?? '';
  const titleId = useId();
  // Reading the configuration needs the admin grant that saving does: refused, no editors are shown.
  const config = useTopicConfig(topic);
  const readOnly = config.error instanceof ApiError && config.error.status === 403;
  return (
    <>
      <h1>Topics</h1>
      <p className="hint">Open any topic by name to change its configuration and Avro schema; a topic not configured yet is configured by saving.</p>
      <TopicPicker key={topic} screen="topics" topic={topic} action="Open" />
      {topic !== '' && (
        <article className="topic-detail" aria-labelledby={titleId}>
          <h2 id={titleId} className="topic-title">
            {topic}
          </h2>
          <p className="topic-links">
            <a href={href('groups', { topic })}>Consumer groups</a> · <a href={href('replay', { topic })}>Replay</a> · <a href={href('messages', { topic })}>Messages</a>
          </p>
          {readOnly ? (
            <ReadOnlyTopic topic={topic} />
          ) : (
            <div className="topic-editors">
              <ConfigEditor key={`config-${topic}`} topic={topic} />
              <SchemaEditor key={`schema-${topic}`} topic={topic} />
            </div>
          )}
        </article>
      )}
      <TopicList current={topic} />
    </>
  );
}
