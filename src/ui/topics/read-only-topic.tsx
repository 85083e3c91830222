import { useQuery } from '@tanstack/react-query';
import { fetchAllTopics, topicsKey } from '../api/topics';
import { formatNumber } from '../format';
import { describeManager } from './api';

/**
 * What a user without an admin grant on the topic sees instead of the editors: no form they could fill in
 * only to be refused, but what they may read of the topic (GET /api/topics, with a read grant) and who can
 * change it.
 */
export function ReadOnlyTopic(props: { topic: string }) {
  const topics = useQuery({ queryKey: topicsKey, queryFn: fetchAllTopics });
  const summary = topics.data?.find((t) => t.topic === props.topic);
  const manager = summary?.managed_by.config ?? summary?.managed_by.schema ?? null;
  return (
    <section className="topic-panel read-only-topic" aria-label="Configuration and schema (read-only)">
      <p className="screen-notice">
        Read-only: changing the configuration or schema of {props.topic} needs an admin grant on it. Ask an administrator for one.
      </p>
      {summary && (
        <dl className="facts">
          <dt>Configuration</dt>
          <dd>{summary.configured ? 'configured (its settings are shown to holders of an admin grant)' : 'none: the server defaults apply'}</dd>
          <dt>Avro schema</dt>
          <dd>{summary.schema_version === null ? 'none: payloads are not validated' : `version ${summary.schema_version}`}</dd>
          <dt>Pending</dt>
          <dd>{formatNumber(summary.depth.pending)}</dd>
          {manager && (
            <>
              <dt>Managed by</dt>
              <dd>{describeManager(manager)}</dd>
            </>
          )}
        </dl>
      )}
    </section>
  );
}
